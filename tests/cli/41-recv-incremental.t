#!/bin/sh
# Incremental streams carry only what changed: 1 % of a 2,000-file tree
# changed gives at most 3 % of the full stream, a renamed 10 MB file costs
# less than 1 MiB. A full and five incrementals received into a new pool
# restore identical to the source. -I, -R, -F, replays and wrong bases.
# Every pool ends with gc, its figures and blocks equal to a control that
# got the same snapshots in one go (one -R package, or one plain stream per
# snapshot), and every snapshot restoring identical to a copy of its tree.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
S="$T/src"
mkdir -p "$S"
# 2,000 files of about 2-6 KiB in 20 directories
awk 'BEGIN { srand(7); for (d = 0; d < 20; d++) for (f = 0; f < 100; f++) {
	fn = sprintf("'"$S"'/d%02d/f%03d.txt", d, f); if (f == 0) system("mkdir -p '"$S"'/d" sprintf("%02d", d));
	n = 40 + int(rand() * 80); for (i = 0; i < n; i++) printf "%d %s %d\n", d * 1000 + f, "the quick brown fox", int(rand() * 1e9) > fn; close(fn) } }'
head -c 10485760 /dev/urandom >"$S/big.bin"
ferry pool create tank "$T/p/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@s0
cp -a "$S" "$TS/tree-s0"
ferry send tank/fs@s0 >"$T/full"
full=$(stat -c %s "$T/full")
is "$(find "$S" -type f | wc -l)" 2001 "a 2,000-file tree (and one 10 MB file)"

# 1: change 1 % of the files (20 of 2,000)
for d in 03 07 11 15; do for f in 010 020 030 040 050; do
	echo "changed $d $f" >>"$S/d$d/f$f.txt"; done; done
ferry snapshot tank/fs@s1
cp -a "$S" "$TS/tree-s1"
ferry send -i @s0 tank/fs@s1 >"$T/i1"
inc=$(stat -c %s "$T/i1")
max=$((full * 3 / 100))
[ "$inc" -le "$max" ] && ok "1 % changed: incremental $inc bytes <= 3 % of full $full" ||
	not_ok "1 % changed: incremental $inc bytes > 3 % of full $full"
ferry send -nvP -i @s0 tank/fs@s1 >"$T/est"
is "$(sed -n 's/^size\t//p' "$T/est")" "$inc" "-n -v -P: size line is the exact stream size"
like "$(head -1 "$T/est")" "^incremental	s0	tank/fs@s1	$inc\$" "-n -v -P: incremental line as zfs"

# 2: rename the 10 MB file
mv "$S/big.bin" "$S/d05/renamed.bin"
ferry snapshot tank/fs@s2
cp -a "$S" "$TS/tree-s2"
ferry send -i tank/fs@s1 tank/fs@s2 >"$T/i2"
ren=$(stat -c %s "$T/i2")
[ "$ren" -lt 1048576 ] && ok "renamed 10 MB file: stream of $ren bytes < 1 MiB" ||
	not_ok "renamed 10 MB file: stream of $ren bytes"

# 3..5: more changes: new files, deletions, a moved directory, a modified big file
mkdir "$S/newdir"; seq 1 50000 >"$S/newdir/numbers"; rm "$S/d01/f001.txt" "$S/d02/f002.txt"
ferry snapshot tank/fs@s3
cp -a "$S" "$TS/tree-s3"
mv "$S/d09" "$S/newdir/d09-moved"
ferry snapshot tank/fs@s4
cp -a "$S" "$TS/tree-s4"
printf 'patched' | dd of="$S/d05/renamed.bin" bs=1 seek=5000000 conv=notrunc 2>/dev/null
ln "$S/newdir/numbers" "$S/hardlink"; chmod 600 "$S/d00/f000.txt"
ferry snapshot tank/fs@s5
cp -a "$S" "$TS/tree-s5"
ferry send -i @s3 tank/fs@s4 >"$T/i4"
mv4=$(stat -c %s "$T/i4")
[ "$mv4" -lt 65536 ] && ok "moved directory: stream of $mv4 bytes resends no data" ||
	not_ok "moved directory: stream of $mv4 bytes"

# restore to a new pool: full + five incrementals
ferry pool create -o compression=gzip-7 bk "$T/p/bk"
run ferry recv bk/fs <"$T/full"
is "$rc" 0 "full stream received"
prev=s0
for s in s1 s2 s3 s4 s5; do
	ferry send -i @$prev tank/fs@$s | ferry recv bk/fs
	is "$?" 0 "incremental $prev -> $s received"
	prev=$s
done
is "$(ferry list -H -t snapshot -o name -r bk | tr '\n' ' ')" \
	"bk/fs@s0 bk/fs@s1 bk/fs@s2 bk/fs@s3 bk/fs@s4 bk/fs@s5 " "all six snapshots are there"
# bk's control: the six snapshots in one -R package
ferry pool create -o compression=gzip-7 ctl-bk "$T/p/ctl-bk"
ferry send -R tank/fs@s5 | ferry recv ctl-bk/fs
ferry restore bk/fs@s5 "$T/restored"
run "$TREECMP" "$S" "$T/restored"
is "$rc" 0 "restored tree is identical to the source (treecmp)"
[ "$rc" = 0 ] || diag "$(cat "$T/out")"
ferry restore bk/fs@s2 "$T/restored2"
is "$(cmp "$T/restored2/d05/renamed.bin" "$T/restored/d05/renamed.bin" >/dev/null 2>&1; echo $?)" 1 \
	"an older snapshot restores its own content"
is "$(ferry get -H -o value guid bk/fs@s3)" "$(ferry get -H -o value guid tank/fs@s3)" \
	"received snapshots keep the sender's guid"

# refusals: replay, a base that is not the newest, a missing base
ferry send -i @s4 tank/fs@s5 >"$T/i45"
refused 1 "already has this snapshot" "a replayed incremental is refused" \
	sh -c "'$FERRY' recv bk/fs <'$T/i45'"
ferry pool create bk2 "$T/p/bk2"
ferry send tank/fs@s0 | ferry recv bk2/fs
ferry send -i @s0 tank/fs@s1 | ferry recv bk2/fs
ferry send -i @s0 tank/fs@s2 >"$T/i02"
refused 1 "not the newest snapshot" "an incremental from an older base is refused without -F" \
	sh -c "'$FERRY' recv bk2/fs <'$T/i02'"
run sh -c "'$FERRY' send -i @s0 tank/fs@s2 | '$FERRY' recv -F bk2/fs"
is "$rc" 0 "-F rolls back to the base and receives"
is "$(ferry list -H -t snapshot -o name -r bk2 | tr '\n' ' ')" "bk2/fs@s0 bk2/fs@s2 " "-F dropped s1"
# bk2's control: s0 and s2, one plain stream each, never s1 to roll back
ferry pool create ctl-bk2 "$T/p/ctl-bk2"
ferry send tank/fs@s0 | ferry recv ctl-bk2/fs
ferry send -i @s0 tank/fs@s2 | ferry recv ctl-bk2/fs
ferry send -i @s0 tank/fs@s1 >"$T/i01"
refused 1 "does not exist" "an incremental into a missing dataset is refused" \
	sh -c "'$FERRY' recv bk2/none <'$T/i01'"
ferry send tank/fs@s3 >"$T/f3"
refused 1 "has snapshots" "a full stream into a dataset with snapshots is refused" \
	sh -c "'$FERRY' recv bk2/fs <'$T/f3'"

# -I: every intermediate snapshot in one package
ferry pool create bk3 "$T/p/bk3"
ferry send tank/fs@s1 | ferry recv bk3/fs
run sh -c "'$FERRY' send -I @s1 tank/fs@s5 | '$FERRY' recv bk3/fs"
is "$rc" 0 "-I package received"
is "$(ferry list -H -t snapshot -o name -r bk3 | tr '\n' ' ')" \
	"bk3/fs@s1 bk3/fs@s2 bk3/fs@s3 bk3/fs@s4 bk3/fs@s5 " "-I brings every intermediate"
# bk3's control: the same snapshots, one plain stream each, no -I package
ferry pool create ctl-bk3 "$T/p/ctl-bk3"
ferry send tank/fs@s1 | ferry recv ctl-bk3/fs
prev=s1
for sn in s2 s3 s4 s5; do
	ferry send -i @$prev tank/fs@$sn | ferry recv ctl-bk3/fs
	prev=$sn
done

# -R: a dataset tree with all snapshots and properties; -d and -e names
ferry create -o source="$S/d00" tank/fs/child
ferry set user:tag=x tank/fs/child
ferry snapshot tank/fs/child@s5
ferry pool create bk4 "$T/p/bk4"
ferry create bk4/a
run sh -c "'$FERRY' send -R tank/fs@s5 | '$FERRY' recv -d bk4/a"
is "$rc" 0 "-R package received with -d"
is "$(ferry list -H -t all -o name -r bk4/a | tr '\n' ' ')" \
	"bk4/a bk4/a/fs bk4/a/fs@s0 bk4/a/fs@s1 bk4/a/fs@s2 bk4/a/fs@s3 bk4/a/fs@s4 bk4/a/fs@s5 bk4/a/fs/child bk4/a/fs/child@s5 " \
	"-R -d: the tree with every snapshot"
is "$(ferry get -H -o value,source user:tag bk4/a/fs/child)" "$(printf 'x\treceived')" "-R carries properties"
ferry restore bk4/a/fs/child@s5 "$T/child"
run "$TREECMP" "$S/d00" "$T/child"
is "$rc" 0 "-R child restores identical"
run sh -c "'$FERRY' send -R tank/fs@s5 | '$FERRY' recv -e bk4/e"
is "$rc" 1 "-e into a missing parent is refused"
ferry create bk4/e
run sh -c "'$FERRY' send -R tank/fs@s5 | '$FERRY' recv -e bk4/e"
is "$rc" 0 "-R -e into an existing parent"
is "$(ferry list -H -o name -r bk4/e | tr '\n' ' ')" "bk4/e bk4/e/fs bk4/e/fs/child " "-R -e names"
# bk4's control, e: the same package in one go (while the sender still has
# s1); a: further down, the final tree in one package
ferry pool create ctl-bk4 "$T/p/ctl-bk4"
ferry create ctl-bk4/e
ferry send -R tank/fs@s5 | ferry recv -e ctl-bk4/e
# -R -F destroys what the sender no longer has
ferry destroy tank/fs@s1
run sh -c "'$FERRY' send -R -i @s4 tank/fs@s5 | '$FERRY' recv -F bk4/x"
like "$rc:$(grep -v "cannot send" "$T/err")" \
	"^1:ferry: cannot receive into 'bk4/x': 'bk4/x' does not exist: an incremental stream needs its base snapshot$" \
	"an incremental package into a dataset that does not exist is refused"
is "$(ferry list -H -o name bk4/x 2>&1)" "ferry: cannot list 'bk4/x': dataset does not exist" "and makes no bk4/x"
ferry snapshot -r tank/fs@s6
run sh -c "'$FERRY' send -R -i @s5 tank/fs@s6 | '$FERRY' recv -d -F bk4/a"
is "$rc" 0 "-R -i -F incremental package received"
is "$(ferry list -H -t snapshot -o name bk4/a/fs | tr '\n' ' ')" \
	"bk4/a/fs@s0 bk4/a/fs@s2 bk4/a/fs@s3 bk4/a/fs@s4 bk4/a/fs@s5 bk4/a/fs@s6 " \
	"-R -F destroyed the snapshot the sender no longer has"
ferry create ctl-bk4/a
ferry send -R tank/fs@s6 | ferry recv -d ctl-bk4/a

# -n: a dry run checks and commits nothing
ferry pool create bk5 "$T/p/bk5"
run sh -c "'$FERRY' send -I @s0 tank/fs@s3 | '$FERRY' recv -n -v bk5/fs"
is "$rc" 1 "-n: an incremental package into an empty dataset is still refused"
bk5_packs=$(ls "$T/p/bk5/packs") # the new pool's checkpoints (docs/ferry-nodes.md)
run sh -c "'$FERRY' send tank/fs@s0 | '$FERRY' recv -n -v bk5/fs"
is "$rc" 0 "-n -v: dry run of a full stream"
like "$(cat "$T/out")" "would receive bk5/fs@s0" "-n -v reports"
is "$(ferry list -H -o name -r bk5 | tr '\n' ' ')" "bk5 " "-n committed nothing"
is "$(ls "$T/p/bk5/packs" 2>/dev/null)" "$bk5_packs" "-n wrote no pack"
# a volume: its image comes back byte for byte, its volsize with -p
head -c 1000000 /dev/urandom >"$T/img"; seq 1 100000 >>"$T/img"
ferry create -V 4M tank/vol
ferry snapshot --from "$T/img" tank/vol@v
ferry send -p tank/vol@v | ferry recv bk/vol
ferry restore bk/vol@v "$T/img.out"
is "$(cmp "$T/img" "$T/img.out" >/dev/null 2>&1; echo $?)" 0 "a received volume restores its image"
is "$(ferry get -H -o value volsize bk/vol)" "4M" "and keeps the sender's volsize (-p)"
if command -v script >/dev/null 2>&1; then
	script -qec "'$FERRY' send tank/fs@s0" /dev/null >"$T/tty.out" 2>&1
	trc=$?
	like "$(cat "$T/tty.out")" "refusing to write a stream to a terminal" "send refuses a terminal"
	is "$trc" 1 "send to a terminal exits 1"
fi

# bk's control gets the volume captured straight from the image
ferry create -V 4M ctl-bk/vol
ferry snapshot --from "$T/img" ctl-bk/vol@v
# bk5 got nothing: its control is a pool that never had anything
ferry pool create ctl-bk5 "$T/p/ctl-bk5"
# the sender's control: what tank has left (s1 is destroyed), each tree
# captured whole from its copy
ferry pool create ctl-tank "$T/p/ctl-tank"
ferry create ctl-tank/fs
for sn in s0 s2 s3 s4 s5; do ferry snapshot --from "$TS/tree-$sn" ctl-tank/fs@$sn; done
ferry create ctl-tank/fs/child
ferry snapshot --from "$S/d00" ctl-tank/fs/child@s5
ferry snapshot --from "$TS/tree-s5" ctl-tank/fs@s6
ferry snapshot --from "$S/d00" ctl-tank/fs/child@s6
ferry create -V 4M ctl-tank/vol
ferry snapshot --from "$T/img" ctl-tank/vol@v
# Every snapshot, wherever it was received, is compared with the copy of
# its tree (nothing changed in the source between s5 and s6; the child's
# tree, d00, has not changed since s5).
set -- -e "*/child@*=$S/d00" -e "*fs@s6=$TS/tree-s5" -e "/vol@v=$T/img"
for sn in s0 s1 s2 s3 s4 s5; do set -- "$@" -e "*fs@$sn=$TS/tree-$sn"; done
after_check "$@" bk ctl-bk "full and five incrementals"
after_check "$@" bk2 ctl-bk2 "recv -F of an older base"
after_check "$@" bk3 ctl-bk3 "an -I package"
after_check "$@" bk4 ctl-bk4 "-R -d, -R -e, -R -i -F"
after_check "$@" bk5 ctl-bk5 "recv -n"
after_check "$@" tank ctl-tank "the sender, after destroy of s1"
done_testing
