#!/bin/sh
# A failed write gives back what it wrote, and a full disk never crashes a
# command. Part 1 (anywhere): a failed receive or capture leaves no pack
# bytes behind, a failed recv -F package unlinks the packs of the
# substreams it had committed inside its transaction, a killed receive's
# packs are swept by the next writer that has the pool to itself, and never
# while a writer is alive.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
packs() { ls "$T/p/$1/packs" | sort; }
known() { # known POOL: the pack names the catalogue has
	sqlite3 "$T/p/$1/catalog.db" "SELECT name FROM packs ORDER BY name"
}

# ---- part 1: failed operations give back their packs ------------------------
S="$T/src"
mkdir -p "$S/a" "$S/b"
head -c 12000000 /dev/urandom >"$S/a/big"
seq 1 20000 >"$S/a/text"
head -c 9000000 /dev/urandom >"$S/b/big"
ferry pool create tank "$T/p/tank"
ferry create -o source="$S/a" tank/a
ferry create -o source="$S/b" tank/a/b
ferry snapshot -r tank/a@1
ferry send tank/a@1 >"$T/full"
ferry send -R tank/a@1 >"$T/pkg"
ferry pool create bk "$T/p/bk"
ferry pool create ctl "$T/p/ctl"
ferry create ctl/c
ferry recv ctl/c/a <"$T/full"

ferry create bk/c
before=$(packs bk)
size=$(wc -c <"$T/full")
head -c $((size * 3 / 4)) "$T/full" >"$T/cut"
refused 1 "cannot receive into 'bk/c/a'" "a truncated stream is refused" "$FERRY" recv bk/c/a <"$T/cut"
is "$(packs bk)" "$before" "the failed receive left no pack file behind"

# a -F package whose second substream is cut: the first one's nested commit
# is rolled back with it, and its packs go too
psize=$(wc -c <"$T/pkg")
head -c $((psize - 3000000)) "$T/pkg" >"$T/pkgcut"
refused 1 "cannot receive into 'bk/c/r'" "a cut -F package is refused" \
	"$FERRY" recv -F bk/c/r <"$T/pkgcut"
is "$(packs bk)" "$before" "the failed -F package left no pack file behind"
is "$(ferry list -H -r -o name bk/c)" "bk/c" "and nothing of it in the catalogue"

# kill -9 in the middle of a receive: its packs stay, nobody's ...
mkfifo "$T/fifo"
"$FERRY" recv bk/c/k <"$T/fifo" 2>/dev/null &
pid=$!
exec 3>"$T/fifo"
head -c $((size * 3 / 4)) "$T/full" >&3
# the receiver writes what arrived into a pack; wait until it is on disk
i=0
while [ "$i" -lt 100 ] && [ "$(du -sk "$T/p/bk/packs" | cut -f1)" -lt 4000 ]; do
	sleep 0.1; i=$((i + 1))
done
printf '%s\n' "$before" >"$T/b1"
packs bk >"$T/b2"
orph=$(comm -13 "$T/b1" "$T/b2")
[ -n "$orph" ] && ok "a live receive is writing its pack" || not_ok "no pack of the live receive"
# ... and while it is alive, another writer must not take them
ferry create -o source="$S/a" bk/c/other
run ferry snapshot bk/c/other@1
is "$rc" 0 "a capture next to a live receive succeeds"
still=$(for f in $orph; do [ -e "$T/p/bk/packs/$f" ] && echo "$f"; done)
is "$still" "$orph" "the live receive's packs are not swept by another writer"
kill -9 "$pid"; wait "$pid" 2>/dev/null; exec 3>&-
still=$(for f in $orph; do [ -e "$T/p/bk/packs/$f" ] && echo "$f"; done)
is "$still" "$orph" "kill -9 leaves the receive's packs (nobody's now)"
run ferry snapshot bk/c/other@2
is "$rc" 0 "the next capture succeeds"
is "$(packs bk)" "$(known bk)" "and it swept the killed receive's packs: every pack file is the catalogue's"
run ferry recv bk/c/a <"$T/full"
is "$rc" 0 "the whole stream is then received"
ferry destroy -r bk/c/other
after_check bk ctl "failed receives"

done_testing
