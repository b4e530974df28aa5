#!/bin/sh
# pool recover (issue 15, item 3): the catalogue is a cache of the packs.
# A pool with several datasets, a volume, snapshots, an incremental
# received, a bookmark, holds, a deferred destroy, local and received
# properties, renames, a destroy, a rollback and a gc loses its catalog.db
# (deleted; random pages overwritten): recover gives back the same
# listings, holds and properties, every snapshot restores byte for byte,
# and after gc the space figures and the block table are the same. Damaged
# records are reported, never trusted.
. "$(dirname "$0")/lib.sh"

P=$T/p/tank
mkdir -p "$T/p" "$T/src" "$T/src2"
mkfiles() { # DIR SEED: a few files, text and random, one in a subdirectory
	mkdir -p "$1/sub"
	printf 'hello %s\n' "$2" >"$1/a.txt"
	head -c 200000 /dev/urandom >"$1/r$2.bin"
	seq 1 20000 | sed "s/^/$2 /" >"$1/sub/seq.txt"
	ln -sf a.txt "$1/link"
}
mkfiles "$T/src" 1
mkfiles "$T/src2" 1
head -c 1048576 /dev/urandom >"$T/vol.img"

setup() {
	ferry pool create tank "$P" &&
	ferry create -o source="$T/src" -o user:note=hello tank/fs &&
	ferry snapshot tank/fs@a &&
	mkfiles "$T/src" 2 &&
	ferry snapshot tank/fs@b &&
	ferry create -o compression=gzip -o source="$T/src2" tank/fs/kid &&
	ferry snapshot tank/fs/kid@k1 &&
	mkfiles "$T/src2" 2 && ferry snapshot tank/fs/kid@k2 &&
	mkfiles "$T/src2" 3 && ferry snapshot tank/fs/kid@k3 &&
	ferry rollback -r tank/fs/kid@k2 &&
	ferry create -V 1M tank/vol &&
	ferry snapshot --from "$T/vol.img" tank/vol@v1 &&
	{ ferry send -p tank/fs@a | ferry recv tank/rcv; } &&
	{ ferry send -p -i @a tank/fs@b | ferry recv tank/rcv; } &&
	ferry set user:mine=local tank/rcv &&
	ferry bookmark tank/fs@a tank/fs#bm-a &&
	ferry hold keep tank/fs@b && ferry hold keep2 tank/rcv@b &&
	mkfiles "$T/src" 3 && ferry snapshot tank/fs@c &&
	ferry rename tank/fs@c tank/fs@c2 &&
	ferry rename tank/fs/kid tank/fs/child &&
	ferry snapshot tank/fs@gone && ferry destroy tank/fs@gone &&
	ferry create tank/tmp && ferry destroy tank/tmp &&
	ferry hold late tank/fs@c2 && ferry destroy -d tank/fs@c2 &&
	ferry gc tank
}
run setup
is "$rc" 0 "a pool with datasets, a volume, snapshots, a received incremental, bookmarks, holds, renames, destroys, a rollback and a gc"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"

. "$FERRY_SRC/tests/cli/recover_lib.sh"
state >"$T/before.state"
codecs tank >"$T/before.codecs"
restore_all "$TS/before"
is "$?" 0 "every snapshot restores before the damage"
like "$(cat "$T/before.state")" "tank/fs@c2	defer_destroy	on" "the deferred destroy is in the state compared"
like "$(cat "$T/before.state")" "tank/rcv	user:note	hello	received" "a received property is in the state compared"
like "$(cat "$T/before.state")" "tank/fs#bm-a	bookmark" "the bookmark is in the state compared"
cp -a "$P" "$T/copy"

# put_back: the pool as it was before the damage
put_back() { rm -rf "$P" && cp -a "$T/copy" "$P"; }

# after_recover DESC: listings, holds, properties and restores as before;
# then gc, and the same again with the block table
after_recover() {
	is "$(state)" "$(cat "$T/before.state")" "$1: datasets, snapshots, bookmarks, holds, properties and figures as before"
	same_restores >"$T/cmp.out" 2>&1
	is "$?" 0 "$1: every snapshot restores byte for byte as before"
	[ -s "$T/cmp.out" ] && diag "$(head -3 "$T/cmp.out")"
	run ferry gc tank
	is "$rc" 0 "$1: gc after recover"
	is "$(state)" "$(cat "$T/before.state")" "$1: after gc, the same listings and space figures"
	is "$(codecs tank)" "$(cat "$T/before.codecs")" "$1: after gc, the stored blocks per codec as before"
	same_restores >"$T/cmp.out" 2>&1
	is "$?" 0 "$1: after gc, every snapshot restores as before"
}

# ---- 1: catalog.db deleted ----
rm -f "$P/catalog.db" "$P/catalog.db-wal" "$P/catalog.db-shm"
refused 1 "^ferry: cannot list 'tank': the catalogue '.*/catalog.db' is missing: 'ferry pool recover tank' rebuilds it from the packs$" \
	"without catalog.db the pool does not open, and the error says what rebuilds it" ferry list tank
run ferry pool recover -n tank
is "$rc" 0 "recover -n: exit 0"
like "$(cat "$T/out")" "^would rebuild pool 'tank' from [0-9]+ packs: checkpoint [0-9]+ \(r[0-9a-f]{16}\.pack\), 5 datasets, 8 snapshots, 1 bookmark, 3 holds" "recover -n says what it would rebuild"
is "$(ls "$P" | grep -c '^catalog')" 0 "recover -n changes nothing"
run ferry pool recover tank
is "$rc" 0 "recover with catalog.db deleted: exit 0"
like "$(cat "$T/out")" "^rebuilt pool 'tank' from" "recover says what it rebuilt"
is "$(cat "$T/err")" "" "nothing on stderr"
after_recover "catalog.db deleted"
is "$(stat -c %a "$P/catalog.db")" 600 "the new catalogue is private"

# ---- 2: random pages of catalog.db overwritten ----
put_back
pages=$(( $(stat -c %s "$P/catalog.db") / 4096 ))
for pg in 0 1 $(shuf -i 2-$((pages - 1)) -n 4); do
	dd if=/dev/urandom of="$P/catalog.db" bs=4096 seek="$pg" count=1 conv=notrunc 2>/dev/null
done
run ferry list -r tank
[ "$rc" != 0 ] && ok "the damaged catalogue does not open" || not_ok "the damaged catalogue opened"
run ferry pool recover tank
is "$rc" 0 "recover with $pages pages, 6 of them overwritten: exit 0"
like "$(cat "$T/out")" "the old catalogue is kept as .*/catalog\.db\.damaged-[0-9]{8}T[0-9]{6}Z$" "the damaged catalogue is kept aside"
is "$(ls "$P" | grep -c '^catalog\.db\.damaged-.*Z$')" 1 "catalog.db.damaged-<time> is there"
after_recover "random pages overwritten"

# ---- 3: damaged records are reported, never trusted ----
newest=$(ls "$T/copy/packs" | grep '^r' | sort | tail -1)
put_back
# flip one byte in the payload of the newest checkpoint
sz=$(stat -c %s "$P/packs/$newest")
printf '\377' | dd of="$P/packs/$newest" bs=1 seek=$((sz - 5)) conv=notrunc 2>/dev/null
cksum "$P/catalog.db" >"$T/db.sum"
run ferry pool recover tank
is "$rc" 1 "a damaged newest checkpoint: recover refuses"
like "$(tail -1 "$T/err")" "a checkpoint that may be the newest is damaged \(pack '$newest' at offset 16: record fails its hash\)" "... saying which and why"
is "$(cksum "$P/catalog.db")" "$(cat "$T/db.sum")" "... and changes nothing"
is "$(ls "$P" | grep -c '^catalog\.db\.')" 0 "... leaves no file behind"

# a block a snapshot needs, damaged: recover refuses (the catalogue is gone)
put_back
rm -f "$P/catalog.db" "$P/catalog.db-wal" "$P/catalog.db-shm"
big=$(ls -S "$P/packs" | head -1)
printf '\377\377\377\377' | dd of="$P/packs/$big" bs=1 seek=1000 conv=notrunc 2>/dev/null
run ferry pool recover tank
is "$rc" 1 "a damaged block a snapshot needs: recover refuses"
like "$(tail -1 "$T/err")" "cannot recover pool 'tank': tank/.*@.*: block [0-9a-f]{64} is not in the packs" "... naming the snapshot and the block"
like "$(head -1 "$T/err")" "skipped 1 damaged record \(first: pack '$big' at offset [0-9]+" "... and the damaged record"
is "$(ls "$P" | grep -c '^catalog')" 0 "... and leaves no catalogue behind"

# a torn record at the end of a pack (as a killed writer leaves) and an
# old checkpoint damaged: skipped with a warning, exit 3
put_back
ferry set user:late=1 tank/fs && ferry inherit user:late tank/fs
old=$(ls "$P/packs" | grep '^r' | sort | head -1)
printf '\377' | dd of="$P/packs/$old" bs=1 seek=100 conv=notrunc 2>/dev/null
head -c 30 "$P/packs/$big" >>"$P/packs/$big"
rm -f "$P/catalog.db" "$P/catalog.db-wal" "$P/catalog.db-shm"
run ferry pool recover tank
is "$rc" 3 "a torn record and an old checkpoint damaged: exit 3"
like "$(cat "$T/err")" "^ferry: warning: skipped 2 damaged records \(first: pack " "... each skipped, with a warning"
after_recover "damaged records skipped"

# ---- 4: recover of a healthy pool changes nothing; later changes are recovered ----
put_back
state >"$T/s1"
run ferry pool recover tank
is "$rc" 0 "recover of a healthy pool"
is "$(state)" "$(cat "$T/s1")" "... gives the same state"
run ferry set user:after=yes tank/fs
is "$rc" 0 "the recovered pool takes writes"
rm -f "$P/catalog.db" "$P/catalog.db-wal" "$P/catalog.db-shm"
run ferry pool recover tank
is "$(ferry get -H -o value user:after tank/fs)" "yes" "a change after a recover is recovered too"

done_testing
