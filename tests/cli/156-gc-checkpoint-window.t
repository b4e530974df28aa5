#!/bin/sh
# A kill between a checkpoint pack's rename and the catalogue's COMMIT
# (docs/ferry-nodes.md, "State records"), then `gc`: the packs hold the
# checkpoint of the state after the operation, the catalogue the state
# before. gc's sweep removes the operation's data packs (orphans); it must
# also remove that uncommitted checkpoint (it holds the catalogue's write
# lock, so none is in flight), or recover takes it for the newest state and
# refuses, its blocks gone. Simulated by putting back the catalogue files
# saved before a snapshot: what the disk holds after such a kill.
. "$(dirname "$0")/lib.sh"
S="$T/src"
mkdir -p "$T/p" "$S" "$T/save"
seq 1 20000 >"$S/a"
ferry pool create tank "$T/p/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@a
ferry gc tank >/dev/null
cp -a "$T/p/tank/catalog.db"* "$T/save/"
committed=$(sqlite3 "$T/p/tank/catalog.db" "SELECT value FROM meta WHERE key = 'rec_pack'")
rm -rf "$TS/a"; cp -a "$S" "$TS/a"
seq 1 50000 >"$S/b"
ferry snapshot tank/fs@b
rm -f "$T/p/tank/catalog.db"*
cp -a "$T/save/"* "$T/p/tank/"
n=$(ls "$T/p/tank/packs" | grep -c '^r.*\.pack$')
is "$n" 2 "the packs hold the committed checkpoint and the one of the snapshot that did not commit"

run ferry gc -v tank
like "$rc:$(cat "$T/out")" "^0:.* 3 orphans removed$" "gc: the snapshot's data and node packs and its checkpoint are orphans"
is "$(ls "$T/p/tank/packs" | grep '^r.*\.pack$')" "$committed" "gc keeps the committed checkpoint, and only it"
run ferry pool recover tank
is "$rc" 0 "recover after that gc: exit 0 ($(cat "$T/err"))"
like "$(cat "$T/out")" "checkpoint [0-9]+ \($committed\)" "recover takes the committed checkpoint"
is "$(ferry list -H -t snapshot -o name -r tank)" "tank/fs@a" "the state before the snapshot that did not commit"

# the next commit and recover: the state it commits
rm -f "$S/b"
ferry snapshot tank/fs@c
cp -a "$S" "$TS/c"
run ferry pool recover tank
is "$rc:$(ferry list -H -t snapshot -o name -r tank | tr '\n' ' ')" "0:tank/fs@a tank/fs@c " \
	"a later commit, then recover: that state"

ferry pool create control "$T/p/control"
ferry create -o source="$TS/a" control/fs
ferry snapshot control/fs@a
ferry snapshot control/fs@c
after_check -e "/fs@c=$TS/c" tank control "gc over a kill before a checkpoint's COMMIT"
done_testing
