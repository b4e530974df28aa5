#!/bin/sh
# zfs's usedbydataset, usedbychildren (with usedbysnapshots) and
# written@SNAP on a small deterministic tree (compression off, one block
# per file, no two files alike), against figures worked out by hand; the
# sum rule used = usedbydataset + usedbysnapshots + usedbychildren on
# every dataset of the tree; zfs's formats (get, get -p, list -o headers,
# get all's order, --json); written@ of a wrong snapshot is an error.
. "$(dirname "$0")/lib.sh"
P="$FERRY_TOOLS/prng"
mkdir -p "$T/p" "$T/A" "$T/B" "$T/C"
ferry pool create -o compression=off tank "$T/p/tank"
# tank/a: f1 100000 and f2 50000 (@s1); f1 gone, f3 30000 (@s2); f4 20000 (@s3)
# tank/a/b: g1 40000 (@t1); g2 10000 (@t2); tank/c: a source, no snapshot
"$P" bin 1 100000 >"$T/A/f1"
"$P" bin 2 50000 >"$T/A/f2"
"$P" bin 5 40000 >"$T/B/g1"
ferry create -o source="$T/A" tank/a
ferry create -o source="$T/B" tank/a/b
ferry create -o source="$T/C" tank/c
ferry snapshot tank/a@s1
ferry snapshot tank/a/b@t1
rm "$T/A/f1"
"$P" bin 3 30000 >"$T/A/f3"
"$P" bin 6 10000 >"$T/B/g2"
ferry snapshot tank/a@s2
ferry snapshot tank/a/b@t2
"$P" bin 4 20000 >"$T/A/f4"
ferry snapshot tank/a@s3
ferry bookmark tank/a@s1 tank/a#m

# ---- the figures, worked out by hand --------------------------------------------
#            used   = usedbydataset + usedbysnapshots + usedbychildren
# tank       250000 = 0             + 0               + 250000 (tank/a's; tank/c 0)
# tank/a     250000 = 100000 (@s3: f2 f3 f4) + 100000 (f1) + 50000 (tank/a/b)
# tank/a/b    50000 = 50000 (@t2: g1 g2) + 0 + 0
# tank/c          0 = 0 + 0 + 0
cols=name,used,usedbydataset,usedbysnapshots,usedbychildren,referenced,written
is "$(ferry list -Hp -r -o "$cols" tank)" "tank	250000	0	0	250000	0	0
tank/a	250000	100000	100000	50000	100000	0
tank/a/b	50000	50000	0	0	50000	0
tank/c	0	0	0	0	0	0" "used, usedbydataset, usedbysnapshots, usedbychildren as worked out"
bad=''
for d in $(ferry list -H -r -o name tank); do
	set -- $(ferry get -Hp -o value used,usedbydataset,usedbysnapshots,usedbychildren "$d" 2>/dev/null)
	if [ $# -ne 4 ]; then bad="$bad $d(no figures)"; continue; fi
	[ "$1" -eq $(($2 + $3 + $4)) ] || bad="$bad $d($1 != $2+$3+$4)"
done
is "$bad" "" "used = usedbydataset + usedbysnapshots + usedbychildren on every dataset"

# written@SNAP: what the head (@s3) or a snapshot references that SNAP does not
is "$(ferry get -Hp -o value written@s1,written@s2,written@s3 tank/a | tr '\n' ' ')" \
	"50000 20000 0 " "written@s1, @s2, @s3 of the dataset (f3+f4, f4, nothing)"
is "$(ferry get -Hp -o value written@tank/a@s1 tank/a)" "50000" "written@ with a full snapshot name"
is "$(ferry get -Hp -o value written@s1 tank/a@s2 tank/a@s3 | tr '\n' ' ')" "30000 50000 " \
	"written@s1 of the snapshots @s2 (f3) and @s3 (f3+f4)"
is "$(ferry get -Hp -o value written@t1 tank/a/b)" "10000" "written@t1 of tank/a/b (g2)"
is "$(ferry list -Hp -t snapshot -o name,written -r tank/a | tr '\t\n' ': ')" \
	"tank/a@s1:150000 tank/a@s2:30000 tank/a@s3:20000 tank/a/b@t1:40000 tank/a/b@t2:10000 " \
	"a snapshot's written: since the previous one"
# errors for other names
refused 1 "^ferry: cannot get 'tank/a': written@nosuch: snapshot 'tank/a@nosuch' does not exist$" \
	"written@ a missing snapshot" ferry get written@nosuch tank/a
refused 1 "^ferry: cannot get 'tank/a': written@tank/a/b@t1: 'tank/a/b@t1' is not a snapshot of 'tank/a'$" \
	"written@ another dataset's snapshot" ferry get written@tank/a/b@t1 tank/a
refused 1 "^ferry: cannot get 'tank/a@s2': written@s3: 'tank/a@s3' is not earlier than 'tank/a@s2'$" \
	"written@ a later snapshot" ferry get written@s3 tank/a@s2
refused 1 "^ferry: cannot get 'tank/a@s2': written@s2: 'tank/a@s2' is not earlier than 'tank/a@s2'$" \
	"written@ the snapshot itself" ferry get written@s2 tank/a@s2
refused 1 "^ferry: cannot get 'tank/c': written@s1: snapshot 'tank/c@s1' does not exist$" \
	"written@ on a dataset without snapshots" ferry get written@s1 tank/c
refused 1 "^ferry: bad property list: invalid property 'written@'$" "written@ with no name" \
	ferry get written@ tank/a
refused 1 "^ferry: bad property list: invalid property 'written@a/b'$" "written@ with a bad name" \
	ferry get written@a/b tank/a
refused 1 "^ferry: cannot list: invalid property 'written@x@y@z'$" "list -o written@ a bad name" \
	ferry list -o written@x@y@z tank/a
is "$(ferry get -H -o value,source written@s1 tank/a#m)" "-	-" "a bookmark has no written@"
# what a walk reaches shows "-" where SNAP does not apply, as zfs prints it
is "$(ferry get -Hp -r -o name,value,source written@s1 tank | tr '\t\n' ': ')" \
	"tank:-:- tank/a:50000:local tank/a@s1:-:- tank/a@s2:30000:local tank/a@s3:50000:local tank/a#m:-:- tank/a/b:-:- tank/a/b@t1:-:- tank/a/b@t2:-:- tank/c:-:- " \
	"get -r written@s1 POOL: a figure where s1 is an earlier snapshot, '-' elsewhere"
is "$(ferry list -Hp -t snapshot -o name,written@s2 tank/a | tr '\t\n' ': ')" \
	"tank/a@s1:- tank/a@s2:- tank/a@s3:20000 " "list -t snapshot -o written@s2 DS: the same"

# ---- zfs's formats ---------------------------------------------------------------
is "$(ferry get usedbydataset,usedbychildren,usedbysnapshots,written@s1 tank/a)" \
"NAME    PROPERTY         VALUE  SOURCE
tank/a  usedbydataset    97.7K  -
tank/a  usedbychildren   48.8K  -
tank/a  usedbysnapshots  97.7K  -
tank/a  written@s1       48.8K  local" "get: sizes as zfs prints them; written@ has source local, as zfs's"
is "$(ferry list -o name,used,usedbydataset,usedbychildren,usedbysnapshots,written@s1 tank/a)" \
"NAME    USED  USEDDS  USEDCHILD  USEDSNAP  WRITTEN@S1
tank/a  244K   97.7K      48.8K     97.7K       48.8K" "list -o: zfs's headers, sizes right-aligned"
is "$(ferry get -H -o property all tank/a | grep -A2 '^usedbysnapshots$' | tr '\n' ' ')" \
	"usedbysnapshots usedbydataset usedbychildren " "get all: in zfs's order, after usedbysnapshots"
is "$(ferry get -H -o property all tank/a@s1 | grep -c '^usedby\|^written@')" 0 \
	"get all of a snapshot: no usedby*, and never written@"
run ferry get --json -p usedbydataset,usedbychildren,written@s2 tank/a
is "$rc:$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["datasets"]["tank/a"]["properties"]
print(" ".join("%s=%s/%s" % (k, d[k]["value"], d[k]["source"]["type"]) for k in sorted(d)))
' "$T/out")" "0:usedbychildren=50000/NONE usedbydataset=100000/NONE written@s2=20000/LOCAL" \
	"--json: the figures, exact with -p, and their sources"
is "$(ferry get -H -o value usedbydataset,usedbychildren tank/a@s1 | tr '\n' ' ')" "- - " \
	"a snapshot has no usedbydataset or usedbychildren (as zfs)"
# the same figures after a destroy of the middle snapshot
ferry destroy tank/a@s2
is "$(ferry get -Hp -o value used,usedbydataset,usedbysnapshots,usedbychildren,written@s1 tank/a | tr '\n' ' ')" \
	"250000 100000 100000 50000 50000 " "after destroying @s2: the same breakdown (f3 is in @s3)"
ferry gc tank >/dev/null
bad=0
for s in $(ferry list -H -r -t snapshot -o name tank); do
	rm -rf "$TS/r"
	ferry restore "$s" "$TS/r" 2>"$T/err" || { bad=1; diag "$s: $(cat "$T/err")"; }
done
is "$bad" 0 "after gc every snapshot restores"
done_testing
