#!/bin/sh
# Issue 11, item 6: make install puts what a Debian package would hold
# under DESTDIR/PREFIX (a stripped binary, the man pages, bash completion,
# the systemd units), make uninstall removes exactly that and leaves
# DESTDIR empty; the completion completes verbs, options and names.
. "$(dirname "$0")/lib.sh"

command -v bash >/dev/null || { ok "# SKIP no bash"; done_testing; exit; }
BUILD_DIR=$(cd "$(dirname "$FERRY")" && pwd)
D="$T/destdir"
mkdir "$D"
# a make of its own: not the jobserver of a make check that runs this test
mk() { env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$FERRY_SRC" BUILD="$BUILD_DIR" "$@"; }
run mk install DESTDIR="$D" PREFIX=/usr
is "$rc" 0 "make install DESTDIR PREFIX=/usr"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"
for f in usr/bin/ferry usr/share/man/man8/ferry.8 usr/share/man/man5/ferry-stream.5 usr/share/man/man7/ferry-json.7 \
	usr/share/bash-completion/completions/ferry usr/lib/systemd/system/ferry-sync@.timer; do
	[ -f "$D/$f" ] && ok "installs $f" || not_ok "no $f"
done
if command -v readelf >/dev/null; then
	run readelf -S "$D/usr/bin/ferry"
	if grep -q '\.symtab' "$T/out"; then not_ok "the binary is stripped"; else ok "the binary is stripped"; fi
else
	ok "# SKIP no readelf"
fi
is "$("$D/usr/bin/ferry" --version)" "$("$FERRY" --version)" "the installed binary runs"
grep -q '@BINDIR@' "$D"/usr/lib/systemd/system/* && not_ok "units name @BINDIR@" ||
	ok "units name the installed binary"

# ---- completion --------------------------------------------------------------------
ferry pool create tank "$T/tank"
ferry create tank/a
ferry create tank/a/b
mkdir "$T/src" && echo x >"$T/src/f"
ferry snapshot --from "$T/src" tank/a@s1
comp() {
	PATH="$D/usr/bin:$PATH" bash -c '. "$1/usr/share/bash-completion/completions/ferry"
		shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ferry
		printf "%s\n" "${COMPREPLY[@]}" | sort' sh "$D" "$@"
}
is "$(comp ferry se)" "send
set" "ferry se<TAB>: send, set"
is "$(comp ferry send tank/)" "tank/a
tank/a/b
tank/a@s1" "ferry send tank/<TAB>: the datasets and snapshots"
is "$(comp ferry send tank/a@)" "tank/a@s1" "ferry send tank/a@<TAB>: the snapshots"
is "$(comp ferry list --js)" "--json" "ferry list --js<TAB>: --json"
is "$(comp ferry recv -)" "$(printf '%s\n' -A -F -d -e -i -n -o -q -s -u -v -x --cacert --from --help --json --keep-source-compression --limit-rate --retries --timeout --token-file | sort)" \
	"recv -<TAB>: recv's options, from its --help"
is "$(comp ferry pool st)" "status" "ferry pool st<TAB>: status"
is "$(comp ferry gc t)" "tank" "ferry gc t<TAB>: the pools"

# ---- uninstall -------------------------------------------------------------------
run mk uninstall DESTDIR="$D" PREFIX=/usr
is "$rc" 0 "make uninstall DESTDIR PREFIX=/usr"
is "$(find "$D" -mindepth 1)" "" "leaves DESTDIR empty"
[ -d "$D" ] && ok "and DESTDIR itself stays" || not_ok "DESTDIR removed"
# with something else in a shared directory: only ferry's files go
mk install DESTDIR="$D" PREFIX=/opt/x >/dev/null 2>&1
echo other >"$D/opt/x/bin/other"
mk uninstall DESTDIR="$D" PREFIX=/opt/x >/dev/null 2>&1
is "$(cd "$D" && find . -mindepth 1 | sort)" "./opt
./opt/x
./opt/x/bin
./opt/x/bin/other" "a file install did not put there stays, with its directories"

done_testing
