#!/bin/sh
# Follows OpenZFS tests/zfs-tests/tests/functional/cli_root/zfs_snapshot/
# zfs_snapshot_010_pos.ksh: a recursive snapshot over a parent and 50
# children made with `create` alone (no source: nobody wrote to them) makes
# 51 snapshots that share one createtxg and one creation time. Each is its
# dataset's current state, an empty tree; a child that has a snapshot gets
# its newest snapshot's tree again, a volume its image. After gc, the pool
# equals a control that got the same snapshots by send -R | recv.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p" "$T/empty" "$T/s"
seq 1 20000 >"$T/s/f"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"
ferry create tank/crtime
for i in $(seq 1 50); do ferry create "tank/crtime/child$i"; done
run ferry snapshot -r tank/crtime@snap
is "$rc:$(cat "$T/err")" "0:" "snapshot -r of 51 datasets without a source"
is "$(ferry list -H -r -t snapshot -o name tank/crtime | wc -l)" 51 "makes 51 snapshots"
is "$(ferry list -H -r -p -t snapshot -o createtxg tank/crtime | sort -u | wc -l)" 1 \
	"which share one createtxg"
is "$(ferry list -H -r -p -t snapshot -o creation tank/crtime | sort -u | wc -l)" 1 \
	"and one creation time"
bad=0
for s in tank/crtime@snap tank/crtime/child1@snap tank/crtime/child50@snap; do
	rm -rf "$TS/r"
	ferry restore "$s" "$TS/r" && "$TREECMP" --no-root "$T/empty" "$TS/r" >/dev/null || bad=1
done
is "$bad" 0 "each is an empty tree"

# a received child (no source) and a volume: their newest snapshot again
ferry create -o source="$T/s" tank/src
ferry snapshot tank/src@a
ferry send tank/src@a | ferry recv tank/crtime/child1/recvd
truncate -s 1M "$T/vol.img"; seq 1 1000 | dd of="$T/vol.img" conv=notrunc status=none
ferry create -V 1M tank/crtime/vol
ferry snapshot --from "$T/vol.img" tank/crtime/vol@img
run ferry snapshot -r tank/crtime@two
is "$rc:$(cat "$T/err")" "0:" "snapshot -r again, over a received dataset and a volume too"
is "$(ferry list -H -r -t snapshot -o name tank/crtime | grep -c '@two$')" 53 "53 snapshots"
rm -rf "$TS/r"
ferry restore tank/crtime/child1/recvd@two "$TS/r" && "$TREECMP" --no-root "$T/s" "$TS/r" >/dev/null &&
	ok "the received dataset's snapshot holds what it received" || not_ok "recvd@two differs"
ferry restore tank/crtime/vol@two "$TS/vol.img" && cmp -s "$T/vol.img" "$TS/vol.img" &&
	ok "the volume's snapshot holds its image" || not_ok "vol@two differs"
is "$(ferry list -H -p -o written tank/crtime/child1/recvd@two)" 0 "and wrote nothing new"
is "$(ferry list -H -r -p -t snapshot -o name,createtxg,creation tank/crtime | grep '@two' | cut -f2,3 | sort -u | wc -l)" 1 \
	"the second -r: one createtxg and creation time too"
is "$(ferry list -H -r -p -t snapshot -o name,createtxg tank/crtime | grep -E '@(snap|two)' | cut -f2 | sort -u | wc -l)" 2 \
	"two snapshot commands, two txgs"

ferry send -R tank/crtime@two | ferry recv ctl/crtime
after_check tank/crtime ctl/crtime "snapshot -r over datasets without a source"
done_testing
