#!/bin/sh
# Incremental capture: a 10,000-file tree with 10 changed files reads exactly
# those 10; diff shows them; both snapshots restore exactly. After rollback
# -r and gc, the two snapshots left equal those of a control pool that
# captured copies of their trees afresh.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir "$S"
# 100 directories of 100 small files each
awk -v S="$S" 'BEGIN {
	for (d = 0; d < 100; d++) {
		dir = sprintf("%s/d%02d", S, d); system("mkdir " dir)
		for (f = 0; f < 100; f++) {
			p = sprintf("%s/f%02d", dir, f)
			printf "file %d/%d %s\n", d, f, "some content that is the same everywhere" > p
			close(p)
		}
	}
}'
is "$(find "$S" -type f | wc -l)" 10000 "10,000 files in the source"
ferry create -o source="$S" tank/fs
run ferry snapshot -v tank/fs@one
is "$rc" 0 "first snapshot"
like "$(cat "$T/out")" "files read 10000, files reused 0," "first snapshot reads every file"
cp -a "$S" "$TS/copy-one"
sleep 0.05
for i in 00 11 22 33 44 55 66 77 88 99; do
	echo "changed $i" >>"$S/d$i/f$i"
done
run ferry snapshot -v tank/fs@two
is "$rc" 0 "second snapshot"
like "$(cat "$T/out")" "files read 10, files reused 9990," "incremental reads exactly the 10 changed files"
like "$(cat "$T/out")" "blocks written 10," "and writes only their 10 new blocks"
cp -a "$S" "$TS/copy-two"
run ferry snapshot -v tank/fs@three
like "$rc:$(cat "$T/out")" "^0:.*files read 0, files reused 10000,.*blocks written 0," "unchanged tree: nothing read or written"

# a change that keeps size and mtime is caught by ctime
f="$S/d05/f05"
m=$(stat -c %y "$f")
printf 'FILE' | dd of="$f" bs=1 conv=notrunc 2>/dev/null
touch -d "$m" "$f"
run ferry snapshot -v tank/fs@four
like "$rc:$(cat "$T/out")" "^0:.*files read 1, files reused 9999," "same size and mtime but new ctime: read again"

run ferry restore tank/fs@four "$T/r4"
is "$rc" 0 "restore the incremental snapshot"
run "$TREECMP" --no-root "$S" "$T/r4"
is "$rc" 0 "incremental snapshot restores identically"
run ferry restore --file d00 tank/fs@one "$T/r1"
is "$rc" 0 "restore --file of a directory"
is "$(cat "$T/r1/d00/f00")" "file 0/0 some content that is the same everywhere" "the first snapshot still holds the old content"
is "$(find "$T/r1" -type f | wc -l)" 100 "restore --file of a directory restores its 100 files"

# diff on the Merkle trees
run ferry diff tank/fs@one tank/fs@two
is "$rc" 0 "diff runs"
is "$(grep -c '^M	/d[0-9]*/f' "$T/out")" 10 "diff lists the 10 modified files"
like "$(cat "$T/out")" "^M	/d33/f33$" "diff names a modified file"
mv "$S/d01/f01" "$S/d02/renamed"
echo new >"$S/d03/added"
rm "$S/d04/f04"
ferry snapshot tank/fs@five
run ferry diff -F tank/fs@four @five
is "$rc" 0 "diff -F runs"
like "$(cat "$T/out")" "R	F	/d01/f01 -> /d02/renamed" "diff shows a rename"
like "$(cat "$T/out")" "^\+	F	/d03/added$" "diff shows an addition"
like "$(cat "$T/out")" "^-	F	/d04/f04$" "diff shows a removal"
run ferry diff -H -F tank/fs@four @five
like "$rc:$(grep '^R' "$T/out")" "^0:R	F	/d01/f01	/d02/renamed$" "diff -H: a rename's paths tab-separated, no arrow"
run ferry diff tank/fs@four tank/fs@four
is "$rc:$(cat "$T/out")" "0:" "a snapshot does not differ from itself"
refused 1 "newer" "diff refuses reversed order" ferry diff tank/fs@five tank/fs@four

# rollback drops later snapshots only with -r
refused 1 "more recent snapshots" "rollback without -r refuses" ferry rollback tank/fs@two
refused 2 "usage: ferry rollback \\[-r\\|-R\\] \\[-f\\] SNAPSHOT" "rollback's usage names -R and -f" ferry rollback -x tank/fs@two
run ferry rollback -R -f tank/fs@two
is "$rc" 0 "rollback -r"
run ferry restore tank/fs@five "$T/r5"
is "$rc" 1 "later snapshots are gone after rollback -r"

# The control: only the two snapshots rollback kept, each captured whole
# from a copy of its tree (no file reused from an earlier capture), never
# followed by snapshots to destroy. tank's snapshots are compared with the
# copies themselves (10,000 files: no need to restore the control's too).
ferry pool create ctl "$T/p/ctl"
ferry create ctl/fs
ferry snapshot --from "$TS/copy-one" ctl/fs@one
ferry snapshot --from "$TS/copy-two" ctl/fs@two
after_check -e "/fs@one=$TS/copy-one" -e "/fs@two=$TS/copy-two" tank ctl \
	"incremental captures, then rollback -r"
done_testing
