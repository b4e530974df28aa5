#!/bin/sh
# Follows OpenZFS tests/zfs-tests/tests/functional/cli_root/zfs_snapshot/
# zfs_snapshot_009_pos.ksh: a list of snapshots is checked whole before any
# is made, and made together (one txg) or not at all; a name of exactly the
# longest length is valid, one character more is not, also when -r makes
# it; the snapshots hold their datasets' trees. After gc, the pool equals
# a control that only ever took the lists that were valid.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p" "$T/e"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"
for i in 1 2 3; do
	mkdir -p "$T/s$i/d"
	seq 1 $((i * 3000)) >"$T/s$i/f"; echo "$i" >"$T/s$i/d/g"
done
for p in tank ctl; do
	ferry create "$p/testfs"
	for i in 1 2 3; do ferry create -o source="$T/s$i" "$p/testfs$i"; done
done
# 255 characters: tank/testfs1@ and 242 x
xxx=$(printf 'x%.0s' $(seq 1 $((255 - 13))))
snaps() { ferry list -H -t snapshot -o name -r tank | tr '\n' ' '; }

for args in "tank/testfs1@snap tank/testfs2@snap tank/testfs3@snap" \
	"tank/testfs1@$xxx tank/testfs2@2 tank/testfs3@s"; do
	# shellcheck disable=SC2086
	run ferry snapshot $args
	is "$rc:$(cat "$T/err")" "0:" "snapshot of a valid list (${args%% *} ...)"
	n=0
	for a in $args; do ferry list -H -o name "$a" >/dev/null 2>&1 && n=$((n + 1)); done
	is "$n" 3 "every snapshot of the list exists"
	# shellcheck disable=SC2086
	is "$(ferry list -H -p -o createtxg $args | sort -u | wc -l)" 1 \
		"the snapshots of the list share one txg"
	# shellcheck disable=SC2086
	is "$(ferry list -H -p -o creation $args | sort -u | wc -l)" 1 "and one creation time"
	for a in $args; do ferry destroy "$a"; done
done

for args in "tank/testfs1@now tank/testfs2@now tank/testfs@blah?" \
	"tank/testfs1@blah* tank/testfs2@blah? tank/testfs3@blah%" \
	"tank/testfs1@x$xxx tank/testfs2@300 tank/testfs3@300"; do
	# shellcheck disable=SC2086
	refused 1 "cannot snapshot" "an invalid list is refused (${args%% *} ...)" ferry snapshot $args
	is "$(snaps)" "" "and none of its snapshots is made"
done
refused 1 "does not exist" "a list naming a dataset that does not exist is refused" \
	ferry snapshot tank/testfs1@now tank/testfs2@now tank/nothere@now
ferry snapshot tank/testfs3@taken
refused 1 "tank/testfs3@taken.*already exists" "a list with a snapshot that exists is refused" \
	ferry snapshot tank/testfs1@taken tank/testfs2@taken tank/testfs3@taken
is "$(snaps)" "tank/testfs3@taken " "and adds nothing"
ferry destroy tank/testfs3@taken

# -r over several names: one name too long below testfs3 refuses them all
# 255 characters: tank/testfs3/TESTFSA, the x, /TESTFSB
long=tank/testfs3/TESTFSA$(printf 'x%.0s' $(seq 1 $((255 - 28))))/TESTFSB
for p in tank ctl; do ferry create -o source="$T/e" "$p/TESTFS4"; done
ferry create -p -o source="$T/e" "$long"
is "$(ferry list -H -o name "$long" | wc -c)" 256 "a dataset name of 255 characters"
refused 1 "too long" "snapshot -r of a list that reaches a too long name is refused" \
	ferry snapshot -r tank/testfs1@snap1 tank/testfs2@snap1 tank/testfs3@snap1 tank/TESTFS4@snap1
is "$(snaps)" "" "and makes none"
ferry destroy -r "${long%/TESTFSB}"
# each level with a source: a parent that create -p makes has no source,
# so its root's mtime is the second it was made, and tank's and ctl's
# would differ whenever a second boundary falls between the two (a 1 in
# 10 flake of the restore comparison at the end)
for p in tank ctl; do
	ferry create -o source="$T/e" "$p/testfs3/TESTFSA"
	ferry create -o source="$T/e" "$p/testfs3/TESTFSA/TESTFSB"
done
run ferry snapshot -r tank/testfs1@snap1 tank/testfs2@snap1 tank/testfs3@snap1 tank/TESTFS4@snap1
is "$rc:$(cat "$T/err")" "0:" "snapshot -r of the list once the names fit"
is "$(snaps)" "tank/TESTFS4@snap1 tank/testfs1@snap1 tank/testfs2@snap1 tank/testfs3@snap1 tank/testfs3/TESTFSA@snap1 tank/testfs3/TESTFSA/TESTFSB@snap1 " \
	"every dataset of every tree has the snapshot"
is "$(ferry list -H -p -r -t snapshot -o createtxg tank | sort -u | wc -l)" 1 "in one txg"
for i in 1 2 3; do
	rm -rf "$TS/r"
	ferry restore "tank/testfs$i@snap1" "$TS/r" && "$TREECMP" --no-root "$T/s$i" "$TS/r" >/dev/null &&
		ok "testfs$i@snap1 holds its tree" || not_ok "testfs$i@snap1 differs from its source"
done

# many snapshots, one at a time, of a dataset made and destroyed again
for x in 1 2; do
	ferry create -o source="$T/s1" tank/TESTFS5
	for y in 1 2 3 4 5; do ferry snapshot "tank/TESTFS5@$y"; done
	is "$(ferry list -H -t snapshot -o name -r tank/TESTFS5 | wc -l)" 5 "round $x: 5 snapshots"
	ferry destroy -r tank/TESTFS5
done

ferry snapshot -r ctl/testfs1@snap1 ctl/testfs2@snap1 ctl/testfs3@snap1 ctl/TESTFS4@snap1
after_check tank ctl "snapshot lists"
done_testing
