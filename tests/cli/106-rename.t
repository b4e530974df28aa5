#!/bin/sh
# ferry rename, as zfs rename: a dataset to a new name in its pool (under
# a new parent, -p making missing ones), its descendants, snapshots,
# bookmarks, holds and guids with it; a snapshot to a new name, -r in
# every descendant that has it, all or nothing. Incrementals from and to
# a renamed dataset or snapshot still work (send -i across a rename into
# a replica; a receive into a renamed replica). Every refusal with its
# exit status and one line. Ends with gc and a restore of every snapshot
# compared with the tree it was taken of.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/s/a" "$T/s/b" "$T/s/c" "$T/s/t" "$T/s/u" "$T/s/v"
ferry pool create tank "$T/p/tank"
ferry pool create other "$T/p/other"
ferry pool create bk "$T/p/bk"
P="$FERRY_TOOLS/prng"
"$P" bin 1 300000 >"$T/s/a/f1"
"$P" bin 2 200000 >"$T/s/b/g1"
"$P" text 3 100000 >"$T/s/c/h1"
ferry create -o source="$T/s/a" tank/a
ferry create -o source="$T/s/b" tank/a/b
ferry create -o source="$T/s/c" tank/a/b/c
ferry snapshot -r tank/a@1
# keep: SNAPSHOT DIR — the tree a snapshot was taken of, for the end
keep() { mkdir -p "$TS/want"; k=$(printf '%s' "$2" | tr '/@' '__'); cp -a "$1" "$TS/want/$k"; }
keep "$T/s/a" a@1; keep "$T/s/b" b@1; keep "$T/s/c" c@1
guid() { ferry get -Hp -o value guid "$1"; }
g_a=$(guid tank/a) g_b=$(guid tank/a/b) g_c=$(guid tank/a/b/c) g_a1=$(guid tank/a@1)
ferry hold keep tank/a@1
ferry bookmark tank/a@1 tank/a#m1
ferry set compression=gzip tank

# ---- a dataset, its descendants with it ----------------------------------------
run ferry rename tank/a tank/x
is "$rc:$(cat "$T/out" "$T/err")" "0:" "rename DS NEWDS: rc 0, nothing printed"
is "$(ferry list -H -r -t all -o name tank | tr '\n' ' ')" \
	"tank tank/x tank/x@1 tank/x#m1 tank/x/b tank/x/b@1 tank/x/b/c tank/x/b/c@1 " \
	"the descendants, snapshots and bookmark moved with it"
is "$(guid tank/x):$(guid tank/x/b):$(guid tank/x/b/c):$(guid tank/x@1)" "$g_a:$g_b:$g_c:$g_a1" \
	"guids of the dataset, its descendants and its snapshots are kept"
is "$(ferry holds -H tank/x@1 | cut -f1,2)" "tank/x@1	keep" "the hold is kept, under the new name"
refused 1 "^ferry: cannot rename 'tank/a': dataset does not exist$" "the old name is gone" \
	ferry rename tank/a tank/z
run ferry rename tank/x tank/x
is "$rc:$(cat "$T/err")" "0:" "the same name twice does nothing (as zfs)"

# to a new parent that exists; inherited properties come from it
ferry create -o compression=gzip-9 tank/p
run ferry rename tank/x/b tank/p/b
is "$rc:$(cat "$T/err")" "0:" "rename to a new parent that exists"
is "$(ferry list -H -r -o name tank/p | tr '\n' ' ')" "tank/p tank/p/b tank/p/b/c " \
	"the child moved with it"
is "$(ferry get -H -o value,source compression tank/p/b/c)" "gzip-9	inherited from tank/p" \
	"properties are inherited from the new parent"
is "$(guid tank/p/b):$(guid tank/p/b/c)" "$g_b:$g_c" "guids kept across a move"
# -p: missing parents made as filesystems
refused 1 "^ferry: cannot rename 'tank/p/b/c': parent 'tank/q/r' does not exist \(-p creates it\)$" \
	"a missing parent without -p" ferry rename tank/p/b/c tank/q/r/c
run ferry rename -p tank/p/b/c tank/q/r/c
is "$rc:$(cat "$T/err")" "0:" "rename -p creates the missing parents"
is "$(ferry list -H -r -o name,type tank/q | tr '\t\n' ': ')" \
	"tank/q:filesystem tank/q/r:filesystem tank/q/r/c:filesystem " "as filesystems"
run ferry rename tank/q/r/c -p tank/p/b/c
is "$rc:$(ferry list -H -o name tank/p/b/c)" "0:tank/p/b/c" "rename with an option after the operands"

# ---- refusals -------------------------------------------------------------------
ferry create -V 1M tank/vol
ferry create tank/x/y
refused 1 "^ferry: cannot rename 'tank/x': 'other/x' is not in pool 'tank': datasets must be within same pool$" \
	"across pools" ferry rename tank/x other/x
refused 1 "^ferry: cannot rename 'tank/x': dataset 'tank/p' already exists$" \
	"onto an existing name" ferry rename tank/x tank/p
refused 1 "^ferry: cannot rename 'tank/x': 'tank/x/y/z' is inside 'tank/x': a dataset cannot move into its own descendant$" \
	"into its own descendant" ferry rename tank/x tank/x/y/z
refused 1 "^ferry: cannot rename 'tank/x': 'tank/x/z' is inside 'tank/x'" \
	"into its own descendant, with -p" ferry rename -p tank/x tank/x/z
refused 1 "^ferry: cannot rename 'tank': a pool's root dataset cannot be renamed \(import the pool under another name\)$" \
	"a pool's root dataset" ferry rename tank tank2
refused 1 "^ferry: cannot rename 'tank/x': parent 'tank/vol' is a volume, not a filesystem$" \
	"under a volume" ferry rename tank/x tank/vol/x
refused 1 "^ferry: cannot rename 'tank/x#m1': bookmarks cannot be renamed$" "a bookmark" \
	ferry rename tank/x#m1 tank/x#m2
refused 1 "^ferry: cannot rename 'tank/x': 'tank/x@y': unexpected '@' in a dataset name$" \
	"a dataset to a snapshot name" ferry rename tank/x tank/x@y
refused 1 "^ferry: cannot rename to 'tank/p@9': snapshots must be part of same dataset$" \
	"a snapshot into another dataset" ferry rename tank/x@1 tank/p@9
refused 1 "^ferry: cannot rename 'tank/x@nosuch': snapshot 'tank/x@nosuch' does not exist$" \
	"a missing snapshot" ferry rename tank/x@nosuch @other
long=$(printf 'n%.0s' $(seq 1 250))
refused 1 "^ferry: cannot rename 'tank/x': a name under 'tank/$long' would be longer than 255 characters$" \
	"a descendant's or snapshot's name would grow past 255" ferry rename tank/x "tank/$long"
refused 2 "^ferry: rename: source dataset for recursive rename must be a snapshot; usage: ferry rename " \
	"-r with a dataset (zfs: usage)" ferry rename -r tank/x tank/z
refused 2 "^ferry: rename: -p and -r options are mutually exclusive; usage: " "-p with -r" \
	ferry rename -p -r tank/x@1 @2
refused 2 "^ferry: rename: -p applies to filesystems and volumes, not snapshots; usage: " \
	"-p with a snapshot" ferry rename -p tank/x@1 @2
refused 2 "^ferry: rename: missing target dataset argument; usage: " "one operand" ferry rename tank/x
refused 2 "^ferry: rename: missing source dataset argument; usage: " "none" ferry rename
refused 2 "^ferry: rename: too many arguments; usage: " "three" ferry rename tank/x tank/y tank/z
refused 2 "^ferry: rename: invalid option '-n'; usage: ferry rename " "-n is not zfs's" \
	ferry rename -n tank/x tank/z
# a new ancestor's quota
ferry create -o quota=100K tank/small
refused 1 "^ferry: cannot rename 'tank/x': quota exceeded: 'tank/small' would use [0-9.]+K, over its quota of 100K$" \
	"under a quota the subtree would exceed" ferry rename tank/x tank/small/x
is "$(ferry list -H -r -o name tank/x tank/small | tr '\n' ' ')" "tank/x tank/x/y tank/small " \
	"nothing of a refused rename is left"

# a partial receive, under the name or below it, or under the new name
ferry send tank/x@1 >"$T/full"
head -c 150000 "$T/full" | ferry recv -s bk/part 2>/dev/null
ferry create bk/top
head -c 150000 "$T/full" | ferry recv -s bk/top/kid 2>/dev/null
like "$(ferry get -H -o value receive_resume_token bk/top/kid)" "^1-" "(two partial receives)"
refused 1 "^ferry: cannot rename 'bk/part': 'bk/part' holds a partial receive: resume it \(ferry send -t TOKEN, see receive_resume_token\) or discard it \(ferry recv -A bk/part\)$" \
	"a dataset with a partial receive" ferry rename bk/part bk/part2
refused 1 "^ferry: cannot rename 'bk/top': 'bk/top/kid' holds a partial receive" \
	"a dataset with one below it" ferry rename bk/top bk/top2
ferry recv -A bk/top/kid
run ferry rename bk/top bk/top2
is "$rc:$(cat "$T/err")" "0:" "once it is discarded the rename works"
ferry recv -A bk/part
ferry destroy -r bk/top2

# a busy pool: a receive running into it
ferry send tank/p/b@1 >"$T/bstream"
mkfifo "$T/fifo"
"$FERRY" recv bk/busy <"$T/fifo" >/dev/null 2>"$T/busy.err" &
bp=$!
exec 5>"$T/fifo"
head -c 100000 "$T/bstream" >&5
i=0
while [ "$i" -lt 100 ] && [ -z "$(ls "$T/p/bk/run" 2>/dev/null | grep "^$bp\\.")" ]; do sleep 0.1; i=$((i + 1)); done
ferry create bk/idle
refused 1 "^ferry: cannot rename 'bk/idle': pool 'bk' is busy: a receive into bk/busy \(pid $bp\) is running$" \
	"a pool with a receive running" ferry rename bk/idle bk/idle2
tail -c +100001 "$T/bstream" >&5
exec 5>&-
wait "$bp"
is "$?:$(cat "$T/busy.err")" "0:" "(the receive completes)"
run ferry rename bk/idle bk/idle2
is "$rc" 0 "and then the rename works"
ferry destroy -r bk/busy
ferry destroy bk/idle2

# ---- snapshots ---------------------------------------------------------------
run ferry rename tank/x@1 @one
is "$rc:$(ferry list -H -t snapshot -o name tank/x)" "0:tank/x@one" "rename DS@a @b"
is "$(guid tank/x@one)" "$g_a1" "the snapshot's guid is kept"
run ferry rename tank/x@one tank/x@uno
is "$rc:$(ferry list -H -t snapshot -o name tank/x)" "0:tank/x@uno" "rename DS@a DS@b"
run ferry rename tank/x@uno 1
is "$rc:$(ferry list -H -t snapshot -o name tank/x)" "0:tank/x@1" "rename DS@a b"
is "$(ferry holds -H tank/x@1 | cut -f2)" "keep" "its hold is kept"
ferry release keep tank/x@1

# -r across descendants that have it; one that does not is skipped
cp "$T/s/a/f1" "$T/s/t/f"
"$P" bin 4 100000 >"$T/s/u/f"
ferry create -o source="$T/s/t" tank/t
ferry create -o source="$T/s/u" tank/t/u
ferry snapshot -r tank/t@s
ferry create -o source="$T/s/v" tank/t/v
ferry snapshot tank/t/v@other
ferry snapshot tank/t/u@z
keep "$T/s/t" t@s; keep "$T/s/u" u@s; keep "$T/s/u" u@z
run ferry rename -r tank/t@s @s2
is "$rc:$(ferry list -H -r -t snapshot -o name tank/t | tr '\n' ' ')" \
	"0:tank/t@s2 tank/t/u@s2 tank/t/u@z tank/t/v@other " "rename -r renames it in every descendant that has it"
refused 1 "^ferry: cannot rename 'tank/t@s2': snapshot 'tank/t/u@z' already exists$" \
	"-r with a descendant that has the new name" ferry rename -r tank/t@s2 @z
is "$(ferry list -H -r -t snapshot -o name tank/t | tr '\n' ' ')" \
	"tank/t@s2 tank/t/u@s2 tank/t/u@z tank/t/v@other " "all or nothing: no snapshot was renamed"
refused 1 "^ferry: cannot rename 'tank/t/u@s2': snapshot 'tank/t/u@z' already exists$" \
	"a snapshot onto an existing name" ferry rename tank/t/u@s2 @z

# ---- incrementals across renames --------------------------------------------
# a replica of tank/x; the source renamed, then a send -i into the replica
ferry send tank/x@1 | ferry recv bk/r
ferry rename tank/x tank/y
"$P" bin 5 150000 >"$T/s/a/f2"
ferry snapshot tank/y@2
keep "$T/s/a" a@2
run sh -c "'$FERRY' send -i @1 tank/y@2 | '$FERRY' recv bk/r"
is "$rc:$(ferry list -H -t snapshot -o name bk/r | tr '\n' ' ')" "0:bk/r@1 bk/r@2 " \
	"send -i from a snapshot taken before the source's rename"
# the replica renamed, then a receive into it by its new name
ferry rename bk/r bk/rr
"$P" bin 6 120000 >"$T/s/a/f3"
ferry snapshot tank/y@3
keep "$T/s/a" a@3
run sh -c "'$FERRY' send -i @2 tank/y@3 | '$FERRY' recv bk/rr"
is "$rc:$(ferry list -H -t snapshot -o name bk/rr | tr '\n' ' ')" "0:bk/rr@1 bk/rr@2 bk/rr@3 " \
	"recv of an incremental into a renamed dataset"
is "$(guid bk/rr@3)" "$(guid tank/y@3)" "(the replica's snapshot has the source's guid)"
# renamed snapshots on both sides: bases match by guid
ferry rename tank/y@3 @three
ferry rename bk/rr@2 @zwei
"$P" bin 7 90000 >"$T/s/a/f4"
ferry snapshot tank/y@4
keep "$T/s/a" a@4
run sh -c "'$FERRY' send -i @three tank/y@4 | '$FERRY' recv bk/rr"
is "$rc:$(ferry list -H -t snapshot -o name bk/rr | tr '\n' ' ')" "0:bk/rr@1 bk/rr@zwei bk/rr@3 bk/rr@4 " \
	"send -i from a renamed snapshot into a replica whose copy of it has the old name"
# a bookmark made before the rename is a base after it
ferry send tank/y@1 | ferry recv bk/m
ferry rename bk/m bk/mm
run sh -c "'$FERRY' send -i tank/y#m1 tank/y@2 | '$FERRY' recv bk/mm"
is "$rc:$(ferry list -H -t snapshot -o name bk/mm | tr '\n' ' ')" "0:bk/mm@1 bk/mm@2 " \
	"send -i from a bookmark of the renamed dataset into a renamed replica"

# a resume token names the sender's snapshot as it was called: send -t
# finds it by guid after the dataset and the snapshot were renamed
ferry send tank/y@4 >"$T/y4"
head -c 200000 "$T/y4" | ferry recv -s bk/res 2>/dev/null
tok=$(ferry get -H -o value receive_resume_token bk/res)
ferry rename tank/y tank/w
ferry rename tank/w@4 @vier
run sh -c "'$FERRY' send -t '$tok' | '$FERRY' recv -s bk/res"
is "$rc:$(cat "$T/err"):$(guid bk/res@vier)" "0::$(guid tank/w@vier)" \
	"send -t resumes after the sender's dataset and snapshot were renamed (zfs: under the new name)"
ferry destroy tank/w@vier
refused 1 "^ferry: cannot send 'tank/y@4': the token's snapshot 'tank/y@4' \(guid [0-9]+\) is not in pool 'tank' under that name or any other$" \
	"send -t of a snapshot that is gone says so" ferry send -t "$tok"

# ---- sync across renames of its source and of its destination ---------------
mkdir "$T/s/sy"
"$P" bin 8 50000 >"$T/s/sy/f"
ferry pool create sy "$T/p/sy"
ferry create -o source="$T/s/sy" tank/sy
ferry snapshot tank/sy@1
ferry sync tank/sy sy/d >/dev/null
ferry rename tank/sy tank/sy2
"$P" bin 9 40000 >"$T/s/sy/g"
ferry snapshot tank/sy2@2
run ferry sync tank/sy2 sy/d
is "$rc:$(ferry list -H -t snapshot -o name sy/d | tr '\n' ' ')" "0:sy/d@1 sy/d@2 " \
	"sync from a renamed source finds the common snapshot by guid"
ferry rename sy/d sy/e
ferry snapshot tank/sy2@3
run ferry sync tank/sy2 sy/e
is "$rc:$(ferry list -H -t snapshot -o name sy/e | tr '\n' ' ')" "0:sy/e@1 sy/e@2 sy/e@3 " \
	"sync to a renamed destination, by its new name"
is "$(ferry holds -H tank/sy2@2 tank/sy2@3 | cut -f1,2 | tr '\t\n' '= ')" \
	"tank/sy2@2=ferry-sync:sy/d tank/sy2@3=ferry-sync:sy/e " \
	"the hold tag naming the old destination stays on the source (ferry.8: release it)"
ferry release ferry-sync:sy/d tank/sy2@2
ferry release ferry-sync:sy/e tank/sy2@3
ferry destroy -r tank/sy2

# ---- a capture that looked its dataset up before a rename --------------------
# It waits for the gc lock (held here, as a gc or another rename holds
# it), the dataset's row is renamed meanwhile (what a rename in that
# moment does), and its commit refuses rather than land under the new name.
mkdir "$T/s/g"
"$P" bin 10 30000 >"$T/s/g/f"
ferry create -o source="$T/s/g" tank/g
mkfifo "$T/gate"
flock -x "$T/p/tank/gc.lock" sh -c "read x <'$T/gate'" &
lp=$!
i=0
while [ "$i" -lt 100 ] && ! awk -v p="$lp" '$2 == "FLOCK" && $5 == p { f = 1 } END { exit !f }' /proc/locks; do
	sleep 0.1; i=$((i + 1))
done
"$FERRY" snapshot tank/g@x >/dev/null 2>"$T/g.err" &
sp=$!
i=0
while [ "$i" -lt 100 ] && ! awk -v p="$sp" '$2 == "->" && $6 == p { f = 1 } END { exit !f }' /proc/locks; do
	sleep 0.1; i=$((i + 1))
done
sqlite3 "$T/p/tank/catalog.db" "UPDATE datasets SET name = 'h' WHERE name = 'g';"
echo go >"$T/gate"
wait "$lp"
wait "$sp"
is "$?:$(cat "$T/g.err"):$(ferry list -H -t snapshot -o name -r tank/h)" \
	"1:ferry: cannot snapshot 'tank/g@x': dataset 'tank/g' was renamed to 'tank/h' meanwhile:" \
	"a capture whose dataset was renamed while it waited fails at its commit"
ferry destroy -r tank/h

# ---- the end: gc, then every snapshot restores as the tree it was taken of ----
ferry destroy -r tank/small
ferry gc tank >/dev/null
ferry gc bk >/dev/null
bad=0 n=0
for s in $(ferry list -H -r -t snapshot -o name tank bk); do
	n=$((n + 1))
	case $s in
	tank/w@1 | bk/rr@1 | bk/mm@1) w=a@1 ;;
	tank/w@2 | bk/rr@zwei | bk/mm@2) w=a@2 ;;
	tank/w@three | bk/rr@3) w=a@3 ;;
	bk/res@vier | bk/rr@4) w=a@4 ;;
	tank/p/b@1) w=b@1 ;;
	tank/p/b/c@1) w=c@1 ;;
	tank/t@s2) w=t@s ;;
	tank/t/u@s2) w=u@s ;;
	tank/t/u@z) w=u@z ;;
	tank/t/v@other) w=empty ;;
	*) w=unknown ;;
	esac
	rm -rf "$TS/got"
	mkdir -p "$TS/want/empty"
	k=$(printf '%s' "$w" | tr '/@' '__')
	if ! ferry restore "$s" "$TS/got" 2>"$T/err" || [ ! -d "$TS/want/$k" ] ||
		! "$FERRY_TOOLS/treecmp" --no-root "$TS/want/$k" "$TS/got" >"$T/cmp" 2>&1; then
		bad=1; diag "$s ($w): $(cat "$T/err" "$T/cmp" 2>/dev/null | head -3)"
	fi
done
is "$bad:$n" "0:16" "after gc, all 16 snapshots restore identical to the trees they were taken of"
done_testing
