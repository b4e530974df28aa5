#!/bin/sh
# Issue 11, item 5: JSON everywhere a report is printed, in the zfs -j
# shape (output_version, names as keys), every document checked against
# docs/ferry-json.7 by tests/cli/json_check.py: no member the page does
# not describe, none it promises missing, every type right.
. "$(dirname "$0")/lib.sh"

MAN="$FERRY_SRC/docs/ferry-json.7"
CHECK="$FERRY_SRC/tests/cli/json_check.py"
# valid CMD DESC ARGS...: runs ferry ARGS, validates stdout as CMD's document
valid() {
	_cmd=$1 _desc=$2; shift 2
	"$FERRY" "$@" >"$T/j.out" 2>"$T/j.err"
	_rc=$?
	_res=$(python3 "$CHECK" "$MAN" "$_cmd" <"$T/j.out" 2>&1)
	if [ "$_rc" = 0 ] && [ "$_res" = ok ]; then ok "$_desc"; else
		not_ok "$_desc"; diag "rc=$_rc" "$_res" "$(head -c 600 "$T/j.err")"; fi
}

S="$T/src"
mkdir -p "$S/d"
echo one >"$S/f"
echo two >"$S/d/g"
ferry pool create tank "$T/tank"
ferry pool create bk "$T/bk"
ferry create -o source="$S" tank/a
ferry create tank/a/b
ferry set my:tag=x tank/a
ferry snapshot tank/a@s1
echo three >"$S/h"
mv "$S/d/g" "$S/d/g2"
ferry snapshot tank/a@s2
ferry hold keep tank/a@s1

valid "ferry list" "list --json" list --json -r tank
valid "ferry list" "list --json -t all -p" list --json -t all -p -r tank
run ferry list --json -o name -s used tank/a
is "$(python3 -c 'import json,sys; print(sorted(json.load(sys.stdin)["datasets"]["tank/a"]["properties"]))' <"$T/out")" \
	"['name']" "list --json -o name -s used: no hidden sort column"
valid "ferry get" "get --json all" get --json all tank/a
valid "ferry get" "get --json -r (snapshots, inherited)" get --json -r compression,my:tag tank/a
valid "ferry pool list" "pool list --json" pool list --json
valid "ferry pool status" "pool status --json" pool status --json
valid "ferry pool status" "pool status --json NAME" pool status tank --json
valid "ferry holds" "holds --json" holds --json tank/a@s1
valid "ferry holds" "holds --json -p" holds --json -p tank/a@s1
valid "ferry diff" "diff --json" diff --json tank/a@s1 tank/a@s2
run ferry diff --json tank/a@s1 tank/a@s2
is "$(python3 -c 'import json,sys; print(" ".join(sorted(c["change"] + c["path"] + (" -> " + c["newpath"] if "newpath" in c else "") for c in json.load(sys.stdin)["diff"]["changes"])))' <"$T/out")" \
	"$(ferry diff tank/a@s1 tank/a@s2 | awk -F'\t' '{print $1 $2}' | sort | tr '\n' ' ' | sed 's/ $//')" \
	"diff --json has the changes diff prints"
valid "ferry send" "send -n --json" send -n --json tank/a@s2
valid "ferry send" "send -n --json -i" send -n --json -i @s1 tank/a@s2
refused 2 "--json is for the estimate of -n" "send --json without -n" ferry send --json tank/a@s2
ferry send tank/a@s1 >"$T/full"
ferry send -i @s1 tank/a@s2 >"$T/incr"
"$FERRY" recv --json bk/a <"$T/full" >"$T/j.out" 2>"$T/j.err"
is "$?:$(python3 "$CHECK" "$MAN" "ferry recv" <"$T/j.out")" "0:ok" "recv --json"
"$FERRY" recv -n --json bk/a <"$T/incr" >"$T/j.out" 2>"$T/j.err"
is "$?:$(python3 "$CHECK" "$MAN" "ferry recv" <"$T/j.out")" "0:ok" "recv -n --json"
valid "ferry restore" "restore --json" restore --json tank/a@s2 "$TS/r"
diff -r "$S" "$TS/r" >/dev/null && ok "which restored the tree" || not_ok "restore differs"
refused 2 "--json and --format" "restore --json --format" ferry restore --json --format tar tank/a@s2
valid "ferry destroy" "destroy -n --json SNAP" destroy -n --json tank/a@s2
valid "ferry destroy" "destroy -n --json -r DATASET" destroy -n --json -r tank/a/b
ferry bookmark tank/a@s2 tank/a#m
valid "ferry destroy" "destroy --json BOOKMARK" destroy --json tank/a#m
valid "ferry prune" "prune -n --json" prune -n --json --keep-last 1 tank/a
valid "ferry sync" "sync --json" sync --json tank/a bk/s
valid "ferry gc" "gc --json" gc --json tank
# snapshot --json: -v's counters, one member per snapshot made
echo four >"$S/d/four"
valid "ferry snapshot" "snapshot --json" snapshot --json tank/a@s3
python3 -c 'import json,sys
s = json.load(sys.stdin)["snapshots"]["tank/a@s3"]
print(s["name"], s["files_read"], s["files_reused"], s["dirs"], s["blocks_written"] > 0)' \
	<"$T/j.out" >"$T/v"
is "$(cat "$T/v")" "tank/a@s3 1 3 1 True" "snapshot --json: the one new file read, the three others reused, the directory below the root"
valid "ferry snapshot" "snapshot -r -v --json" snapshot -r -v --json tank/a@s4
is "$(python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)["snapshots"])))' <"$T/j.out")" \
	"tank/a/b@s4 tank/a@s4" "snapshot -r --json: a member per snapshot, and no text line"
run ferry snapshot --json tank/a@s4
is "$rc:$(cat "$T/out")" "1:" "a refused snapshot --json prints no document"

# the validator itself refuses what the page does not describe
echo '{"output_version":{"command":"ferry gc","vers_major":0,"vers_minor":1},"pools":{"t":{"name":"t"}},"extra":1}' |
	python3 "$CHECK" "$MAN" "ferry gc" >"$T/v"
like "$(cat "$T/v")" "extra: not in ferry-json" "json_check: an undescribed member is an error"
like "$(cat "$T/v")" "blocks_freed: missing" "json_check: a missing member is an error"

ferry release keep tank/a@s1
ferry gc tank >/dev/null
ferry restore tank/a@s1 "$TS/r1"
[ "$(cat "$TS/r1/f")" = one ] && ok "tank/a@s1 restores after gc" || not_ok "tank/a@s1"
ferry restore tank/a@s3 "$TS/r3"
diff -r "$S" "$TS/r3" >/dev/null && ok "tank/a@s3 (made with --json) restores the tree" ||
	not_ok "tank/a@s3 differs"

done_testing
