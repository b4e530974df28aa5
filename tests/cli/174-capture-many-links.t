#!/bin/sh
# Many hardlinked files in one capture: the capture's map of hardlinked
# inodes grows (it starts at 256 slots and moves to a bigger table past
# half full) while files are still being read by the workers. A file's
# slot was kept as a pointer into the old table, filled when the file was
# done: a write into freed memory, a crash (SIGSEGV) from about 130
# hardlinked inodes on. Now the slot is looked up again when the file is
# done. Trees with 400 inodes linked twice inside the tree, and files
# whose other link is outside it, snapshot, restore with their links,
# send | recv, and change incrementally.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir -p "$S/a" "$S/b" "$T/outside"
python3 - "$S" "$T/outside" <<'EOF'
import os, sys
src, out = sys.argv[1], sys.argv[2]
for i in range(400):
    p = os.path.join(src, "a", "f%03d" % i)
    with open(p, "wb") as f:
        f.write(os.urandom(1 + i * 37 % 9000))
    os.link(p, os.path.join(src, "b", "g%03d" % i))
for i in range(200):
    p = os.path.join(out, "o%03d" % i)
    with open(p, "wb") as f:
        f.write(os.urandom(1 + i * 53 % 5000))
    os.link(p, os.path.join(src, "b", "o%03d" % i))
EOF
ferry create -o source="$S" -o compression=lz4 tank/fs
run ferry snapshot tank/fs@one
is "$rc" 0 "snapshot of 600 hardlinked inodes"
ferry restore tank/fs@one "$T/r1"
# the links outside the tree cannot come back: compare the part inside
run "$FERRY_TOOLS/treecmp" --no-root "$S/a" "$T/r1/a"
is "$rc:$(cat "$T/out")" "0:" "restored a/ identical, links included"
is "$(stat -c %h "$T/r1/a/f007"):$(stat -c %i "$T/r1/a/f007")" \
	"2:$(stat -c %i "$T/r1/b/g007")" "a/f007 and b/g007 are one inode again"
cmp -s "$S/b/o123" "$T/r1/b/o123" && ok "a file linked from outside restores its content" ||
	not_ok "b/o123 differs"
cp -a "$S" "$T/copy-one"
rm -f "$S/b"/o*

# an incremental: 300 more linked inodes, some contents changed
python3 - "$S" <<'EOF'
import os, sys
src = sys.argv[1]
os.makedirs(os.path.join(src, "c"))
for i in range(300):
    p = os.path.join(src, "c", "h%03d" % i)
    with open(p, "wb") as f:
        f.write(os.urandom(1 + i * 29 % 7000))
    os.link(p, os.path.join(src, "a", "h%03d" % i))
for i in range(0, 400, 7):
    with open(os.path.join(src, "a", "f%03d" % i), "ab") as f:
        f.write(b"changed\n")
EOF
run ferry snapshot tank/fs@two
is "$rc" 0 "incremental snapshot adding 300 hardlinked inodes"
cp -a "$S" "$T/copy-two"
ferry restore tank/fs@two "$T/r2"
run "$FERRY_TOOLS/treecmp" --no-root "$S" "$T/r2"
is "$rc:$(cat "$T/out")" "0:" "the incremental restores identical, links included"

# through a stream
ferry pool create dst "$T/p/dst"
ferry send tank/fs@one >"$T/s1"
ferry send -i @one tank/fs@two >"$T/s2"
run ferry recv dst/fs <"$T/s1"
is "$rc" 0 "recv of the full stream"
run ferry recv dst/fs <"$T/s2"
is "$rc" 0 "recv of the incremental"

# the control: the same trees in one go
ferry pool create ctl "$T/p/ctl"
ferry create -o compression=lz4 ctl/fs
ferry snapshot --from "$T/copy-one" ctl/fs@one
ferry snapshot --from "$T/copy-two" ctl/fs@two
after_check -e "/fs@one=$T/copy-one" -e "/fs@two=$T/copy-two" tank/fs ctl/fs "many hardlinks"
after_check -e "/fs@one=$T/copy-one" -e "/fs@two=$T/copy-two" dst/fs ctl/fs "many hardlinks, received"
done_testing
