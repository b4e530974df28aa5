#!/bin/sh
# Bookmarks (tank/fs#mark): a snapshot's identity kept after the snapshot
# is destroyed. Created from a snapshot or a bookmark, listed and queried
# like zfs; after destroy @s1 and gc (which frees s1's blocks but keeps its
# tree's nodes) `send -i #mark` still gives the very stream `send -i @s1`
# gave, the backup receives it and restores identical; bad input is refused
# with one line and nothing changed; destroy -r takes the bookmarks along.
# After destroy @s1 and gc, after the send from the bookmark, and at the
# end, every pool equals a control that never had what was destroyed.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
S="$T/src"
mkdir "$S" "$T/osrc"
head -c 3000000 /dev/urandom >"$S/big"      # only @s1 has it: gc frees it
head -c 600000 /dev/urandom >"$S/keep"
seq 1 100000 >"$S/text"
echo other >"$T/osrc/f"
ferry pool create tank "$T/p/tank"
ferry pool create bk "$T/p/bk"
ferry create -o source="$S" tank/fs
ferry create -o source="$T/osrc" tank/other
ferry snapshot tank/fs@s1
ferry snapshot tank/other@o1

# ---- create, list, get ----
run ferry bookmark tank/fs@s1 tank/fs#b1
is "$rc:$(cat "$T/err")" "0:" "bookmark a snapshot"
is "$(ferry list -H -o name,used,avail,refer tank/fs#b1)" "$(printf 'tank/fs#b1\t-\t-\t-')" \
	"list a bookmark by name: no space figures"
is "$(ferry get -H -o value guid tank/fs#b1)" "$(ferry get -H -o value guid tank/fs@s1)" \
	"the bookmark has the snapshot's guid"
is "$(ferry get -H -o value createtxg tank/fs#b1)" "$(ferry get -H -o value createtxg tank/fs@s1)" \
	"... and its createtxg"
is "$(ferry get -H -p -o value creation tank/fs#b1)" "$(ferry get -H -p -o value creation tank/fs@s1)" \
	"... and its creation time"
is "$(ferry get -H -o value type tank/fs#b1)" "bookmark" "type is bookmark"
run ferry bookmark tank/fs#b1 tank/fs#copy
is "$rc" 0 "bookmark a bookmark"
run ferry bookmark tank/fs@s1 '#short'
is "$rc" 0 "short form #NAME: same dataset as the source"
is "$(ferry get -H -o value guid tank/fs#copy)" "$(ferry get -H -o value guid tank/fs#short)" \
	"a copied bookmark keeps the guid"
ferry bookmark tank/other@o1 tank/other#ob
is "$(ferry list -H -o name -t bookmark | tr '\n' ' ')" \
	"tank/fs#b1 tank/fs#copy tank/fs#short tank/other#ob " "list -t bookmark"
is "$(ferry list -H -o name -t all -r tank/fs | tr '\n' ' ')" \
	"tank/fs tank/fs@s1 tank/fs#b1 tank/fs#copy tank/fs#short " "list -t all: snapshots, then bookmarks"
is "$(ferry list -H -o name -r tank | tr '\n' ' ')" "tank tank/fs tank/other " \
	"list hides bookmarks by default"
is "$(ferry get -H -o name -r guid tank/other | tr '\n' ' ')" "tank/other tank/other@o1 tank/other#ob " \
	"get -r includes bookmarks"
refused 1 "bookmark properties cannot be changed" "a bookmark has no settable properties" \
	ferry set user:x=1 tank/fs#b1

# ---- a full send, changes, @s2 ----
ferry send tank/fs@s1 >"$T/full1"
ferry recv bk/fs <"$T/full1"
rm "$S/big"
echo more >>"$S/text"
# two records of an unchanged file in a new one: WRITE_BYREF from the base
{ head -c 262144 "$S/keep"; head -c 100000 /dev/urandom; } >"$S/mixed"
head -c 200000 /dev/urandom >"$S/new"
ferry snapshot tank/fs@s2
cp -a "$S" "$T/tree-s2"
ferry send -i @s1 tank/fs@s2 >"$T/from-snap"
ferry send -i '#b1' tank/fs@s2 >"$T/from-mark0"
run cmp "$T/from-snap" "$T/from-mark0"
is "$rc" 0 "with the snapshot there, send -i #b1 equals send -i @s1"
like "$(ferry dump -v <"$T/from-snap" | grep -c '^WRITE_BYREF')" "^[1-9]" \
	"the stream sends the base's blocks by reference"

# ---- destroy @s1 and gc: the bookmark stays, its blocks go ----
before=$(du -sk "$T/p/tank" | cut -f1)
used0=$(ferry pool status tank | sed -n 's/^ *used: //p')
run ferry destroy tank/fs@s1
is "$rc" 0 "destroy the bookmarked snapshot"
is "$(ferry list -H -o name -t all -r tank/fs | tr '\n' ' ')" \
	"tank/fs tank/fs@s2 tank/fs#b1 tank/fs#copy tank/fs#short " "the bookmarks stay"
run ferry gc -v tank
like "$rc:$(cat "$T/out")" "^0:freed [1-9][0-9]* blocks .*, 0 nodes" "gc frees s1's blocks, keeps its nodes"
after=$(du -sk "$T/p/tank" | cut -f1)
[ "$after" -lt $((before - 2500)) ] && ok "disk use drops by big's size (${before}K -> ${after}K)" ||
	not_ok "disk use ${before}K -> ${after}K"
used1=$(ferry pool status tank | sed -n 's/^ *used: //p')
[ "$used0" != "$used1" ] && ok "pool status: used $used0 -> $used1" || not_ok "pool status used stays $used0"

# ---- send from the bookmark ----
run sh -c "'$FERRY' send -i '#b1' tank/fs@s2 >'$T/from-mark'"
is "$rc:$(cat "$T/err")" "0:" "send -i #b1 after the snapshot is gone"
run cmp "$T/from-snap" "$T/from-mark"
is "$rc" 0 "the stream equals the one from the snapshot, byte for byte"
ferry send -i tank/fs#b1 tank/fs@s2 >"$T/from-mark-long"
run cmp "$T/from-snap" "$T/from-mark-long"
is "$rc" 0 "send -i DS#b1 (long form) too"
size=$(stat -c %s "$T/from-mark")
ferry send -nvP -i '#b1' tank/fs@s2 >"$T/est"
is "$(head -1 "$T/est")" "$(printf 'incremental\t#b1\ttank/fs@s2\t%s' "$size")" "-n -v -P: incremental line"
is "$(sed -n 's/^size\t//p' "$T/est")" "$size" "-n -v -P: exact size"

# resumable: half the stream, then send -t with the token (base: the bookmark)
head -c $((size / 2)) "$T/from-mark" >"$T/half"
run sh -c "'$FERRY' recv -s bk/fs <'$T/half'"
is "$rc" 1 "half a stream is refused (recv -s keeps it)"
tok=$(ferry get -H -o value receive_resume_token bk/fs)
run sh -c "'$FERRY' send -t '$tok' | '$FERRY' recv -s bk/fs"
is "$rc:$(cat "$T/err")" "0:" "send -t resumes a stream from a bookmark"
ferry restore bk/fs@s2 "$T/restored"
run "$TREECMP" "$S" "$T/restored"
is "$rc" 0 "the backup's @s2 restores identical to the source (treecmp)"
[ "$rc" = 0 ] || diag "$(cat "$T/out")"
is "$(ferry get -H -o value guid bk/fs@s2)" "$(ferry get -H -o value guid tank/fs@s2)" \
	"the backup has the sender's @s2"
# tank's control never had @s1: @s2 captured whole from a copy of its tree,
# and so it cannot have the bookmarks of @s1 either (-B: their names are
# checked above; they have no figures)
ferry pool create ctl-tank "$T/p/ctl-tank"
ferry create ctl-tank/fs
ferry snapshot --from "$T/tree-s2" ctl-tank/fs@s2
ferry create ctl-tank/other
ferry snapshot --from "$T/osrc" ctl-tank/other@o1
after_check -B -e "/fs@s2=$T/tree-s2" -e "/other@o1=$T/osrc" tank ctl-tank "destroy @s1 and gc"
# bk's control: the full stream, then the stream from the bookmark, whole
ferry pool create ctl-bk "$T/p/ctl-bk"
ferry recv ctl-bk/fs <"$T/full1"
ferry recv ctl-bk/fs <"$T/from-mark"
after_check -e "/fs@s2=$T/tree-s2" bk ctl-bk "a resumed receive from a bookmark"
ferry pool create bk2 "$T/p/bk2"
ferry send tank/fs@s2 >"$T/full2"
ferry recv bk2/fs <"$T/full2"
ferry snapshot tank/fs@s3 >/dev/null
run sh -c "'$FERRY' send -i '#b1' tank/fs@s3 | '$FERRY' recv bk2/fs"
is "$rc" 1 "a receiver without the bookmark's snapshot refuses the stream"

# ---- bad input: one line, nothing changed ----
ferry list -H -t all -r -o name,guid,createtxg tank >"$T/before"
refused 1 "snapshot 'tank/fs@nope' does not exist" "bookmark of a missing snapshot" \
	ferry bookmark tank/fs@nope tank/fs#x
refused 1 "bookmark 'tank/fs#nope' does not exist" "bookmark of a missing bookmark" \
	ferry bookmark tank/fs#nope tank/fs#x
refused 1 "already exists" "a duplicate bookmark" ferry bookmark tank/fs@s2 tank/fs#b1
refused 1 "empty bookmark" "bad name: a#" ferry bookmark tank/fs@s2 'tank/fs#'
refused 1 "more than one" "bad name: a#b#c" ferry bookmark tank/fs@s2 'tank/fs#b#c'
refused 1 "invalid character '/'" "bad name: a#b/c" ferry bookmark tank/fs@s2 'tank/fs#b/c'
refused 1 "not a bookmark name" "target without '#'" ferry bookmark tank/fs@s2 tank/fs
refused 1 "must be in the dataset of its source" "a bookmark in another dataset" \
	ferry bookmark tank/fs@s2 tank/other#x
refused 2 "usage" "one argument" ferry bookmark tank/fs@s2
refused 1 "'tank/other#ob' is not a bookmark of 'tank/fs'" "send -i from another dataset's bookmark" \
	sh -c "'$FERRY' send -i tank/other#ob tank/fs@s2 >/dev/null"
refused 1 "bookmark 'tank/fs#nope' does not exist" "send -i from a missing bookmark" \
	sh -c "'$FERRY' send -i '#nope' tank/fs@s2 >/dev/null"
refused 1 "-I and -R need a snapshot as base, not a bookmark" "send -I from a bookmark" \
	sh -c "'$FERRY' send -I '#b1' tank/fs@s2 >/dev/null"
refused 1 "bookmark 'tank/fs#nope' does not exist" "destroy a missing bookmark" \
	ferry destroy tank/fs#nope
ferry list -H -t all -r -o name,guid,createtxg tank >"$T/after"
run cmp "$T/before" "$T/after"
is "$rc" 0 "the catalogue is unchanged after every refusal"

# ---- destroy a bookmark, destroy -r a dataset ----
run ferry destroy -n -v tank/fs#copy
is "$rc:$(cat "$T/out")" "0:would destroy tank/fs#copy" "destroy -n -v of a bookmark"
run ferry destroy tank/fs#copy
is "$rc" 0 "destroy a bookmark"
is "$(ferry list -H -o name -t bookmark -r tank/fs | tr '\n' ' ')" "tank/fs#b1 tank/fs#short " \
	"it is gone, the others stay"
run ferry destroy -n -v -r tank/fs
is "$rc:$(tr '\n' ' ' <"$T/out")" \
	"0:would destroy tank/fs@s2 would destroy tank/fs@s3 would destroy tank/fs#b1 would destroy tank/fs#short would destroy tank/fs " \
	"destroy -n -v -r lists the bookmarks"
run ferry destroy -r tank/fs
is "$rc" 0 "destroy -r a dataset with bookmarks"
is "$(ferry list -H -o name -t all -r tank | tr '\n' ' ')" "tank tank/other tank/other@o1 tank/other#ob " \
	"its bookmarks went with it"
run ferry gc -v tank
like "$rc:$(cat "$T/out")" "^0:.* [1-9][0-9]* nodes" "gc then frees the bookmarks' nodes"
ferry create -o source="$S" tank/fs
is "$(ferry list -H -o name -t bookmark -r tank/fs)" "" "a new dataset of that name has no bookmarks"

# ---- rollback and bookmarks of later snapshots (as zfs rollback) ----------------------
ferry create -o source="$S" tank/rb
ferry snapshot tank/rb@r1
cp -a "$S" "$T/tree-r1"
ferry bookmark tank/rb@r1 tank/rb#m1
echo more >"$S/rb-extra"
ferry snapshot tank/rb@r2
ferry bookmark tank/rb@r2 tank/rb#m2
ferry destroy tank/rb@r2
refused 1 "more recent bookmarks exist .*tank/rb#m2" \
	"rollback refuses while a later snapshot's bookmark exists" ferry rollback tank/rb@r1
is "$(ferry list -H -o name -t bookmark -r tank/rb | tr '\n' ' ')" "tank/rb#m1 tank/rb#m2 " \
	"and leaves the bookmarks"
run ferry rollback -r tank/rb@r1
is "$rc" 0 "rollback -r"
is "$(ferry list -H -o name -t all -r tank/rb | tr '\n' ' ')" "tank/rb tank/rb@r1 tank/rb#m1 " \
	"rollback -r destroyed the later bookmark, kept the one of its own snapshot"
rm -f "$S/rb-extra"

# The controls at the end: bk2 only ever got the full stream of @s2; tank
# only what is left (a new, empty fs; other@o1 and rb@r1 captured whole,
# with their bookmarks), never rb@r2, its bookmark or the old fs.
ferry pool create ctl-bk2 "$T/p/ctl-bk2"
ferry recv ctl-bk2/fs <"$T/full2"
after_check -e "/fs@s2=$T/tree-s2" bk2 ctl-bk2 "a refused stream from a bookmark"
ferry pool create ctl-end "$T/p/ctl-end"
ferry create ctl-end/fs
ferry create ctl-end/other
ferry snapshot --from "$T/osrc" ctl-end/other@o1
ferry bookmark ctl-end/other@o1 ctl-end/other#ob
ferry create ctl-end/rb
ferry snapshot --from "$T/tree-r1" ctl-end/rb@r1
ferry bookmark ctl-end/rb@r1 ctl-end/rb#m1
after_check -e "/other@o1=$T/osrc" -e "/rb@r1=$T/tree-r1" tank ctl-end "destroy -r, rollback -r"
done_testing
