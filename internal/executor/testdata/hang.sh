#!/bin/sh
# Forks a child that sleeps, records its pid in $1, then hangs itself.
sleep 300 &
echo $! > "$1"
echo "child started"
sleep 300
