#!/bin/sh
# Installs the Debian packages ferry needs to build, test, demo and bench,
# but only those that are missing. Called by `make check` and `make demo`.
set -eu
pkgs="build-essential pkg-config liblz4-dev zlib1g-dev libdeflate-dev libsodium-dev
libsqlite3-dev libarchive-dev libcurl4-openssl-dev libmicrohttpd-dev
libcmocka-dev libjansson-dev perl attr acl lz4 pigz gzip xz-utils bzip2
cpio zip python3 sqlite3 bsdextrautils strace util-linux curl openssl
openssh-client openssh-server"
[ "${1:-}" = "--bench" ] && pkgs="$pkgs restic borgbackup hyperfine"
[ "${1:-}" = "--fuzz" ] && pkgs="$pkgs clang libclang-rt-14-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >&2
