#!/bin/sh
# The pitfall matrix: whatever the source's compression (off, lz4, gzip-1,
# set locally) and however it is sent (plain, -c, -p, -R, -c -p), a backup
# pool whose root says gzip-7 stores it as gzip-7: the received dataset
# shows "gzip-7 inherited from <root>", the pool's per-codec block table
# is that of capturing the same tree straight into a gzip-7 pool, and so is
# the compressratio (within 0.5 %). The other way too: a gzip-7 backup
# received into an lz4 pool ends up lz4. And send -c into a pool with the
# same codec recompresses nothing. Every receiving pool (and the sender)
# ends with gc, its figures and blocks equal to a control that captured the
# same tree straight in, and every snapshot restoring identical to the tree.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
S="$T/src"
mkdir -p "$S/text" "$S/bin" "$S/mixed"
# text that compresses differently under lz4, gzip-1 and gzip-7
i=0
while [ $i -lt 12 ]; do
	seq $((i * 7000)) $((i * 7000 + 30000)) | sed 's/^/line number /' >"$S/text/t$i.txt"
	i=$((i + 1))
done
head -c 400000 /dev/urandom >"$S/bin/random"
# binary-ish: random bytes interleaved with structure
head -c 200000 /dev/urandom | od -An -tx1 >"$S/mixed/hexdump"
cat "$S/text/t1.txt" "$S/bin/random" "$S/text/t2.txt" >"$S/mixed/blend"
# all-zero records, written out (not sparse): a capture makes them holes
# whatever the compression, off included, so an off source sends none
head -c 1048576 /dev/zero >"$S/zeros"
{ head -c 131072 "$S/text/t3.txt"; head -c 262144 /dev/zero; head -c 131072 "$S/text/t4.txt"; } \
	>"$S/mixed/zero-middle"
echo small >"$S/small"
ln -s text/t0.txt "$S/link"
cp -a "$S" "$T/src-s"   # the tree every @s and @t holds

# control NAME POOL_CODEC DS_CODEC SNAP...: a pool NAME whose root says
# POOL_CODEC, with NAME/fs (compression DS_CODEC set locally, or inherited
# when -) that captured the source as each SNAP: what a receiving pool
# whose NAME/fs got the same tree must look like
control() {
	_cn=$1 _pc=$2 _dc=$3; shift 3
	ferry pool create -o compression="$_pc" "$_cn" "$T/p/$_cn"
	if [ "$_dc" = - ]; then ferry create "$_cn/fs"; else ferry create -o compression="$_dc" "$_cn/fs"; fi
	for _sn in "$@"; do ferry snapshot --from "$S" "$_cn/fs@$_sn"; done
}

# the reference: the same tree captured straight into a gzip-7 pool
ferry pool create -o compression=gzip-7 direct "$T/p/direct"
ferry create -o source="$S" direct/fs
ferry snapshot direct/fs@s
ratio() { ferry get -Hp -o value compressratio "$1"; }
REF_CODECS=$(codecs direct)
REF_RATIO=$(ratio direct/fs)
like "$REF_CODECS" "gzip-7" "the reference pool stores gzip-7 blocks"

ferry pool create tank "$T/p/tank"
for c in off lz4 gzip-1; do
	ferry create -o compression=$c -o source="$S" tank/src-$c
	ferry snapshot tank/src-$c@s
done

within() { # A B: |A-B| <= 0.5 % of B
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * 0.005) }'
}

n=0
for c in off lz4 gzip-1; do
	for mode in "" "-c" "-p" "-R" "-c -p"; do
		n=$((n + 1))
		bk=bk$n
		ferry pool create -o compression=gzip-7 $bk "$T/p/$bk"
		# shellcheck disable=SC2086
		ferry send $mode tank/src-$c@s >"$T/stream" 2>"$T/send.err"
		run ferry recv $bk/fs <"$T/stream"
		desc="compression=$c sent '${mode:-plain}' into gzip-7"
		is "$rc" 0 "$desc: received"
		is "$(ferry get -H -o value,source compression $bk/fs)" \
			"$(printf 'gzip-7\tinherited from %s' $bk)" "$desc: gzip-7 inherited from $bk"
		is "$(codecs $bk)" "$REF_CODECS" "$desc: per-codec blocks as a direct gzip-7 capture"
		got=$(ratio $bk/fs)
		if within "$got" "$REF_RATIO"; then ok "$desc: compressratio $got (direct $REF_RATIO)"
		else not_ok "$desc: compressratio $got, direct capture $REF_RATIO"; fi
		after_check -e "/fs@s=$T/src-s" $bk direct "$desc"
	done
done

# -p carries properties as received, but never the sender's compression
ferry set user:owner=alice tank/src-lz4
ferry snapshot tank/src-lz4@t
ferry pool create -o compression=gzip-7 bkp "$T/p/bkp"
ferry send -p tank/src-lz4@t | ferry recv bkp/fs
is "$(ferry get -H -o value,source user:owner bkp/fs)" "$(printf 'alice\treceived')" \
	"-p: a user property arrives with source received"
is "$(ferry get -H -o value,source compression bkp/fs)" "$(printf 'gzip-7\tinherited from bkp')" \
	"-p: the sender's compression=lz4 is not received"
ferry pool create -o compression=gzip-7 bkx "$T/p/bkx"
ferry send -p tank/src-lz4@t | ferry recv -x user:owner bkx/fs
is "$(ferry get -H -o value user:owner bkx/fs)" "-" "-x drops a received property"
control ctl-t gzip-7 - t
after_check -e "/fs@t=$T/src-s" bkp ctl-t "-p into gzip-7"
after_check -e "/fs@t=$T/src-s" bkx ctl-t "-p -x into gzip-7"
ferry pool create -o compression=gzip-7 bkk "$T/p/bkk"
ferry send -c -p tank/src-lz4@t | ferry recv -v --keep-source-compression bkk/fs >"$T/keep.out"
is "$(ferry get -H -o value,source compression bkk/fs)" "$(printf 'lz4\treceived')" \
	"--keep-source-compression keeps the sender's lz4"
like "$(cat "$T/keep.out")" " 0 recompressed" "--keep-source-compression recompresses nothing"
control ctl-k gzip-7 lz4 t
after_check -e "/fs@t=$T/src-s" bkk ctl-k "--keep-source-compression"
ferry pool create -o compression=gzip-7 bko "$T/p/bko"
ferry send -c tank/src-lz4@t | ferry recv -o compression=gzip-2 bko/fs
is "$(ferry get -H -o value,source compression bko/fs)" "$(printf 'gzip-2\tlocal')" \
	"-o compression=gzip-2 sets it locally"
like "$(codecs bko)" "gzip-2" "-o compression=gzip-2: blocks stored gzip-2"
control ctl-o gzip-7 gzip-2 t
after_check -e "/fs@t=$T/src-s" bko ctl-o "-o compression=gzip-2"

# the other way: a gzip-7 backup received into an lz4 pool ends up lz4
ferry pool create -o compression=lz4 lzp "$T/p/lzp"
for mode in "" "-c" "-R"; do
	# shellcheck disable=SC2086
	ferry send $mode direct/fs@s | ferry recv lzp/from${mode:-plain}
	is "$(ferry get -H -o value,source compression lzp/from${mode:-plain})" \
		"$(printf 'lz4\tinherited from lzp')" "gzip-7 sent '${mode:-plain}' into lz4: lz4 inherited"
done
like "$(codecs lzp)" "lz4" "the lz4 pool holds lz4 blocks"
if codecs lzp | grep -q gzip; then not_ok "no gzip block in the lz4 pool"; diag "$(codecs lzp)"
else ok "no gzip block in the lz4 pool"; fi
ferry create -o source="$S" lzp/direct
ferry snapshot lzp/direct@s
is "$(ratio lzp/from-c)" "$(ratio lzp/direct)" "gzip-7 -c into lz4: compressratio of a direct lz4 capture"
ferry pool create -o compression=lz4 ctl-lzp "$T/p/ctl-lzp"
for ds in fromplain from-c from-R direct; do
	ferry create "ctl-lzp/$ds"
	ferry snapshot --from "$S" "ctl-lzp/$ds@s"
done
after_check -e "*@s=$T/src-s" lzp ctl-lzp "gzip-7 received into lz4"

# send -c into a pool with the same codec keeps every block
ferry pool create -o compression=lz4 same "$T/p/same"
ferry send -c tank/src-lz4@s | ferry recv -v same/fs >"$T/same.out"
like "$(cat "$T/same.out")" "[1-9][0-9]* kept, 0 recompressed" "send -c lz4 into lz4: blocks kept, 0 recompressed"
control ctl-same lz4 - s
after_check -e "/fs@s=$T/src-s" same ctl-same "send -c lz4 into lz4"
ferry pool create -o compression=gzip-1 same1 "$T/p/same1"
ferry send -c tank/src-gzip-1@s | ferry recv -v same1/fs >"$T/same1.out"
like "$(cat "$T/same1.out")" "[1-9][0-9]* kept, 0 recompressed" "send -c gzip-1 into gzip-1: 0 recompressed"
control ctl-same1 gzip-1 - s
after_check -e "/fs@s=$T/src-s" same1 ctl-same1 "send -c gzip-1 into gzip-1"
# and --compress on the sender: the receiver keeps what it gets
ferry pool create -o compression=gzip-7 cz "$T/p/cz"
ferry send --compress=gzip-7 tank/src-off@s | ferry recv -v cz/fs >"$T/cz.out"
like "$(cat "$T/cz.out")" "[1-9][0-9]* kept, 0 recompressed" \
	"send --compress=gzip-7 into gzip-7: compressed blocks are kept, none recompressed"
is "$(codecs cz)" "$REF_CODECS" "send --compress=gzip-7: blocks as a direct gzip-7 capture"
# --compress runs on the worker pool: the stream is the same every time, in
# the walk's order, and restores the source exactly (incremental too)
ferry send --compress=gzip-7 tank/src-off@s >"$T/cz1"
ferry send --compress=gzip-7 tank/src-off@s >"$T/cz2"
cmp -s "$T/cz1" "$T/cz2" && ok "send --compress writes the same stream every time" ||
	not_ok "send --compress streams differ"
rm -rf "$T/czr"
ferry restore cz/fs@s "$T/czr" && "$FERRY_TOOLS/treecmp" --no-root "$S" "$T/czr" >/dev/null 2>&1 &&
	ok "send --compress: received tree restores identical" || not_ok "send --compress: tree differs"
control ctl-cz gzip-7 - s
cp "$S/text/t5.txt" "$S/text/t5-copy.txt"
head -c 300000 /dev/urandom >>"$S/mixed/blend"
ferry snapshot tank/src-off@t2
cp -a "$S" "$T/src-t2"
ferry snapshot --from "$T/src-t2" ctl-cz/fs@t2
run sh -c "'$FERRY' send --compress=gzip-7 -i @s tank/src-off@t2 | '$FERRY' recv cz/fs"
is "$rc" 0 "send --compress -i: incremental received"
rm -rf "$T/czr"
ferry restore cz/fs@t2 "$T/czr" && "$FERRY_TOOLS/treecmp" --no-root "$S" "$T/czr" >/dev/null 2>&1 &&
	ok "send --compress -i: restores identical" || not_ok "send --compress -i: tree differs"
rm -f "$S/text/t5-copy.txt"
# (@t2 from a copy: ctl-cz/fs@t2 reads it whole, where the sender reused
# @s's unchanged files)
after_check -e "/fs@s=$T/src-s" -e "/fs@t2=$T/src-t2" cz ctl-cz "send --compress, full and -i"

# the sender: its captures equal those of copies of the trees, read whole
ferry pool create ctl-tank "$T/p/ctl-tank"
for c in off lz4 gzip-1; do
	ferry create -o compression=$c ctl-tank/src-$c
	ferry snapshot --from "$T/src-s" ctl-tank/src-$c@s
done
ferry snapshot --from "$T/src-s" ctl-tank/src-lz4@t
ferry snapshot --from "$T/src-t2" ctl-tank/src-off@t2
after_check -e "*@s=$T/src-s" -e "*@t=$T/src-s" -e "*@t2=$T/src-t2" tank ctl-tank "the sender's captures"
done_testing
