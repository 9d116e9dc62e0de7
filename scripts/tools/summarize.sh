#!/bin/sh
# Example tier-0 tool: summarizes this month's ledger with astra itself.
set -eu
days=$(printf '%s' "${ASTRA_PAYLOAD:-{\}}" | sed -n 's/.*"days":\([0-9]*\).*/\1/p')
echo "# Ledger summary (last ${days:-1} day(s))"
if [ -n "${ASTRA_PREVIOUS_OUTPUT:-}" ]; then
	echo "previous step said: $ASTRA_PREVIOUS_OUTPUT"
fi
ls var/schedules 2>/dev/null | sed 's/^/- ledger file: /' || echo "- no ledger yet"
