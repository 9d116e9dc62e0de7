#!/bin/sh
# Starts a child that sleeps and a daemon in a session of its own, records
# its own pid and theirs in $1/pids, then sleeps itself.
sleep 300 &
child=$!
setsid sleep 300 </dev/null >/dev/null 2>&1 &
echo "$$ $child $!" > "$1/pids.tmp" && mv "$1/pids.tmp" "$1/pids"
sleep 300
