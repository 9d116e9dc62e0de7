#!/bin/sh
# Starts a child that sleeps, records its own pid and the child's in
# $1/pids, then sleeps itself.
sleep 300 &
echo "$$ $!" > "$1/pids.tmp" && mv "$1/pids.tmp" "$1/pids"
sleep 300
