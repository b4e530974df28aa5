#!/bin/sh
# An incremental capture takes a directory's previous node as it is when
# every entry of the directory is unchanged (issue 14, item 3: no node
# re-encoded or re-hashed for such a directory), and lstats a directory's
# entries in runs on two threads. What it must never do is keep a node
# whose directory did change: after each kind of change below, the
# incremental snapshot's root must be exactly the root a full capture of
# the same tree gives (a fresh dataset, no previous version), and the
# snapshot must restore as the source is, metadata included. Ends with gc
# and after_check against a pool that received the same snapshots in one go.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
S="$T/src"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"

# three levels of directories, a directory of 3,000 entries (its node is
# split into chunks), empty files and directories, a symlink, a hardlink,
# a fifo, xattrs
awk -v S="$S" 'BEGIN {
	for (a = 0; a < 3; a++) for (b = 0; b < 4; b++) {
		dir = sprintf("%s/a%d/b%d", S, a, b); system("mkdir -p " dir "/c")
		for (f = 0; f < 20; f++) {
			p = sprintf("%s/f%02d", dir, f)
			printf "file %d %d %d\n", a, b, f > p
			close(p)
		}
	}
	system("mkdir -p " S "/big")
	for (f = 0; f < 3000; f++) {
		p = sprintf("%s/big/n%04d", S, f)
		printf "%d\n", f > p
		close(p)
	}
}'
: >"$S/empty"
mkdir "$S/emptydir"
ln -s a0/b0 "$S/link"
ln "$S/a1/b1/f01" "$S/a2/hard"
mkfifo "$S/fifo"
setfattr -n user.colour -v blue "$S/a0/b1/f03"
setfattr -n user.colour -v red "$S/a1"

sqlq() { sqlite3 "$1/catalog.db" "$2"; }
root() { sqlq "$T/p/$1" "SELECT hex(s.root) FROM snapshots s JOIN datasets d ON d.id = s.ds_id
	WHERE d.name = '$2' AND s.name = '$3'"; }

ferry create -o source="$S" tank/fs
step=0
# snap DESC: an incremental snapshot of tank/fs and a full capture of the
# same tree into ctl/sN; their roots must be equal, the snapshot must
# restore as the source is
snap() {
	step=$((step + 1))
	ferry snapshot "tank/fs@s$step"
	ferry create -o source="$S" "ctl/s$step"
	ferry snapshot "ctl/s$step@full"
	_r=$(root tank fs "s$step")
	like "$_r" '^[0-9A-F]{64}$' "$1: the incremental snapshot is taken"
	is "$_r" "$(root ctl "s$step" full)" "$1: its root is the full capture's"
	rm -rf "$TS/r"
	ferry restore "tank/fs@s$step" "$TS/r"
	run "$TREECMP" "$S" "$TS/r"
	is "$rc" 0 "$1: the snapshot restores as the source is"
	[ "$rc" = 0 ] || diag "$(cat "$T/out")"
}
snap "the first snapshot"
snap "nothing changed"
chmod 600 "$S/a2/b3/f07"
snap "a deep file's mode"
chmod 700 "$S/a2/b1"
snap "a directory's mode"
touch -m -d '2001-02-03 04:05:06' "$S/a0/b2/c"
snap "an empty directory's mtime"
setfattr -n user.colour -v green "$S/a0/b1/f03"
snap "a deep file's xattr value"
setfattr -n user.colour -v rose "$S/a1"
snap "a directory's xattr"
ln -sfn a1/b1 "$S/link"
snap "a symlink's target (same length)"
ln "$S/a0/b0/f05" "$S/a0/b0/f05-too"
snap "a new hardlink (nlink and ctime of the first)"
rm "$S/big/n1234"
snap "a file gone from the chunked directory"
mv "$S/big/n2000" "$S/big/n2000x"
snap "a file renamed in the chunked directory"
rm "$S/a1/b2/f04" && mkdir "$S/a1/b2/f04"
snap "a file replaced by a directory of the same name"
chown 1:1 "$S/a2/b0/f00"
snap "a deep file's owner"
mkdir "$S/a0/b0/c/new"
snap "a new empty directory deep down"
rmdir "$S/a0/b0/c/new"
snap "and gone again"

# gc, then every snapshot left restores and the figures equal a pool that
# received the same snapshots in one go
ferry destroy tank/fs@s3
ferry destroy tank/fs@s8
ferry pool create ctlr "$T/p/ctlr"
ferry send -R "tank/fs@s$step" | ferry recv ctlr/fs
after_check tank/fs ctlr/fs "after the incremental captures"
done_testing
