#!/bin/sh
# An example external tool: replace the echo with the real call (a chat
# webhook, an email). It runs only after an approval; $ASTRA_DRY_RUN=1
# asks it to say what it would send.
set -eu
if [ "${ASTRA_DRY_RUN:-0}" = 1 ]; then
	echo "dry run: would announce $ASTRA_PAYLOAD"
	exit 0
fi
echo "announced from run $ASTRA_RUN_ID: $ASTRA_PAYLOAD"
