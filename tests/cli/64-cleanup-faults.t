#!/bin/sh
# A cleanup that fails after a failure: the fault build fails a write path
# and then the cleanup of that failure (FERRY_FAULT=A,B). The one error
# line names the first failure and then the cleanup's, and what the
# cleanup could not undo is undone later or said: pool create puts back
# the empty directory it was given, with its mode; gc leaves an
# unfinished pack it cannot remove to the next gc, which removes it.
. "$(dirname "$0")/lib.sh"
FB=${FERRY_FAULT_BIN:-$FERRY_SRC/build-fault/ferry}
if [ ! -x "$FB" ]; then
	_n=$((_n + 1)); echo "ok $_n # skip no fault build at $FB (make BUILD=build-fault FAULT=1)"
	done_testing; exit $?
fi
count() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" "$T/count"; }

# ---- the fault harness takes several faults, and counts with them -------------
# (the first renames replace activity records, which are advisory: the
# command goes on)
mkdir -p "$T/d"
rm -f "$T/fired" "$T/count"
FERRY_FAULT=rename:1:EIO,rename:2:ENOSPC,count FERRY_FAULT_LOG="$T/fired" FERRY_FAULT_COUNT="$T/count" \
	"$FB" pool create h "$T/d/h" >/dev/null 2>&1
is "$(cat "$T/fired" | tr '\n' ' ')" "fault: rename #1 -> EIO fault: rename #2 -> ENOSPC " \
	"two faults in one run both fire"
like "$(cat "$T/count")" "^write=[0-9]+ fsync=[0-9]+ rename=[0-9]+ unlink=[0-9]+ create=[0-9]+ alloc=[0-9]+$" \
	"and count goes with them"

# ---- pool create onto an empty directory: the rename fails -----------------------
# which rename is the pool's own (others replace activity records)?
mkdir -p "$T/e/np"
chmod 0750 "$T/e/np"
rm -f "$T/count"
FERRY_FAULT=count FERRY_FAULT_COUNT="$T/count" "$FB" pool create np "$T/e/np" >/dev/null 2>&1
"$FERRY" pool export np >/dev/null 2>&1
rm -rf "$T/e/np"
nren=$(count rename)
found=0
for k in $(seq 1 "$nren"); do
	mkdir -p "$T/e/np" && chmod 0750 "$T/e/np"
	rm -f "$T/count"
	FERRY_FAULT="rename:$k:EIO,count" FERRY_FAULT_COUNT="$T/count" run "$FB" pool create np "$T/e/np"
	if grep -q "^ferry: .*cannot create '$T/e/np': " "$T/err"; then
		found=$k
		break
	fi
	"$FERRY" pool export np >/dev/null 2>&1
	rm -rf "$T/e/np"
done
[ "$found" -gt 0 ] && ok "the rename of the new pool onto the directory is rename #$found" ||
	not_ok "no rename fault fails the rename of the new pool"
is "$rc:$(wc -l <"$T/err")" "1:1" "pool create with a failed rename: exit 1, one line"
is "$(stat -c %a "$T/e/np" 2>&1):$(ls -A "$T/e/np" | wc -l)" "750:0" \
	"the empty directory it was given is back, empty, with its mode"
is "$("$FERRY" pool list -H -o name 2>&1 | grep -c '^np$')" "0" "and no pool 'np' is registered"
# the same, and putting the directory back fails too: the last create of the run
ncreate=$(count create)
rm -rf "$T/e/np" && mkdir -p "$T/e/np"
[ "$found" -gt 0 ] || found=999
FERRY_FAULT="rename:$found:EIO,create:$ncreate:EIO" run "$FB" pool create np "$T/e/np"
is "$rc:$(wc -l <"$T/err")" "1:1" "and when the directory cannot be put back: exit 1, one line"
like "$(cat "$T/err")" "cannot create '$T/e/np': .* \\(and then putting back the empty directory failed: cannot create directory '$T/e/np': " \
	"which names the rename's failure, then the directory's"
[ ! -e "$T/e/np" ] && ok "(the directory is indeed gone)" || not_ok "the directory is there"

# ---- gc: the rewrite of a mostly dead pack fails, then removing its output ------
S="$T/src"
mkdir -p "$S" "$T/g0"
head -c 2400000 /dev/urandom >"$S/big"
head -c 300000 /dev/urandom >"$S/keep"
ferry pool create -o compression=off g "$T/g0/g"
ferry create -o source="$S" g/fs
ferry snapshot g/fs@1
rm "$S/big"
ferry snapshot g/fs@2
ferry destroy g/fs@1
ferry pool export g
cp -a "$T/g0" "$T/g0.orig"
reset() { rm -rf "$T/g0"; cp -a "$T/g0.orig" "$T/g0"; "$FERRY" pool import "$T/g0/g" g >/dev/null 2>&1; }
reset
rm -f "$T/count"
FERRY_FAULT=count FERRY_FAULT_COUNT="$T/count" run "$FB" gc -v g
like "$rc:$(cat "$T/out")" "^0:.*1 rewritten" "(a clean gc rewrites the pack)"
nfs=$(count fsync)
"$FERRY" pool export g
got=0
for k in $(seq 1 "$nfs"); do
	reset
	rm -f "$T/count"
	FERRY_FAULT="fsync:$k:EIO,count" FERRY_FAULT_COUNT="$T/count" run "$FB" gc g
	if [ "$rc" = 1 ] && grep -q "cannot sync pack '[^']*'" "$T/err" && ! grep -q "and then" "$T/err"; then
		nun=$(count unlink)
		for j in $(seq 1 "$nun"); do
			"$FERRY" pool export g
			reset
			FERRY_FAULT="fsync:$k:EIO,unlink:$j:EIO" run "$FB" gc g
			if grep -q "(and then removing the unfinished pack '[^']*' failed: " "$T/err"; then
				got=1
				break 2
			fi
		done
	fi
	"$FERRY" pool export g
done
[ "$got" = 1 ] && ok "a gc whose rewrite fails and whose unfinished pack cannot be removed says both" ||
	not_ok "no gc run named the unfinished pack it could not remove"
is "$rc:$(wc -l <"$T/err")" "1:1" "gc: exit 1, one line"
diag "$(cat "$T/err")"
left=$(sed -n "s/.*removing the unfinished pack '\\([^']*\\)'.*/\\1/p" "$T/err")
[ -n "$left" ] && [ -f "$T/g0/g/packs/$left" ] && ok "the unfinished pack is still there" ||
	not_ok "the unfinished pack '$left' is not there"
run ferry gc -v g
like "$rc:$(cat "$T/out")" "^0:.* 1 orphans removed" "the next gc removes it as an orphan"
[ -n "$left" ] && [ ! -e "$T/g0/g/packs/$left" ] && ok "and it is gone" || not_ok "'$left' is still there"
ferry pool create -o compression=off gc "$T/gc"
ferry create -o source="$S" gc/fs
ferry snapshot gc/fs@2
after_check g gc "gc after a failed rewrite and a failed cleanup"
done_testing
