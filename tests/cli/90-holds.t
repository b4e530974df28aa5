#!/bin/sh
# Holds as in zfs: hold/release/holds (-r, -H, -p, --json) in zfs's format,
# userrefs and defer_destroy, a held snapshot refused by every destroying
# path ("dataset is busy": destroy, destroy -r of its dataset, rollback -r,
# recv -F), destroy -d deferring to the last release, and all of it
# surviving gc with every remaining snapshot restoring as it was taken.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/sub"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"
echo one >"$T/src/f"
ferry create -o source="$T/src" tank/a
ferry create -o source="$T/src/sub" tank/a/b
echo sub >"$T/src/sub/g"
ferry snapshot -r tank/a@s1
cp -a "$T/src" "$TS/s1"
echo two >"$T/src/f"
ferry snapshot -r tank/a@s2
cp -a "$T/src" "$TS/s2"
echo three >"$T/src/f"
ferry snapshot tank/a@s3

export FERRY_NOW=2024-03-01T12:34:56Z
run ferry hold keep tank/a@s1 tank/a@s2
is "$rc:$(cat "$T/err")" "0:" "hold TAG SNAP SNAP"
run ferry holds tank/a@s1 tank/a@s2 tank/a@s3
is "$(cat "$T/out")" "NAME       TAG   TIMESTAMP
tank/a@s1  keep  Fri Mar  1 12:34 2024
tank/a@s2  keep  Fri Mar  1 12:34 2024" "holds prints zfs's columns, times from FERRY_NOW"
is "$(ferry holds -H -p tank/a@s1)" "$(printf 'tank/a@s1\tkeep\t1709296496')" "holds -H -p: tabs and seconds"
is "$(ferry holds tank/a@s3)" "NAME  TAG  TIMESTAMP" "holds of an unheld snapshot: the header only, as zfs"
refused 1 "^ferry: cannot hold: snapshot 'tank/a@s1': tag 'keep' already exists on this dataset$" \
	"the same tag twice is refused" ferry hold keep tank/a@s1
refused 1 "^ferry: cannot hold: snapshot 'tank/a@s1': tag 'keep' already exists" \
	"hold is all or nothing" ferry hold keep tank/a@s3 tank/a@s1
is "$(ferry get -H -o value userrefs tank/a@s3)" 0 "... and the first snapshot got no hold"
refused 1 "does not exist" "hold of a missing snapshot" ferry hold keep tank/a@nope
refused 1 "empty hold tag" "an empty tag" ferry hold "" tank/a@s1
ferry hold -r deep tank/a@s1
is "$(ferry holds -r -H tank/a@s1 | cut -f1,2 | tr '\t\n' ': ')" \
	"tank/a@s1:deep tank/a@s1:keep tank/a/b@s1:deep " "hold -r and holds -r reach the children"
is "$(ferry get -H -o value userrefs tank/a@s1) $(ferry get -H -o value userrefs tank/a/b@s1)" "2 1" \
	"userrefs counts the holds"
is "$(ferry list -H -t snapshot -o name,userrefs tank/a | tr '\t\n' ': ')" \
	"tank/a@s1:2 tank/a@s2:1 tank/a@s3:0 " "list -o userrefs"
json=$(ferry holds -p --json tank/a@s2)
is "$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["holds"]["tank/a@s2"]["holds"]["keep"])')" \
	1709296496 "holds --json"

# ---- destroying a held snapshot ----------------------------------------------------
before=$(ferry list -H -r -t snapshot -o name tank)
refused 1 "^ferry: cannot destroy 'tank/a@s1': snapshot 'tank/a@s1' is held \(tag 'deep'\): dataset is busy$" \
	"destroy of a held snapshot: dataset is busy" ferry destroy tank/a@s1
refused 1 "tank/a@s1' is held .*dataset is busy" "a range through a held snapshot" ferry destroy tank/a@s1%s3
refused 1 "is held .*dataset is busy" "destroy -r of a dataset with held snapshots" ferry destroy -r tank/a
refused 1 "is held .*dataset is busy" "destroy -r of the parent of a held child snapshot" \
	ferry destroy -r tank/a/b
refused 1 "tank/a@s2' is held .*dataset is busy" "rollback -r over a held snapshot" ferry rollback -r tank/a@s1
ferry send -R tank/a@s2 >"$T/pkg"
ferry pool create bk "$T/p/bk"
ferry recv bk/a <"$T/pkg"
ferry hold mine bk/a@s1
ferry send tank/a@s3 >"$T/full3"
refused 1 "bk/a@s1' is held .*dataset is busy" "recv -F that would destroy a held snapshot" \
	ferry recv -F bk/a <"$T/full3"
is "$(ferry list -H -r -t snapshot -o name tank)" "$before" "nothing was destroyed"

# ---- destroy -d -------------------------------------------------------------------
run ferry destroy -d tank/a@s3
is "$rc:$(ferry list -H -t snapshot -o name tank/a | tr '\n' ' ')" "0:tank/a@s1 tank/a@s2 " \
	"destroy -d of an unheld snapshot destroys it at once"
run ferry destroy -d tank/a@s2
is "$rc:$(ferry get -H -o value defer_destroy tank/a@s2)" "0:on" "destroy -d of a held one marks it"
is "$(ferry get -H -o value defer_destroy tank/a@s1)" off "defer_destroy is off otherwise"
refused 1 "no such tag on this dataset" "release of a tag it does not have" ferry release nope tank/a@s2
ferry release keep tank/a@s2
is "$(ferry list -H -t snapshot -o name tank/a | tr '\n' ' ')" "tank/a@s1 " \
	"its last release destroys it"
ferry release deep tank/a@s1
ferry release -r deep tank/a/b@s1
is "$(ferry get -H -o value userrefs tank/a@s1)" 1 "release takes one tag off"
ferry release keep tank/a@s1
run ferry destroy tank/a@s1
is "$rc" 0 "with no hold left, destroy works"

# ---- gc and what remains -----------------------------------------------------------
ferry release mine bk/a@s1
ferry destroy -r bk/a
ferry send -R tank/a/b@s2 >"$T/pkgb"
ferry recv ctl/a <"$T/pkgb"
after_check -e "/b@s1=$TS/s1/sub" -e "/b@s2=$TS/s2/sub" tank/a/b ctl/a "holds and deferred destroys"
done_testing
