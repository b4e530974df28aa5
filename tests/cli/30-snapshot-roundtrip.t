#!/bin/sh
# Snapshot → restore round trip of a tree with every file type, a sparse
# file, hardlinks, xattrs, ACLs, odd names, special modes and exact mtimes;
# also through --format tar and --file. Ends with gc and a comparison with
# a control pool that captured copies of the same trees afresh.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir -p "$S/dir/sub" "$S/empty"
echo hello >"$S/a.txt"
: >"$S/zero-length"
seq 1 200000 >"$S/dir/numbers"
head -c 300000 /dev/urandom >"$S/dir/random"
# hardlinks: three names, two directories
ln "$S/dir/numbers" "$S/dir/sub/numbers-link"
ln "$S/dir/numbers" "$S/numbers-link2"
ln -s a.txt "$S/rel-link"
ln -s /etc/passwd "$S/abs-link"
ln -s does-not-exist "$S/dangling"
mkfifo "$S/fifo"
if [ "$(id -u)" = 0 ]; then
	mknod "$S/null-dev" c 1 3
	mknod "$S/blk-dev" b 7 200
	chown 1234:5678 "$S/a.txt"
	chown -h 4321:8765 "$S/rel-link"
fi
# a 64 MiB sparse file with two written bytes
truncate -s 64M "$S/sparse"
printf x | dd of="$S/sparse" bs=1 seek=4096 conv=notrunc 2>/dev/null
printf y | dd of="$S/sparse" bs=1 seek=60000000 conv=notrunc 2>/dev/null
# a file that ends in a hole, and one full of zeros
truncate -s 1M "$S/tail-hole"
printf data >"$S/tail-hole"
truncate -s 1M "$S/tail-hole"
head -c 500000 /dev/zero >"$S/zeros"
# odd names
echo sp >"$S/with space"
echo nl >"$S/new
line"
echo bin >"$S/$(printf 'bytes-\377\376-x')"
long=$(printf 'L%.0s' $(seq 1 255))
echo long >"$S/$long"
d="$S/deep"
for i in $(seq 1 60); do d="$d/n$i"; done
mkdir -p "$d" && echo bottom >"$d/file"
# modes
chmod 4755 "$S/dir/numbers"
chmod 2750 "$S/dir/sub"
chmod 1777 "$S/empty"
chmod 0600 "$S/with space"
chmod 0000 "$S/zero-length"
# xattrs and an ACL
setfattr -n user.comment -v "hello world" "$S/a.txt"
setfattr -n user.bin -v 0x00ff00 "$S/dir/random"
setfattr -n user.dir -v yes "$S/dir"
[ "$(id -u)" = 0 ] && setfattr -n trusted.t -v secret "$S/a.txt"
setfacl -m u:1000:rwx "$S/dir/random" 2>/dev/null
setfacl -d -m g:100:rx "$S/dir/sub" 2>/dev/null
# exact mtimes, directories too (set last, deepest first)
touch -h -d "2001-02-03 04:05:06.123456789" "$S/rel-link"
touch -d "1999-12-31 23:59:59.999999999" "$S/a.txt"
find "$S" -depth -type d -exec touch -d "2010-01-01 00:00:00.5" {} +
touch -d "2011-11-11 11:11:11.111111111" "$S/dir"

ferry create -o source="$S" tank/fs
run ferry snapshot tank/fs@one
is "$rc" 0 "snapshot of a tree with every file type"
cp -a "$S" "$T/copy-one"
run ferry restore tank/fs@one "$T/r1"
is "$rc" 0 "restore into a new directory"
run "$TREECMP" "$S" "$T/r1"
is "$rc" 0 "restored tree is identical (treecmp)"
[ "$rc" = 0 ] || diag "$(cat "$T/out")"
# into an existing empty directory that is setgid and of another group, new
# files would take its group: restore must still set every owner exactly
if [ "$(id -u)" = 0 ]; then
	mkdir "$T/rsgid" && chgrp 4242 "$T/rsgid" && chmod 2775 "$T/rsgid"
	run ferry restore tank/fs@one "$T/rsgid"
	is "$rc" 0 "restore into a setgid directory of another group"
	run "$TREECMP" --no-root "$S" "$T/rsgid"
	is "$rc" 0 "restored into a setgid directory of another group: owners exact"
	[ "$rc" = 0 ] || diag "$(cat "$T/out")"
fi
alloc=$(du -k "$T/r1/sparse" | cut -f1)
[ "$alloc" -lt 2048 ] && ok "64 MiB sparse file stays sparse (${alloc}K allocated)" ||
	not_ok "sparse file allocates ${alloc}K"
is "$(stat -c %h "$T/r1/dir/numbers")" 3 "hardlinks keep their link count"
is "$(stat -c %i "$T/r1/dir/numbers")" "$(stat -c %i "$T/r1/numbers-link2")" "hardlinks share an inode"
is "$(getfattr --only-values -n user.comment "$T/r1/a.txt" 2>/dev/null)" "hello world" "xattr restored"
like "$(getfacl -n -c "$T/r1/dir/random" 2>/dev/null)" "user:1000:rwx" "ACL restored"

# treecmp itself notices a difference
touch -d "2001-01-01 00:00:00.1" "$T/r1/a.txt"
run "$TREECMP" "$S" "$T/r1"
is "$rc" 1 "treecmp reports a changed mtime"
like "$(cat "$T/out")" "a.txt: mtime differs" "treecmp names the first difference"

# non-empty target refused without --force; --force overwrites
refused 1 "not empty" "restore refuses a non-empty directory" ferry restore tank/fs@one "$T/r1"
run ferry restore --force tank/fs@one "$T/r1"
is "$rc" 0 "restore --force into the same directory"
run "$TREECMP" "$S" "$T/r1"
is "$rc" 0 "--force restore is identical again"

# one file
run ferry restore --file dir/numbers tank/fs@one "$T/one"
is "$rc" 0 "restore --file"
cmp -s "$S/dir/numbers" "$T/one/dir/numbers" && ok "--file restores that file's content" ||
	not_ok "--file content"
is "$(stat -c %a:%Y "$T/one/dir/numbers")" "$(stat -c %a:%Y "$S/dir/numbers")" "--file keeps mode and mtime"
[ ! -e "$T/one/a.txt" ] && ok "--file restores nothing else" || not_ok "--file restored more"
refused 1 "not in snapshot" "--file of a missing path" ferry restore --file nope tank/fs@one "$T/one2"

# tar through libarchive: written by restore --format, read back by snapshot --from
run sh -c "\"$FERRY\" restore --format tar tank/fs@one >\"$T/x.tar\""
is "$rc" 0 "restore --format tar"
tar -tf "$T/x.tar" >"$T/list" 2>/dev/null
is "$?" 0 "GNU tar reads the archive"
# holes stay out of the archive (a sparse map), and GNU tar puts them back
size=$(stat -c %s "$T/x.tar")
[ "$size" -lt 8388608 ] && ok "the 64 MiB sparse file's holes are not in the tar ($size bytes)" ||
	not_ok "the tar is $size bytes"
mkdir "$T/gnutar"
tar -xf "$T/x.tar" -C "$T/gnutar" 2>"$T/err"
is "$?" 0 "GNU tar extracts the archive"
for f in sparse tail-hole zeros; do
	cmp -s "$S/$f" "$T/gnutar/$f" && ok "GNU tar restores $f's content" || not_ok "$f differs"
done
alloc=$(du -k "$T/gnutar/sparse" | cut -f1)
[ "$alloc" -lt 2048 ] && ok "GNU tar restores the sparse file sparse (${alloc}K)" ||
	not_ok "GNU tar's sparse file allocates ${alloc}K"
ferry create tank/fromtar
run ferry snapshot --from "$T/x.tar" tank/fromtar@t
is "$rc" 0 "snapshot --from x.tar"
run ferry restore tank/fromtar@t "$T/untar"
is "$rc" 0 "restore the snapshot of x.tar"
run "$TREECMP" --no-root --no-alloc "$S" "$T/untar"
is "$rc" 0 "tar round trip identical"
[ "$rc" = 0 ] || diag "$(cat "$T/out")"
ferry restore --format tar --file dir tank/fs@one | tar -tf - >"$T/list" 2>/dev/null
like "$(cat "$T/list")" "^dir/sub/numbers-link" "--format tar --file keeps only that subtree"
[ "$(grep -c '^a.txt' "$T/list")" = 0 ] && ok "--file subtree excludes others" || not_ok "tar --file"

# a socket is skipped with a warning; the rest still captured
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$S/sock"
run ferry snapshot tank/fs@two
is "$rc" 0 "socket does not fail the snapshot"
like "$(cat "$T/err")" "sock: socket ignored" "socket warned about by path"
# what @two holds: the tree without the socket, the root's mtime as it was
cp -a "$S" "$T/copy-two"
rm "$T/copy-two/sock"
touch -r "$S" "$T/copy-two"
rm "$S/sock"

# unreadable file: warned, exit 3 (partial), the rest captured
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	mkdir "$T/src2" && echo ok >"$T/src2/fine" && echo no >"$T/src2/secret"
	chmod 000 "$T/src2/secret"
	chmod 777 "$T/src2"
	chmod 711 "$T"
	chown -R 65534 "$T/p" "$FERRY_HOME"
	ferry create -o source="$T/src2" tank/fs2
	chown -R 65534 "$T/p"
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$FERRY" snapshot tank/fs2@x
	is "$rc" 3 "an unreadable file makes the snapshot partial (exit 3)"
	like "$(cat "$T/err")" "secret: cannot open" "unreadable file named in the warning"
	chown -R 0:0 "$T/p" "$FERRY_HOME"
	run ferry restore tank/fs2@x "$T/r2"
	is "$rc" 0 "the partial snapshot restores"
	[ -f "$T/r2/fine" ] && [ ! -e "$T/r2/secret" ] && ok "partial snapshot holds the readable part" ||
		not_ok "partial snapshot content"
	# what @x holds: the readable part only, the root's mtime as it was
	cp -a "$T/src2" "$T/copy-x"
	rm "$T/copy-x/secret"
	touch -r "$T/src2" "$T/copy-x"
fi

# The control: the same trees captured in one go each, from copies, into a
# fresh pool: @two from a copy shares no inode with @one's, so it is read
# whole where tank reused @one's files; the tar once more; fs2@x as a
# complete capture of what the partial one could read. fs is compared
# with the copies themselves.
ferry pool create ctl "$T/p/ctl"
ferry create ctl/fs
ferry snapshot --from "$T/copy-one" ctl/fs@one
ferry snapshot --from "$T/copy-two" ctl/fs@two
ferry create ctl/fromtar
ferry snapshot --from "$T/x.tar" ctl/fromtar@t
if [ -d "$T/copy-x" ]; then
	ferry create ctl/fs2
	ferry snapshot --from "$T/copy-x" ctl/fs2@x
fi
after_check -e "/fs@one=$T/copy-one" -e "/fs@two=$T/copy-two" tank ctl "captures"
done_testing
