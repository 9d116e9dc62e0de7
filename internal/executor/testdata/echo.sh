#!/bin/sh
# Prints what a tool receives: stdin, env, and a secret it was handed.
echo "stdin: $(cat)"
echo "payload env: $ASTRA_PAYLOAD"
echo "dry: $ASTRA_DRY_RUN run: $ASTRA_RUN_ID schedule: $ASTRA_SCHEDULE_ID slot: ${ASTRA_SLOT:-none} trace: $TRACEPARENT"
echo "from parent: ${PARENT_SECRET:-none}"
echo "from tool env: ${TOOL_SECRET:-none}"
echo "previous: ${ASTRA_PREVIOUS_OUTPUT:-none}"
echo "to stderr" >&2
