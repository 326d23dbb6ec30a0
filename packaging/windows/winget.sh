#!/usr/bin/env bash
# Writes the winget manifests (schema 1.10.0) for the Windows setup: the version, installer and
# default-locale files under OUTDIR/manifests/l/Llamatray/Llamatray/VERSION/, the layout of
# microsoft/winget-pkgs. GoReleaser's own winget support only describes zip or portable builds;
# this describes the NSIS setup (per-user, silent with /S, its Add/Remove Programs entry), which is
# what a user should get from `winget install Llamatray.Llamatray`.
#
# Usage: packaging/windows/winget.sh VERSION SETUP.exe URL OUTDIR
#   URL     where the release publishes SETUP.exe
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
SCRIPT_NAME="winget"
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

[[ $# -eq 4 ]] || die "usage: $0 VERSION SETUP.exe URL OUTDIR"
VERSION="$(plain_version "$1")"
SETUP="$2"
URL="$3"
[[ -f "$SETUP" ]] || die "$SETUP does not exist"
[[ "$URL" == https://* ]] || die "URL must be https: $URL"
need sha256sum
ID="Llamatray.Llamatray"
SCHEMA="1.10.0"
DIR="$4/manifests/l/Llamatray/Llamatray/$VERSION"
mkdir -p "$DIR"
SHA="$(sha256sum "$SETUP" | cut -d' ' -f1 | tr a-f A-F)"
header() { # header TYPE
	echo "# yaml-language-server: \$schema=https://aka.ms/winget-manifest.$1.$SCHEMA.schema.json"
	echo "# Written by packaging/windows/winget.sh"
}

{
	header version
	cat <<YAML
PackageIdentifier: $ID
PackageVersion: $VERSION
DefaultLocale: en-US
ManifestType: version
ManifestVersion: $SCHEMA
YAML
} >"$DIR/$ID.yaml"

{
	header installer
	cat <<YAML
PackageIdentifier: $ID
PackageVersion: $VERSION
InstallerType: nullsoft
Scope: user
InstallModes:
  - interactive
  - silent
  - silentWithProgress
InstallerSwitches:
  Silent: /S
  SilentWithProgress: /S
UpgradeBehavior: install
ProductCode: $APP_NAME
AppsAndFeaturesEntries:
  - DisplayName: $APP_NAME
    Publisher: $APP_PUBLISHER
    DisplayVersion: $VERSION
    ProductCode: $APP_NAME
Installers:
  - Architecture: x64
    InstallerUrl: $URL
    InstallerSha256: $SHA
ManifestType: installer
ManifestVersion: $SCHEMA
YAML
} >"$DIR/$ID.installer.yaml"

{
	header defaultLocale
	cat <<YAML
PackageIdentifier: $ID
PackageVersion: $VERSION
PackageLocale: en-US
Publisher: $APP_PUBLISHER
PublisherUrl: $APP_HOMEPAGE
PublisherSupportUrl: $APP_HOMEPAGE/issues
PackageName: $APP_NAME
PackageUrl: $APP_HOMEPAGE
License: MIT
LicenseUrl: $APP_HOMEPAGE/blob/main/LICENSE
ShortDescription: $APP_SUMMARY
Description: >-
  Llamatray finds the GGUF language models on this computer and serves them through one
  OpenAI-compatible HTTP endpoint, starting llama.cpp's llama-server for a model on its first request.
Moniker: llamatray
Tags:
  - llm
  - gguf
  - llama-cpp
  - openai-api
ReleaseNotesUrl: $APP_HOMEPAGE/releases/tag/v$VERSION
ManifestType: defaultLocale
ManifestVersion: $SCHEMA
YAML
} >"$DIR/$ID.locale.en-US.yaml"
log "wrote $DIR"
echo "$DIR"
