#!/usr/bin/env bash
# Checks the packaging files without building anything: shell scripts (bash -n, shellcheck),
# the desktop entry, the AppStream metadata, the macOS Info.plist and Windows manifest, the
# NSIS script (compiled against a dummy program), the workflows (actionlint) and .goreleaser.yaml.
# A check whose tool is missing is reported as skipped; STRICT=1 makes that a failure.
#
# Usage: packaging/lint.sh
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="lint"
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

failed=0
skipped=0
check() { # check NAME CMD...: runs CMD, reports the result
	local name="$1"
	shift
	if "$@" >/tmp/llamatray-lint.$$ 2>&1; then
		echo "ok    $name"
	else
		echo "FAIL  $name"
		sed 's/^/      /' /tmp/llamatray-lint.$$
		failed=1
	fi
	rm -f /tmp/llamatray-lint.$$
}
skip() {
	echo "skip  $1 ($2 is not installed)"
	skipped=1
}
have() { command -v "$1" >/dev/null 2>&1; }

mapfile -t scripts < <(find "$PACKAGING_DIR" -name '*.sh' | sort)
for s in "${scripts[@]}"; do
	check "bash -n ${s#"$REPO_ROOT"/}" bash -n "$s"
done
if have shellcheck; then
	check "shellcheck" shellcheck -x "${scripts[@]}"
else
	skip shellcheck shellcheck
fi

if have desktop-file-validate; then
	check "desktop entry" desktop-file-validate "$PACKAGING_DIR/linux/$APP_ID.desktop"
else
	skip "desktop entry" desktop-file-validate
fi
if have appstreamcli; then
	check "AppStream metainfo" appstreamcli validate --no-net "$PACKAGING_DIR/linux/$APP_ID.metainfo.xml"
else
	skip "AppStream metainfo" appstreamcli
fi
if have python3; then
	check "Info.plist" python3 -c 'import plistlib, sys
d = plistlib.load(open(sys.argv[1], "rb"))
assert d["CFBundleIdentifier"] == "io.github.llamatray" and d["LSUIElement"] is True, d' \
		"$PACKAGING_DIR/macos/Info.plist"
	check "Windows manifest" python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' \
		"$PACKAGING_DIR/windows/llamatray.exe.manifest"
else
	skip "Info.plist and manifest" python3
fi
if have makensis; then
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
	printf 'MZ' >"$work/llamatray.exe"
	make_ico "$(app_icon "$work")" "$work/llamatray.ico"
	check "NSIS script" makensis -V2 -WX -DVERSION=0.0.0 -DNUMVER=0.0.0.0 "-DEXE=$work/llamatray.exe" \
		"-DICON=$work/llamatray.ico" "-DOUTFILE=$work/Llamatray-Setup-0.0.0.exe" "$PACKAGING_DIR/windows/llamatray.nsi"
else
	skip "NSIS script" makensis
fi
# The pinned actionlint of `make lint-workflows`, else one on PATH.
actionlint="${LLAMATRAY_CACHE:-$HOME/.cache/llamatray-dev}/tools/actionlint-v1.7.12/actionlint"
[[ -x "$actionlint" ]] || actionlint="$(command -v actionlint || true)"
if [[ -n "$actionlint" ]]; then
	check "workflows" "$actionlint" "$REPO_ROOT"/.github/workflows/*.yml
else
	skip "workflows" "actionlint (make lint-workflows installs it)"
fi
if have python3; then
	check "release configuration is YAML" python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$REPO_ROOT/.goreleaser.yaml"
fi

if [[ "${STRICT:-0}" == 1 && $skipped == 1 ]]; then
	failed=1
fi
exit $failed
