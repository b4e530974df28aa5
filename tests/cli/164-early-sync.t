#!/bin/sh
# The pack writer's early syncs (store/writer.c, SYNC_EVERY: every 32 MiB
# handed to the flusher, the open pack is fsynced on the syncer's thread
# while the writes go on). Run with the fault build (lib/fault.c):
# - a receive and a snapshot past 32 MiB make one fsync more than the same
#   below it: the early sync happens;
# - that fsync failing (the first of the command's: it comes before the
#   commit's) fails the command with one line naming the pack, and
#   nothing is committed; a later run without the fault succeeds, and
#   after gc the pool equals one that got the same data in one go.
# A failed background sync must fail the commit: its error is not
# reported again by the commit's own fsync of the same file.
. "$(dirname "$0")/lib.sh"
FB=${FERRY_FAULT_BIN:-$FERRY_SRC/build-fault/ferry}
if [ ! -x "$FB" ]; then
	_n=$((_n + 1)); echo "ok $_n # skip no fault build at $FB (make BUILD=build-fault FAULT=1)"
	done_testing; exit $?
fi
mkdir -p "$T/p" "$TS/big" "$TS/small"
# incompressible: 42 MB of pack data for the big tree, 20 MB for the small
head -c 42000000 /dev/urandom >"$TS/big/rand"
head -c 20000000 /dev/urandom >"$TS/small/rand"
echo note >"$TS/big/note"
echo note >"$TS/small/note"
ferry pool create -o compression=lz4 src "$T/p/src"
ferry create -o source="$TS/big" src/big
ferry create -o source="$TS/small" src/small
ferry snapshot src/big@1
ferry snapshot src/small@1
ferry send src/big@1 >"$T/big.stream"
ferry send src/small@1 >"$T/small.stream"
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
ferry recv ctl/big <"$T/big.stream"

# fsyncs of COMMAND... under the fault build (FERRY_FAULT=count)
fsyncs() {
	rm -f "$T/count"
	FERRY_FAULT=count FERRY_FAULT_COUNT="$T/count" "$FB" "$@" >/dev/null 2>&1
	sed -n 's/.*fsync=\([0-9]*\).*/\1/p' "$T/count"
}

# ---- receive ---------------------------------------------------------------------
ferry pool create -o compression=lz4 cs "$T/p/cs"
ferry pool create -o compression=lz4 cb "$T/p/cb"
small=$(fsyncs recv cs/x <"$T/small.stream")
big=$(fsyncs recv cb/x <"$T/big.stream")
like "$small" '^[0-9][0-9]*$' "recv: the fault build counts its fsyncs ($small)"
is "$big" "$((small + 1))" "recv: 42 MB of packs make one early sync more than 20 MB"

ferry pool create -o compression=lz4 bk "$T/p/bk"
before=$(figures bk)
run sh -c "FERRY_FAULT=fsync:1:EIO '$FB' recv bk/x <'$T/big.stream'"
is "$rc" 1 "recv: a failed early sync fails the receive"
like "$(cat "$T/err")" "^ferry: cannot receive into 'bk/x': cannot sync pack '[0-9a-f]*\.pack': Input/output error$" \
	"... with one line naming the pack"
is "$(wc -l <"$T/err")" 1 "... and only that line"
is "$(figures bk)" "$before" "... nothing committed"
run sh -c "'$FERRY' recv bk/x <'$T/big.stream'"
is "$rc" 0 "recv: the same stream received without the fault"
after_check bk/x ctl/big "recv after a failed early sync"

# ---- snapshot --------------------------------------------------------------------
ferry pool create -o compression=lz4 sa "$T/p/sa"
ferry pool create -o compression=lz4 sb "$T/p/sb"
ferry create -o source="$TS/small" sa/d
ferry create -o source="$TS/big" sb/d
small=$(fsyncs snapshot sa/d@1)
big=$(fsyncs snapshot sb/d@1)
is "$big" "$((small + 1))" "snapshot: 42 MB of packs make one early sync more than 20 MB ($small)"

ferry pool create -o compression=lz4 cap "$T/p/cap"
ferry create -o source="$TS/big" cap/d
before=$(figures cap)
FERRY_FAULT=fsync:1:EIO "$FB" snapshot cap/d@1 >"$T/out" 2>"$T/err"
rc=$?
is "$rc" 1 "snapshot: a failed early sync fails the snapshot"
like "$(cat "$T/err")" "cannot sync pack '[0-9a-f]*\.pack': Input/output error$" \
	"... with one line naming the pack"
is "$(wc -l <"$T/err")" 1 "... and only that line"
is "$(figures cap)" "$before" "... nothing committed"
run ferry snapshot cap/d@1
is "$rc" 0 "snapshot: taken without the fault"
ferry pool create -o compression=lz4 capc "$T/p/capc"
ferry send src/big@1 | ferry recv capc/d
after_check cap/d capc/d "snapshot after a failed early sync"

done_testing
