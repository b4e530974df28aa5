#!/bin/sh
# A partial receive counts against every quota above it (ferry(8) quota;
# zfs keeps a resumable receive's state in a hidden child, ds/%recv, whose
# space the quotas above see): one client cannot pass a quota by leaving
# interrupted `recv -s` receives in several datasets, each under the
# room. The receive into a sibling and a local snapshot are refused while
# the partial holds the room, and pass once it is aborted; a partial's own
# resumption is not counted twice. Ends with after_check against a pool
# that got the same snapshots without quotas.
. "$(dirname "$0")/lib.sh"
PRNG="$FERRY_TOOLS/prng"
mkdir -p "$T/a" "$T/b" "$T/l"
"$PRNG" bin 1 600000 >"$T/a/f"
"$PRNG" bin 2 600000 >"$T/b/f"
"$PRNG" bin 3 500000 >"$T/l/f"
ferry pool create -o compression=off tank "$T/tank"
ferry create -o source="$T/a" tank/a
ferry snapshot tank/a@one
ferry create -o source="$T/b" tank/b
ferry snapshot tank/b@one
ferry send tank/a@one >"$T/a.s"
ferry send tank/b@one >"$T/b.s"
head -c 500000 "$T/a.s" >"$T/a.cut"
ferry pool create -o compression=off bk "$T/bk"
ferry create -o quota=800K bk/c
state() { ferry list -H -p -r -t all -o name,used,referenced,receive_resume_token bk; }

run ferry recv -s bk/c/a <"$T/a.cut"
like "$rc:$(ferry get -H -o value receive_resume_token bk/c/a)" '^1:1-' \
	"a cut receive into bk/c/a stays a partial receive"
before=$(state)
refused 1 "^ferry: cannot receive into 'bk/c/b': quota exceeded: 'bk/c' would use" \
	"a full receive into the sibling bk/c/b is refused: the partial's blocks count" \
	ferry recv bk/c/b <"$T/b.s"
is "$(state)" "$before" "nothing committed, the partial as it was"
ferry create -o source="$T/l" bk/c/l
refused 1 "quota exceeded: 'bk/c' would use" \
	"a local snapshot that the partial leaves no room for is refused too" \
	ferry snapshot bk/c/l@one
ferry destroy bk/c/l
tok=$(ferry get -H -o value receive_resume_token bk/c/a)
ferry send -t "$tok" >"$T/rest.s"
run ferry recv -s bk/c/a <"$T/rest.s"
is "$rc:$(ferry get -H -o value receive_resume_token bk/c/a)" "0:-" \
	"the partial's own resumption completes: its blocks are not counted twice"
is "$(ferry list -H -r -t snapshot -o name bk/c)" "bk/c/a@one" "and commits bk/c/a@one"
ferry destroy -r bk/c/a
ferry gc bk >/dev/null

run ferry recv -s bk/c/a <"$T/a.cut"
is "$rc" 1 "another cut receive leaves a partial"
run ferry recv -A bk/c/a
is "$rc" 0 "recv -A discards it"
run ferry recv bk/c/b <"$T/b.s"
is "$rc:$(ferry list -H -r -t snapshot -o name bk/c)" "0:bk/c/b@one" \
	"with the partial gone the same receive into bk/c/b passes"

ferry pool create -o compression=off ctl "$T/ctl"
ferry create ctl/c
ferry recv ctl/c/b <"$T/b.s"
after_check bk ctl "quota and partials"
done_testing
