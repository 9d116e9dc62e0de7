#!/bin/sh
# Example ZORA CORE task: prints the agent task it creates.
set -eu
task=${1:?usage: zora_task.sh <task_type>}
mode=create
[ "${ASTRA_DRY_RUN:-0}" = 1 ] && mode="dry run: would create"
echo "$mode agent task $task for schedule ${ASTRA_SCHEDULE_ID:-?} payload ${ASTRA_PAYLOAD:-{\}}"
echo "::astra-usage {\"tool_calls\":1}"
