#!/bin/sh
# make demo: the main job end to end on an embedded default, in a directory
# of its own (kept for a look afterwards; its path is printed at the end):
# a source pool (lz4) and a backup pool (gzip-7), a sample tree snapshotted
# twice with a change between, a full and an incremental send | recv into
# the backup, list and compressratio on both sides, a restore into a new
# pool (send -R from the backup | recv, then ferry restore), and a check
# that the restored tree is identical. Fails loudly if anything differs.
set -eu
FERRY=${1:-build/ferry}
TOOLS=${FERRY_TOOLS:-$(dirname "$FERRY")/tools}
D=$(mktemp -d "${TMPDIR:-/tmp}/ferry-demo.XXXXXX")
export FERRY_HOME="$D/home"
say() { printf '\n$ %s\n' "$*"; }
run() { say "$*"; "$@"; }
ferry() { "$FERRY" "$@"; }
die() { printf '\ndemo FAILED: %s\n' "$*" >&2; exit 1; }

# ---- a sample tree: text, binary-ish data, zeros -----------------------------------
S="$D/data/home"
mkdir -p "$S/docs" "$S/bin" "$S/vm"
i=0
while [ $i -lt 40 ]; do
	seq $((i * 1000)) $((i * 1000 + 4000)) | sed 's/^/record /' >"$S/docs/report-$i.txt"
	i=$((i + 1))
done
cp /etc/services "$S/docs/services" 2>/dev/null || seq 1 20000 >"$S/docs/services"
head -c 2000000 /dev/urandom >"$S/bin/random.bin"
od -An -tx1 -N 400000 /dev/urandom >"$S/bin/hexdump.txt"
head -c 4194304 /dev/zero >"$S/vm/zeros.img"
ln -s docs/services "$S/link-to-services"

run ferry pool create -o compression=lz4 tank "$D/tank"
run ferry pool create -o compression=gzip-7 backup "$D/backup"
run ferry create -p -o source="$S" tank/host1/home
run ferry create -p backup/host1
run ferry snapshot tank/host1/home@mon

# ---- full backup ----------------------------------------------------------------------
say "ferry send tank/host1/home@mon | ferry recv -v backup/host1/home"
ferry send tank/host1/home@mon | ferry recv -v backup/host1/home

# ---- a change, then an incremental ------------------------------------------------------
echo "tuesday's line" >>"$S/docs/report-7.txt"
mv "$S/bin/random.bin" "$S/bin/renamed.bin"
seq 1 5000 >"$S/docs/new.txt"
rm "$S/docs/report-0.txt"
run ferry snapshot tank/host1/home@tue
say "ferry send -nvP -i @mon tank/host1/home@tue"
ferry send -nvP -i @mon tank/host1/home@tue
say "ferry send -i @mon tank/host1/home@tue | ferry recv -v backup/host1/home"
ferry send -i @mon tank/host1/home@tue | ferry recv -v backup/host1/home

run ferry list -r -t all -o name,used,referenced,compressratio tank backup
run ferry get compression,compressratio tank/host1/home backup/host1/home
run ferry pool status backup

# ---- restore to a new pool: send -R from the backup, then ferry restore ---------------------
run ferry pool create -o compression=lz4 restored "$D/restored"
say "ferry send -R backup/host1/home@tue | ferry recv -d restored"
ferry send -R backup/host1/home@tue | ferry recv -d restored
run ferry list -r -t all -o name,compression,compressratio restored
run ferry restore restored/host1/home@tue "$D/restored-tree"

# zeros.img was written full of zeros; ferry stores zero records as holes
# (as zfs does with compression on), so it comes back sparse: same bytes,
# fewer blocks. Hence --no-alloc.
say "treecmp --no-alloc $S $D/restored-tree"
if [ -x "$TOOLS/treecmp" ]; then
	"$TOOLS/treecmp" --no-alloc "$S" "$D/restored-tree" ||
		die "the restored tree differs from the source"
else
	diff -r "$S" "$D/restored-tree" || die "the restored tree differs from the source"
fi
[ "$(ferry get -H -o value compression backup/host1/home)" = gzip-7 ] ||
	die "the backup is not stored gzip-7"
[ "$(ferry get -H -o value guid restored/host1/home@tue)" = \
  "$(ferry get -H -o value guid tank/host1/home@tue)" ] || die "the snapshot guid changed on the way"
printf '\nrestored tree is identical to the source; demo pools are in %s (FERRY_HOME=%s)\n' \
	"$D" "$FERRY_HOME"
