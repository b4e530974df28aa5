#!/bin/sh
# snapshot -r: every dataset below gets the snapshot, or none does (as in
# zfs); a dataset without a source snapshots its current state (its newest
# snapshot's tree, empty when it has none), as zfs does. After gc,
# the pool equals a control whose only snapshot -r succeeded at once.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p" "$T/a" "$T/b" "$T/c"
echo a >"$T/a/f"
echo b >"$T/b/f"
echo c >"$T/c/f"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/a" tank/a
ferry create -o source="$T/b" tank/a/b
ferry create -o source="$T/c/missing" tank/a/c
ferry create tank/a/nosource
# 'available' follows the host filesystem's free space, not ferry's state
state() { ferry get -r -H -p all tank | awk -F'\t' '$2 != "available"'; }
state >"$T/before"

run ferry snapshot -r tank/a@s
is "$rc" 1 "snapshot -r fails when one dataset cannot be captured"
is "$(wc -l <"$T/err")" 1 "one line on stderr"
like "$(cat "$T/err")" "tank/a/c@s" "the line names the dataset that failed"
is "$(ferry list -H -t snapshot -r tank)" "" "no snapshot of the set is kept"
state >"$T/after"
cmp -s "$T/before" "$T/after" && ok "properties and figures unchanged" || not_ok "pool changed"

ferry set source="$T/c" tank/a/c
run ferry snapshot -r tank/a@s
is "$rc" 0 "snapshot -r succeeds once every source is there"
is "$(cat "$T/err")" "" "nothing to warn about"
is "$(ferry list -H -o name -t snapshot -r tank | tr '\n' ' ')" \
	"tank/a@s tank/a/b@s tank/a/c@s tank/a/nosource@s " "every dataset has the snapshot"
mkdir "$T/empty"
rm -rf "$T/rn"
ferry restore tank/a/nosource@s "$T/rn" && "$TREECMP" --no-root "$T/empty" "$T/rn" >/dev/null 2>&1 &&
	ok "the dataset without a source has an empty snapshot" || not_ok "tank/a/nosource@s is not empty"
for d in a b c; do
	ds=tank/a; [ "$d" = a ] || ds=tank/a/$d
	rm -rf "$T/r$d"
	ferry restore "$ds@s" "$T/r$d" && "$TREECMP" --no-root "$T/$d" "$T/r$d" >/dev/null 2>&1 &&
		ok "$ds@s restores identical" || not_ok "$ds@s differs"
done
refused 1 "exists" "snapshot -r refuses an existing snapshot name" ferry snapshot -r tank/a@s
is "$(ferry list -H -o name -t snapshot -r tank | wc -l)" 4 "and adds nothing"

# The control: the same datasets and sources, one snapshot -r that succeeds
# (no failed attempt before it, whose blocks gc must have freed)
ferry pool create ctl "$T/p/ctl"
ferry create -o source="$T/a" ctl/a
ferry create -o source="$T/b" ctl/a/b
ferry create -o source="$T/c" ctl/a/c
ferry create ctl/a/nosource
ferry snapshot -r ctl/a@s 2>/dev/null
# the empty tree (checked above) has the mtime of its dataset's creation
after_check -e "/a/nosource@s=$T/rn" -e "/a@s=$T/a" -e "/a/b@s=$T/b" -e "/a/c@s=$T/c" tank ctl "snapshot -r"
done_testing
