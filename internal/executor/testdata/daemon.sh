#!/bin/sh
# Starts a daemon in a session of its own that keeps the tool's stdout
# open, records its pid in $1, and exits at once.
setsid sleep 20 &
echo $! > "$1"
echo "daemon started"
