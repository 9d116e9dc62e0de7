#!/bin/sh
# Example tier-1 tool: turns the top desire into a goal plan. A real agent
# would call a model here; it reports what it spends with ::astra-usage lines.
set -eu
source=$(printf '%s' "${ASTRA_PAYLOAD:-{\}}" | sed -n 's/.*"goal_source":"\([^"]*\)".*/\1/p')
echo "goal source: ${source:-top_desire}"
if [ "${ASTRA_DRY_RUN:-0}" = 1 ]; then
	echo "dry run: would plan and execute one goal"
	exit 0
fi
echo "::astra-usage {\"tokens\":1800,\"cost_usd\":0.012,\"tool_calls\":1}"
echo "planned goal for run ${ASTRA_RUN_ID:-?}"
