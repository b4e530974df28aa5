#!/bin/sh
# A pack write that fails during recv -s (EIO on the flusher's write of a
# full buffer) must not be forgotten: the buffer's blocks never reached
# their pack, so neither a partial state that counts them as received nor
# a snapshot may follow. Each run either fails leaving nothing to resume,
# or keeps a partial state that resumes to a snapshot restoring whole. The
# flusher used to clear its error once reported: the blocks in flight were
# stored after it, the partial state was saved naming the lost ones, and
# the resumed snapshot could not be restored.
. "$(dirname "$0")/lib.sh"
FB=${FERRY_FAULT_BIN:-$FERRY_SRC/build-fault/ferry}
if [ ! -x "$FB" ]; then
	_n=$((_n + 1)); echo "ok $_n # skip no fault build at $FB (make BUILD=build-fault FAULT=1)"
	done_testing; exit $?
fi
W="$T/w"
export FERRY_HOME="$W/home"
mkdir -p "$T/src" "$W"
seq 1 2500000 >"$T/src/a"   # 18 MB of distinct records: buffers flush mid-stream
seq 1 100000 >"$T/src/b"
ferry pool create s "$W/s"
ferry create -o compression=off -o source="$T/src" s/d
ferry snapshot s/d@1
ferry send s/d@1 >"$T/stream"
ferry pool create -o compression=off r "$W/r"
cp -a "$W" "$T/w0"
reset() { rm -rf "$W"; cp -a "$T/w0" "$W"; }

FERRY_FAULT=count FERRY_FAULT_COUNT="$T/count" "$FB" recv -s r/x <"$T/stream"
is "$?" 0 "the clean receive succeeds ($(cat "$T/count"))"
writes=$(sed -n 's/.*\bwrite=\([0-9]*\).*/\1/p' "$T/count")
[ "$writes" -gt 14 ] && writes=14 # the pack's header and buffers come first
n=1
while [ "$n" -le "$writes" ]; do
	reset
	FERRY_FAULT="write:$n:EIO" "$FB" recv -s r/x <"$T/stream" 2>"$T/err"
	rc=$?
	what="write $n fails"
	tok=$(ferry get -H -o value receive_resume_token r/x 2>/dev/null)
	if [ "$rc" != 0 ] && [ -n "$tok" ] && [ "$tok" != - ]; then
		ferry send -t "$tok" 2>"$T/err2" | ferry recv -s r/x 2>>"$T/err2"
		what="$what, resumed"
	fi
	if [ "$rc" = 1 ] && [ -z "$(ferry list -H -t snapshot -o name -r r 2>/dev/null)" ] &&
		[ "$(wc -l <"$T/err")" = 1 ]; then
		ok "$what: nothing received, nothing kept"
		n=$((n + 1))
		continue
	fi
	rm -rf "$TS/r"
	if ferry restore r/x@1 "$TS/r" 2>"$T/err3" &&
		"$FERRY_TOOLS/treecmp" "$T/src" "$TS/r" >/dev/null 2>&1; then
		ok "$what: the snapshot restores whole"
	else
		not_ok "$what: the snapshot restores whole"
		diag "exit $rc: $(cat "$T/err")" "$(cat "$T/err2" "$T/err3" 2>/dev/null)"
	fi
	n=$((n + 1))
done
done_testing
