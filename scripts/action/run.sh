#!/usr/bin/env bash
# Runs astra for the GitHub Action (action.yml). astra replaces this shell
# (exec): no shell holding the step's environment (its secrets) stays
# around while tools run, so astra itself appends its exit status to
# $GITHUB_OUTPUT as the step output exit_status.
#
# ASTRA_COMMAND ("run-due", "ledger verify") and ASTRA_ARGS ("--limit 20
# --shard 1/4") are split into words at whitespace, never glob-expanded: an
# argument such as 'nightly-*' reaches astra as written. There is no
# quoting; one argument cannot contain whitespace.
set -euo pipefail

read -r -a command <<<"${ASTRA_COMMAND:-}"
[ "${#command[@]}" -gt 0 ] || {
	echo "::error title=astra::the action's command input is empty" >&2
	exit 2
}
# -d '' reads every line of a multi-line args input; read then returns 1 at
# the end of its input, which is expected.
args=()
read -r -d '' -a args <<<"${ASTRA_ARGS:-}" || true
if [ "${ASTRA_DRY_RUN_INPUT:-false}" = true ]; then
	args=(--dry-run ${args[@]+"${args[@]}"})
fi

export ASTRA_EXIT_STATUS_OUTPUT="${GITHUB_OUTPUT:-}"
exec astra "${command[@]}" ${args[@]+"${args[@]}"}
