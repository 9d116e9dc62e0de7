#!/bin/sh
# An example tool. astra hands it the payload on stdin and in
# $ASTRA_PAYLOAD; $ASTRA_DRY_RUN=1 asks it to change nothing.
set -eu
if [ "${ASTRA_DRY_RUN:-0}" = 1 ]; then
	echo "dry run: would greet with $ASTRA_PAYLOAD"
	exit 0
fi
echo "greeting from run $ASTRA_RUN_ID: $ASTRA_PAYLOAD"
