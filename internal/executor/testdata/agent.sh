#!/bin/sh
# A fake LLM agent: reports usage in a loop and would run for a long time.
# $1 is a marker file it writes only if it is never stopped.
i=0
while [ $i -lt 200 ]; do
	echo "thinking step $i"
	echo "::astra-usage {\"tokens\":${TOKENS:-1000},\"cost_usd\":${COST:-0},\"tool_calls\":${CALLS:-0}}"
	sleep 0.05
	i=$((i+1))
done
touch "$1"
