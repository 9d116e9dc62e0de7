#!/bin/sh
# Example tier-2 tool: a production deploy. Needs VERCEL_TOKEN; honours
# dry runs; --rollback is its compensating action (astra rollback <run>).
set -eu
action=deploy
[ "${1:-}" = --rollback ] && action=rollback
if [ "${ASTRA_DRY_RUN:-0}" = 1 ]; then
	echo "dry run: would $action ${ASTRA_PAYLOAD:-{\}}"
	exit 0
fi
if [ -z "${VERCEL_TOKEN:-}" ]; then
	echo "VERCEL_TOKEN is not set: add it as a repository secret and pass it to the astra step" >&2
	exit 1
fi
command -v vercel >/dev/null 2>&1 || { echo "the vercel CLI is not installed on this runner" >&2; exit 1; }
if [ "$action" = rollback ]; then
	exec vercel rollback --yes --token "$VERCEL_TOKEN"
fi
exec vercel deploy --prod --yes --token "$VERCEL_TOKEN"
