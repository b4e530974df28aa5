#!/bin/sh
# Deep trees: paths far past PATH_MAX and nesting far past what a recursive
# walk survives. Capture, restore (tree and archive) and treecmp walk them
# with an explicit stack and a bounded number of open fds (checked under
# prlimit --nofile: a walk holding one fd per level fails there); capture
# records a directory more than NODE_TREE_DEPTH_MAX (16384) levels down as
# an empty directory with a warning (exit 3), skips an archive member below
# that, and restore refuses a deeper tree (only a corrupt pool has one).
#
# The trees come from tests/tools/mkdeep (reusable: `mkdeep DIR LEVELS`
# builds a chain with files, symlinks, hardlinks, xattrs and a fifo every
# 1000 levels and at the bottom; `mkdeep -c DIR` measures one).
. "$(dirname "$0")/lib.sh"
# On a tmpfs when there is one: a 10,000-level tree costs seconds to create
# and remove on a disk mounted with discard, milliseconds in memory.
D=$T
if [ -d /dev/shm ] && [ -w /dev/shm ] && DS=$(mktemp -d /dev/shm/ferry-deep.XXXXXX 2>/dev/null); then
	D=$DS
	trap 'rm -rf "$D"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
fi
MK="$FERRY_TOOLS/mkdeep"
CMP="$FERRY_TOOLS/treecmp"
# few fds for a command: a walk that keeps one per level fails long before
# 10,000 levels
lim() { prlimit --nofile=64:64 "$@"; }

"$MK" "$D/src" 10000 || { echo "Bail out! mkdeep failed"; exit 1; }
is "$("$MK" -c "$D/src")" "10000 not empty" "a 10,000-level source tree"
ferry pool create tank "$D/tank"
ferry create -o source="$D/src" tank/fs

run lim "$FERRY" snapshot -v tank/fs@a
is "$rc" 0 "snapshot of a 10,000-level tree, 64 fds at most"
like "$(cat "$T/out")" "files read 20, .*dirs 10000, .*warnings 0" "every file and directory captured, no warning"

run lim "$FERRY" restore tank/fs@a "$D/r1"
is "$rc" 0 "restore of the 10,000-level tree, 64 fds at most"
run prlimit --nofile=16:16 "$CMP" "$D/src" "$D/r1"
is "$rc" 0 "restored identical (treecmp, 16 fds at most): files, symlinks, hardlinks, xattrs, fifo, modes, mtimes"
[ "$rc" = 0 ] || diag "$(head -c 300 "$T/out") ... $(tail -c 300 "$T/out")"

# treecmp itself sees a difference 9,000 levels down
python3 - "$D/r1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(9000):
    n = os.open("d", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = n
st = os.stat("z", dir_fd=fd)
f = os.open("z", os.O_WRONLY | os.O_APPEND, dir_fd=fd); os.write(f, b"!"); os.close(f)
os.utime("z", ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=fd)
EOF
run "$CMP" "$D/src" "$D/r1"
is "$rc" 1 "treecmp finds a changed file 9,000 levels down"
like "$(tail -c 60 "$T/out")" "/d/z: size differs" "and names it"
rm -rf "$D/r1"

# incremental: nothing changed, nothing read
run lim "$FERRY" snapshot -v tank/fs@b
is "$rc" 0 "incremental snapshot of the deep tree"
like "$(cat "$T/out")" "files read 0, files reused 20, .*dirs 10000" "every file reused"

# archives: restore --format tar of the deep snapshot, captured again
lim "$FERRY" restore --format tar tank/fs@a >"$D/a.tar"
is "$?" 0 "restore --format tar of the 10,000-level snapshot, 64 fds at most"
ferry create tank/ar
run lim "$FERRY" snapshot --from "$D/a.tar" tank/ar@a
is "$rc" 0 "snapshot --from that deep tar"
rm -f "$D/a.tar"
ferry restore tank/ar@a "$D/r2"
run "$CMP" --no-root "$D/src" "$D/r2"
is "$rc" 0 "the deep tar restores identical to the source"
rm -rf "$D/r2"

# a deep tar made by GNU tar (pax long names) from a 4,000-level tree
"$MK" -e 500 "$D/src4" 4000
if tar --format=pax --xattrs --xattrs-include='*' -cf "$D/g.tar" -C "$D/src4" . 2>"$T/err"; then
	ferry create tank/gnu
	run lim "$FERRY" snapshot --from "$D/g.tar" tank/gnu@a
	is "$rc" 0 "snapshot --from a GNU tar of a 4,000-level tree"
	rm -f "$D/g.tar"
	ferry restore tank/gnu@a "$D/r3"
	run "$CMP" --no-root "$D/src4" "$D/r3"
	is "$rc" 0 "it restores identical to the tree tar read"
	rm -rf "$D/r3"
else
	ok "# SKIP GNU tar cannot write that tree: $(head -1 "$T/err")"
	ok "# SKIP"
	ferry create tank/gnu
fi

# the depth limit: 16,500 levels capture as 16,384 and one empty directory
"$MK" -e 5000 "$D/src16" 16500
ferry create -o source="$D/src16" tank/deep
run lim "$FERRY" snapshot -v tank/deep@a
is "$rc" 3 "a tree deeper than 16384 levels captures partially (exit 3)"
like "$(cat "$T/err")" "/d/d: directory deeper than 16384 levels; recorded empty" "with a warning naming the directory"
like "$(cat "$T/err")" "missing 1 unreadable entries" "counted as one unreadable entry"
lim "$FERRY" restore tank/deep@a "$D/r4"
is "$?" 0 "that snapshot restores"
is "$("$MK" -c "$D/r4")" "16385 empty" "as 16,384 levels and an empty directory below"

# an archive member more than 16384 directories down is skipped
python3 - "$D/deep.tar" <<'EOF'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
def add(name, data=None):
    ti = tarfile.TarInfo(name)
    ti.mtime = 1700000000
    if data is None:
        ti.type = tarfile.DIRTYPE
        ti.mode = 0o755
        t.addfile(ti)
    else:
        ti.size = len(data)
        ti.mode = 0o644
        t.addfile(ti, io.BytesIO(data))
add("keep/file", b"kept\n")
add("/".join(["d"] * 16385))              # a directory at level 16385: kept, empty
add("/".join(["d"] * 16389) + "/f", b"x")  # far below: skipped
add("/".join(["d"] * 16386))              # in the level-16385 directory: skipped
t.close()
EOF
ferry create tank/deepar
run lim "$FERRY" snapshot --from "$D/deep.tar" tank/deepar@a
is "$rc" 3 "a tar with members below the limit captures partially (exit 3)"
is "$(grep -c 'member deeper than 16384 directory levels; skipped' "$T/err")" 2 "each such member warned"
ferry restore tank/deepar@a "$D/r5"
is "$(cat "$D/r5/keep/file")" kept "the rest of the archive is there"
is "$("$MK" -c "$D/r5")" "16385 empty" "and the chain stops at the limit"
rm -rf "$D/r5" "$D/deep.tar"

# restore refuses a deeper tree (written into the pool without the checks
# capture and recv make, as only a corrupt pool holds one)
"$MK" -s tank/deep@corrupt 16390
run lim "$FERRY" restore tank/deep@corrupt "$D/r6"
is "$rc" 1 "restore of a tree deeper than the limit fails"
like "$(cat "$T/err")" "deeper than 16384 directory levels" "with a clear error"
lim "$FERRY" restore --format tar tank/deep@corrupt >/dev/null 2>"$T/err"
is "$?" 1 "restore --format tar of it fails too"
like "$(cat "$T/err")" "deeper than 16384 directory levels" "with the same error"
"$MK" -s tank/deep@edge 16384
run lim "$FERRY" restore tank/deep@edge "$D/r7"
is "$rc" 0 "a tree exactly at the limit (a file in the level-16384 directory) restores"
is "$("$MK" -c "$D/r7")" "16384 not empty" "whole"
rm -rf "$D/r6" "$D/r7"
ferry destroy tank/deep@corrupt
ferry destroy tank/deep@edge

# send | recv of the 10,000-level tree, full and incremental, into a gzip
# pool, then restore from there (recv's and send's walks are iterative too)
ferry pool create -o compression=gzip-7 bk "$D/bk"
run sh -c "'$FERRY' send tank/fs@a | prlimit --nofile=64:64 '$FERRY' recv bk/fs"
is "$rc" 0 "send | recv of the 10,000-level tree"
run sh -c "'$FERRY' send -c -i @a tank/fs@b | prlimit --nofile=64:64 '$FERRY' recv bk/fs"
is "$rc" 0 "and of the incremental after it"
run sh -c "'$FERRY' send -R tank/fs@b | '$FERRY' recv bk/rep"
is "$rc" 0 "and of a -R package of both"
for s in bk/fs@a bk/fs@b bk/rep@b; do
	rm -rf "$D/rb"
	run lim "$FERRY" restore "$s" "$D/rb"
	if [ "$rc" = 0 ]; then run prlimit --nofile=16:16 "$CMP" "$D/src" "$D/rb"; fi
	is "$rc" 0 "$s restores identical to the 10,000-level source"
done
rm -rf "$D/rb"
is "$(ferry list -H -p -o logicalreferenced bk/fs@b)" "$(ferry list -H -p -o logicalreferenced tank/fs@b)" \
	"the received snapshot references what the source's does"

# the end of every write test: gc, then every snapshot restores as expected
run ferry gc tank
is "$rc" 0 "gc"
bad=0
for s in $(ferry list -H -r -t snapshot -o name tank); do
	case $s in
	tank/fs@*) want=$D/src opt= ;;
	tank/ar@*) want=$D/src opt=--no-root ;;
	tank/gnu@*) want=$D/src4 opt=--no-root ;;
	tank/deep@*) want=$D/r4 opt= ;;
	*) continue ;;
	esac
	rm -rf "$D/rc"
	if ! lim "$FERRY" restore "$s" "$D/rc" 2>"$T/err"; then
		bad=1; diag "restore $s: $(tail -c 300 "$T/err")"; continue
	fi
	"$CMP" $opt "$want" "$D/rc" >"$T/out" 2>&1 || { bad=1; diag "$s: $(tail -c 300 "$T/out")"; }
done
is "$bad" 0 "after gc, every snapshot restores identical to its tree"
done_testing
