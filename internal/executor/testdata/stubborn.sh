#!/bin/sh
# A tool that ignores SIGTERM and prints usage lines: $1 of them (0: until
# it is killed), each $2 (the JSON of a usage line), $3 seconds apart.
trap '' TERM
i=0
while [ "$1" -eq 0 ] || [ "$i" -lt "$1" ]; do
	echo "::astra-usage $2"
	i=$((i+1))
	[ -n "$3" ] && sleep "$3"
done
echo done
