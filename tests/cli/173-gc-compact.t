#!/bin/sh
# gc compacts the catalogue (VACUUM) only when a quarter or more of its
# pages are free (store/gc.c, compact_worth): a gc that frees a little
# leaves the free pages for the next writes, one that frees most of the
# catalogue gives the space back to the filesystem. Both end with the
# pool's snapshots restoring exactly and its figures equal to a control's.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
# gen DIR N TAG: N small files of distinct contents
gen() {
	mkdir -p "$1"
	python3 - "$1" "$2" "$3" <<'EOF'
import os, sys
d, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(n):
    with open(os.path.join(d, "f%05d" % i), "w") as f:
        f.write(("%s %d\n" % (tag, i)) * (1 + i % 7))
EOF
}
gen "$T/big" 6000 big
gen "$T/small" 600 small
ferry create -o source="$T/big" tank/big
ferry create -o source="$T/small" tank/small
ferry snapshot tank/big@a
ferry snapshot tank/small@a
pages() { sqlite3 "$T/p/tank/catalog.db" "PRAGMA page_count"; }
freep() { sqlite3 "$T/p/tank/catalog.db" "PRAGMA freelist_count"; }

# a tenth of the rows go: the free pages stay in the file for reuse
ferry destroy tank/small@a
run ferry gc tank
is "$rc" 0 "gc after destroying the small dataset's snapshot"
p1=$(pages) f1=$(freep)
[ "$f1" -gt 0 ] && [ $((f1 * 4)) -lt "$p1" ] &&
	ok "a little freed: no VACUUM ($f1 of $p1 pages free)" ||
	not_ok "a little freed: $f1 of $p1 pages free (want some, under a quarter)"
# the free pages are reused by the next writes: the file does not grow
gen "$T/small2" 300 again
ferry create -o source="$T/small2" tank/small2
ferry snapshot tank/small2@a
p2=$(pages)
[ "$p2" -le "$p1" ] && ok "the next snapshot reuses the free pages ($p1 -> $p2 pages)" ||
	not_ok "the catalogue grew from $p1 to $p2 pages with $f1 free"

# most of the rows go: VACUUM gives the space back
size0=$(stat -c %s "$T/p/tank/catalog.db")
ferry destroy tank/big@a
run ferry gc tank
is "$rc" 0 "gc after destroying the big dataset's snapshot"
size1=$(stat -c %s "$T/p/tank/catalog.db")
is "$(freep)" 0 "most freed: compacted, no free page left"
[ $((size1 * 2)) -lt "$size0" ] && ok "the catalogue shrank ($size0 -> $size1 bytes)" ||
	not_ok "the catalogue went from $size0 to $size1 bytes"

ferry pool create ctl "$T/p/ctl"
ferry create -o source="$T/big" ctl/big
ferry create -o source="$T/small" ctl/small
ferry create -o source="$T/small2" ctl/small2
ferry snapshot ctl/small2@a
after_check -e "/small2@a=$T/small2" tank ctl "gc with and without compaction"
done_testing
