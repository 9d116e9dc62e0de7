#!/bin/sh
# Example tier-1 tool: records desires or goals. Prints the record it would
# keep; persisting it is left to the agent that consumes the output.
set -eu
kind=${1:?usage: record.sh desires|goals}
if [ "${ASTRA_DRY_RUN:-0}" = 1 ]; then
	echo "dry run: would record $kind from ${ASTRA_PAYLOAD:-{\}}"
	exit 0
fi
echo "recorded $kind: ${ASTRA_PAYLOAD:-{\}}"
