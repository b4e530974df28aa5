#!/bin/sh
# Issue 11, item 3: ferry diff [-FHth] prints zfs diff's lines (the
# format of OpenZFS's lib/libzfs/libzfs_diff.c): M/+/-/R, R as
# "OLD -> NEW" (-H: tab), -F's type column, -t's ctime first column
# ("%10d.%09d"), the directory whose names changed marked M (not the
# directories above a modified file), a link count change as "\t(+1)",
# names \0ooo-escaped (-h: as they are). Files are known by inode: a
# renamed directory's unchanged files are not reported, a changed one is
# reported as renamed. Bad input: rc 1 and one line.
. "$(dirname "$0")/lib.sh"

S="$T/src"
mkdir -p "$S/d" "$S/movedir" "$S/rmdir"
echo inner >"$S/d/inner"
mkfifo "$S/fifo"
echo gone >"$S/gone"
echo keep >"$S/keep"
echo linked >"$S/linked"
echo mod >"$S/mod"
echo a >"$S/movedir/a"
echo b >"$S/movedir/b"
echo old >"$S/old"
echo x >"$S/rmdir/x"
ln -s target "$S/sym"
echo t >"$S/tchange"
echo u >"$S/unlink1"
ln "$S/unlink1" "$S/unlink2"
ferry pool create tank "$T/tank"
ferry create -o source="$S" tank/a
ferry snapshot tank/a@s1

# one change of every kind. ferry knows a file by its inode number, which
# a filesystem gives again to a file created after a removal (zfs has a
# generation number; ferry sees one file renamed): so every file is
# created before any is removed, but for tchange, whose inode only the
# directory made next can take (a type change: - and + either way)
sleep 0.05
echo more >>"$S/mod"
mv "$S/old" "$S/new"
ln "$S/linked" "$S/d/link2"
echo created >"$S/created"
printf 'w\n' >"$S/$(printf 'a\nb\tc\377')"
mkfifo "$S/p2"
ln -s target "$S/s2"
mv "$S/movedir" "$S/moved2"
echo more >>"$S/moved2/b"
rm "$S/tchange"
mkdir "$S/tchange"
rm "$S/unlink2"
rm "$S/gone"
rm -r "$S/rmdir"
ferry snapshot tank/a@s2

run ferry diff -F tank/a@s1 tank/a@s2
is "$rc:$(cat "$T/out")" "0:M	/	/
M	/	/d
M	F	/mod
R	/	/movedir -> /moved2
R	F	/movedir/b -> /moved2/b
+	F	/a\\0012b\\0011c\\0377
+	F	/created
M	F	/linked	(+1)
-	F	/gone
R	F	/old -> /new
+	|	/p2
-	/	/rmdir
+	@	/s2
-	F	/tchange
+	/	/tchange
M	F	/unlink1	(-1)
-	F	/rmdir/x" "diff -F: every change type and file type, as zfs diff -F prints them"

run ferry diff tank/a@s1 tank/a@s2
is "$rc:$(cat "$T/out")" "0:M	/
M	/d
M	/mod
R	/movedir -> /moved2
R	/movedir/b -> /moved2/b
+	/a\\0012b\\0011c\\0377
+	/created
M	/linked	(+1)
-	/gone
R	/old -> /new
+	/p2
-	/rmdir
+	/s2
-	/tchange
+	/tchange
M	/unlink1	(-1)
-	/rmdir/x" "without -F: no type column"

run ferry diff -H -F tank/a@s1 tank/a
is "$rc:$(grep '^R' "$T/out")" "0:R	/	/movedir	/moved2
R	F	/movedir/b	/moved2/b
R	F	/old	/new" "-H: a rename's paths tab-separated, no arrow (and DATASET: its newest snapshot)"

# -h: names as they are (a newline in a name then breaks the line, as in zfs)
ferry diff -h tank/a@s1 tank/a@s2 >"$T/raw"
python3 -c 'import sys; d = open(sys.argv[1], "rb").read()
sys.exit(0 if b"\n+\t/a\nb\tc\xff\n+\t/created\n" in d and b"\\0" not in d else 1)' "$T/raw" &&
	ok "-h: the name's bytes unescaped" || { not_ok "-h: the name's bytes unescaped"; diag "$(od -c "$T/raw" | head -20)"; }

# -t: the ctime first, as zfs prints it; device nodes when capture keeps them
ct() { python3 -c 'import os,sys; s=divmod(os.lstat(sys.argv[1]).st_ctime_ns, 10**9); print("%10d.%09d" % s)' "$1"; }
ct_new=$(ct "$S/new")
sleep 0.05
echo changed >"$S/keep"
devs=
if [ "$(id -u)" = 0 ] && mknod "$S/bdev" b 7 250 2>/dev/null && mknod "$S/cdev" c 1 3 2>/dev/null; then
	devs=1
fi
rm "$S/new"
ferry snapshot tank/a@s3
run ferry diff -t -F tank/a@s2 tank/a@s3
if [ -n "$devs" ]; then
	want="$(ct "$S")	M	/	/
$(ct "$S/keep")	M	F	/keep
$(ct "$S/bdev")	+	B	/bdev
$(ct "$S/cdev")	+	C	/cdev
$ct_new	-	F	/new"
else
	want="$(ct "$S")	M	/	/
$(ct "$S/keep")	M	F	/keep
$ct_new	-	F	/new"
fi
is "$rc:$(cat "$T/out")" "0:$want" "-t -F: the ctime (the older one of a removal), padded as zfs pads it${devs:+; block and character devices}"
[ -n "$devs" ] || ok "# SKIP device nodes need root"
like "$(ferry diff -t tank/a@s2 tank/a@s3 | head -1)" "^ *[0-9]+\.[0-9]{9}	M	/$" "-t without -F"

# an unchanged file below a renamed directory is not reported; a moved
# one is; an edited-and-replaced file (new inode, same name) is - then +
mkdir -p "$S/tree/sub"
echo same >"$S/tree/sub/same"
echo stays >"$S/tree/stays"
ferry snapshot tank/a@s4
mkdir "$S/newparent"
mv "$S/tree" "$S/newparent/tree"
mv "$S/newparent/tree/stays" "$S/moved-out"
cp "$S/keep" "$S/keep.tmp" && mv "$S/keep.tmp" "$S/keep"
ferry snapshot tank/a@s5
run ferry diff -F tank/a@s4 tank/a@s5
is "$rc:$(sort "$T/out")" "0:$(printf '%s\n' \
	'+	/	/newparent' \
	'+	F	/keep' \
	'-	F	/keep' \
	'M	/	/' \
	'R	/	/tree -> /newparent/tree' \
	'R	F	/tree/stays -> /moved-out' | sort)" \
	"a directory moved into a new one: one R, its unchanged files unreported"

# snapshots of archives have no inode numbers: a moved file is - and +
mkdir -p "$T/ar/x"
echo 1 >"$T/ar/x/f"
tar -C "$T/ar" -cf "$T/a1.tar" .
sleep 0.05
mv "$T/ar/x/f" "$T/ar/g"
tar -C "$T/ar" -cf "$T/a2.tar" .
ferry create tank/ar
ferry snapshot --from "$T/a1.tar" tank/ar@1
ferry snapshot --from "$T/a2.tar" tank/ar@2
run ferry diff -F tank/ar@1 tank/ar@2
is "$rc:$(cat "$T/out")" "0:M	/	/
M	/	/x
+	F	/g
-	F	/x/f" "an archive's snapshots: a move is a removal and an addition"

# JSON: the same changes, with the ctime and the link count change
run ferry diff --json tank/a@s1 tank/a@s2
is "$rc:$(python3 -c 'import json,sys
for c in json.load(sys.stdin)["diff"]["changes"]:
    l = c["change"] + "\t" + c["type"] + "\t" + c["path"]
    if "newpath" in c: l += " -> " + c["newpath"]
    if "links" in c: l += "\t(%+d)" % c["links"]
    assert "." in c["ctime"]
    print(l)' <"$T/out")" "0:$(ferry diff -F tank/a@s1 tank/a@s2)" "--json: the changes -F prints, in its order"

# bad input: rc 1, one line on stderr, nothing on stdout
ferry create -o source="$S" tank/b
ferry snapshot tank/b@x
refused 1 "'tank/a@s2' is newer than 'tank/a@s1'" "the newer snapshot first" ferry diff tank/a@s2 tank/a@s1
refused 1 "'tank/a@s1' and 'tank/b@x' are snapshots of different datasets" \
	"snapshots of two datasets" ferry diff tank/a@s1 tank/b@x
refused 1 "snapshots of different datasets" "a snapshot and another dataset" ferry diff tank/a@s1 tank/b
refused 1 "cannot diff 'tank/a@nosuch'" "a missing first snapshot" ferry diff tank/a@nosuch tank/a@s1
refused 1 "nosuch" "a missing second snapshot" ferry diff tank/a@s1 @nosuch
refused 1 "dataset 'tank/zz' does not exist" "a missing dataset" ferry diff tank/a@s1 tank/zz
refused 2 "usage: ferry diff" "no operand" ferry diff
is "$(ferry diff tank/a@s2 tank/a@s1 2>/dev/null)" "" "and nothing on standard output"
run ferry diff tank/a@s1 tank/a@s1
is "$rc:$(cat "$T/out")" "0:" "a snapshot does not differ from itself"
run ferry diff --help
like "$rc:$(head -1 "$T/out")" "^0:usage: ferry diff \[-F\] \[-H\] \[-t\] \[-h\]" "--help is the help (-h is zfs's)"

# diff wrote nothing: every snapshot still restores as captured
ferry gc tank >/dev/null
ferry restore tank/a@s5 "$TS/r5"
run "$FERRY_TOOLS/treecmp" --no-root "$S" "$TS/r5"
is "$rc" 0 "tank/a@s5 restores the tree"
done_testing
