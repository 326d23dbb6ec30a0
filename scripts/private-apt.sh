#!/usr/bin/env bash
# Sourced by the scripts that take programs from Debian's unstable suite into a cache folder
# without installing anything system-wide (fetch-llama-server.sh, fetch-wine.sh).
#
# private_apt_init DIR SUITE: a private apt configuration under DIR (own sources list, lists,
# cache and status, so the system's apt state is never touched), its lists updated. It sets
# APT, the apt-get command line to use with it.
# need_patchelf: installs patchelf with apt-get when it is missing (as root; else it says how).
# download_unpack ROOT NAME...: downloads each package once and unpacks it into ROOT.
# lib_dirs ROOT: every folder under ROOT that holds shared libraries (ggml backends aside).
# resolve_libs ROOT ROUNDS: fetches the packages of the libraries that missing_libs (the caller's:
# one library name a line) names, by the usual naming of Debian library packages, until none is
# missing, at most ROUNDS times; then dies naming what is still missing.
# The caller defines log and die.

PRIVATE_APT_MIRROR="${PRIVATE_APT_MIRROR:-http://deb.debian.org/debian}"
PRIVATE_APT_KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"

private_apt_init() {
	local dir="$1" suite="$2"
	[[ -r "$PRIVATE_APT_KEYRING" ]] || die "missing $PRIVATE_APT_KEYRING (apt-get install debian-archive-keyring)"
	APTDIR="$dir"
	mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/etc/preferences.d" \
		"$APTDIR/etc/apt.conf.d" "$APTDIR/debs"
	: >"$APTDIR/status"
	echo "deb [signed-by=$PRIVATE_APT_KEYRING] $PRIVATE_APT_MIRROR $suite main" >"$APTDIR/sources.list"
	cat >"$APTDIR/apt.conf" <<CONF
Dir::State "$APTDIR";
Dir::State::Lists "$APTDIR/lists";
Dir::State::status "$APTDIR/status";
Dir::Cache "$APTDIR/cache";
Dir::Etc::SourceList "$APTDIR/sources.list";
Dir::Etc::SourceParts "$APTDIR/none";
Dir::Etc::Parts "$APTDIR/etc/apt.conf.d";
Dir::Etc::Preferences "$APTDIR/etc/preferences";
Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d";
Dir::Etc::Trusted "$PRIVATE_APT_KEYRING";
Dir::Etc::TrustedParts "$APTDIR/none";
APT::Architecture "amd64";
APT::Architectures "amd64";
Acquire::Languages "none";
// The mirror reachable here may serve a frozen copy of the suite; the
// signature is still checked against the Debian archive keyring.
Acquire::Check-Valid-Until "false";
APT::Sandbox::User "root";
CONF
	APT=(env APT_CONFIG="$APTDIR/apt.conf" apt-get -q -o "Debug::NoLocking=1")
	log "updating the private package lists for $suite"
	"${APT[@]}" update >&2 || die "apt-get update for $suite failed"
}

need_patchelf() {
	command -v patchelf >/dev/null 2>&1 && return
	[[ "$(id -u)" -eq 0 ]] || die "patchelf is missing and we are not root: install it with apt-get install patchelf"
	log "installing patchelf"
	apt-get install -y patchelf >&2 || { apt-get update >&2 && apt-get install -y patchelf >&2; }
}

declare -A PRIVATE_APT_FETCHED=()

download_unpack() {
	local root="$1" p deb
	shift
	for p in "$@"; do
		[[ -n "${PRIVATE_APT_FETCHED[$p]:-}" ]] && continue
		log "downloading $p"
		(cd "$APTDIR/debs" && "${APT[@]}" download "$p" >&2) || die "apt-get download $p failed"
		PRIVATE_APT_FETCHED[$p]=1
	done
	for deb in "$APTDIR"/debs/*.deb; do
		[[ -e "$deb.unpacked" ]] && continue
		dpkg -x "$deb" "$root"
		: >"$deb.unpacked"
	done
}

lib_dirs() {
	find "$1" \( -name 'lib*.so' -o -name 'lib*.so.*' \) \( -type f -o -type l \) \
		-not -path '*/share/*' -not -path '*/backends[0-9]*/*' -printf '%h\n' | sort -u
}

# debian_lib_package LIB: the package names a library usually ships in (libfoo.so.1 -> libfoo1,
# libfoo-2.so.3 -> libfoo-2-3, ICU by its version alone), one a line, t64 variants after.
debian_lib_package() {
	local lib="$1" base ver cand
	base="${lib%%.so*}"
	ver="${lib#*.so.}"
	ver="${ver%%.*}"
	if [[ "$base" =~ [0-9]$ ]]; then cand="$base-$ver"; else cand="$base$ver"; fi
	cand="$(echo "$cand" | tr '[:upper:]_' '[:lower:]-')"
	[[ "$base" == libicu* ]] && cand="libicu$ver"
	printf '%s\n%s\n' "$cand" "${cand}t64"
}

resolve_libs() {
	local root="$1" rounds="$2" round lib c extra missing
	for ((round = 1; round <= rounds; round++)); do
		mapfile -t missing < <(missing_libs)
		[[ ${#missing[@]} -eq 0 ]] && return 0
		log "round $round: missing ${missing[*]}"
		extra=()
		for lib in "${missing[@]}"; do
			while read -r c; do
				if "${APT[@]}" download --print-uris "$c" >/dev/null 2>&1; then
					extra+=("$c")
					break
				fi
			done < <(debian_lib_package "$lib")
		done
		[[ ${#extra[@]} -gt 0 ]] || die "cannot find packages for: ${missing[*]}"
		download_unpack "$root" "${extra[@]}"
	done
	mapfile -t missing < <(missing_libs)
	[[ ${#missing[@]} -eq 0 ]] || die "still missing after resolution: ${missing[*]}"
}
