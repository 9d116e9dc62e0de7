#!/usr/bin/env bash
# Installs astra for the GitHub Action (action.yml): the prebuilt release
# archive for this runner, verified against the release's checksums.txt and
# kept in the runner's tool cache, so a cron job starts in seconds and every
# tick runs the same binary.
#
# Environment:
#   ASTRA_VERSION           the action's `version` input; empty means the ref
#                           the action was pinned to (ASTRA_ACTION_REF)
#   ASTRA_ACTION_REF        ${{ github.action_ref }}
#   ASTRA_RELEASE_BASE_URL  where releases are downloaded from (tests)
#   RUNNER_OS RUNNER_ARCH RUNNER_TOOL_CACHE RUNNER_TEMP GITHUB_PATH GITHUB_OUTPUT
#                           set by the runner
#
# A version that is not a release (a commit SHA, a branch) cannot be
# downloaded: the script writes source-ref=<ref> to GITHUB_OUTPUT and the
# action builds that ref with `go install` instead.
#
# Written for bash 3.2 too (macOS runners), and for Git Bash on Windows.
set -euo pipefail

base_url="${ASTRA_RELEASE_BASE_URL:-https://github.com/astra-gitops/astra/releases/download}"

fail() {
	echo "::error title=astra install::$*" >&2
	exit 1
}

ref="${ASTRA_VERSION:-${ASTRA_ACTION_REF:-}}"
if [[ "$ref" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then ref="v$ref"; fi
if [ -z "$ref" ] && [[ "${GITHUB_ACTION_PATH:-}" == */_actions/*/*/* ]]; then
	# github.action_ref is not always set for composite actions; the runner
	# keeps the action under _actions/<owner>/<repo>/<ref>.
	ref="$(basename "$GITHUB_ACTION_PATH")"
fi
[ -n "$ref" ] || fail "no astra version: pin the action to a release (uses: astra-gitops/astra@v1.2.3) or set its version input"
[[ "$ref" =~ ^[A-Za-z0-9][A-Za-z0-9._/+-]*$ ]] || fail "astra version \"$ref\" is not a version, tag, branch or commit"

if ! [[ "$ref" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]]; then
	if [[ "$ref" =~ ^[0-9a-f]{40}$ ]]; then
		echo "::notice title=astra install::$ref is a commit: building astra from source"
	else
		echo "::warning title=astra install::\"$ref\" is not a release version: building astra from source on every run, and it may change between runs. Pin a release: uses: astra-gitops/astra@v1.2.3"
	fi
	echo "source-ref=$ref" >>"${GITHUB_OUTPUT:-/dev/null}"
	exit 0
fi

case "${RUNNER_OS:-}" in
Linux) os=linux ;;
macOS) os=darwin ;;
Windows) os=windows ;;
*) fail "unsupported runner OS \"${RUNNER_OS:-}\" (Linux, macOS or Windows)" ;;
esac
case "${RUNNER_ARCH:-}" in
X64) arch=amd64 ;;
ARM64) arch=arm64 ;;
*) fail "unsupported runner architecture \"${RUNNER_ARCH:-}\" (X64 or ARM64)" ;;
esac
ext=tar.gz exe=astra
if [ "$os" = windows ]; then ext=zip exe=astra.exe; fi

ver="${ref#v}"
asset="astra_${ver}_${os}_${arch}.${ext}"
: "${RUNNER_TOOL_CACHE:?RUNNER_TOOL_CACHE is not set}"
# The layout of @actions/tool-cache: <tool>/<version>/<arch> and a marker
# written only once the directory is complete.
dir="$RUNNER_TOOL_CACHE/astra/$ver/$(echo "$RUNNER_ARCH" | tr "[:upper:]" "[:lower:]")"
marker="$dir.complete"

add_path() {
	local p="$1"
	if [ "$os" = windows ] && command -v cygpath >/dev/null; then p="$(cygpath -w "$p")"; fi
	echo "$p" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
}

if [ -f "$marker" ] && [ -x "$dir/$exe" ]; then
	echo "astra $ref ($os/$arch) from the tool cache"
	add_path "$dir"
	exit 0
fi

sha256() {
	if command -v sha256sum >/dev/null; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

tmp="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/astra-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# download URL FILE: a missing file (404) is named as such; transient
# errors (timeouts, 429, 5xx) are retried.
download() {
	local code
	code="$(curl --silent --show-error --location --fail --retry 4 --retry-connrefused \
		--connect-timeout 20 --max-time 300 --output "$2" --write-out '%{http_code}' "$1" 2>"$tmp/curl.err")" && return 0
	if [ "$code" = 404 ]; then
		return 44
	fi
	fail "downloading $1 failed: $(cat "$tmp/curl.err")"
}

url="$base_url/$ref"
download "$url/checksums.txt" "$tmp/checksums.txt" ||
	fail "astra $ref has no checksums.txt at $url: is $ref a published astra release?"
download "$url/$asset" "$tmp/$asset" ||
	fail "no release asset $asset for $os/$arch in astra $ref ($url/$asset)"

want="$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/checksums.txt")"
[ -n "$want" ] || fail "checksums.txt of astra $ref does not list $asset: refusing to install it"
got="$(sha256 "$tmp/$asset")"
[ "$got" = "$want" ] || fail "checksum mismatch for $asset: got sha256 $got, checksums.txt says $want: refusing to install it"

mkdir -p "$tmp/x"
if [ "$ext" = zip ]; then
	unzip -q "$tmp/$asset" "$exe" -d "$tmp/x" || fail "$asset holds no $exe"
else
	tar -xzf "$tmp/$asset" -C "$tmp/x" "$exe" || fail "$asset holds no $exe"
fi
chmod +x "$tmp/x/$exe"

rm -rf "$dir" "$marker"
mkdir -p "$dir"
mv "$tmp/x/$exe" "$dir/$exe"
touch "$marker"
add_path "$dir"
echo "astra $ref ($os/$arch) installed from $asset, sha256 $got"
