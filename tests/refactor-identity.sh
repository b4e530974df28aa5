#!/bin/sh
# tests/refactor-identity.sh — proof that a refactor changed no stream byte
# and no stored byte: OLD=ferry-before NEW=ferry-after sh tests/refactor-identity.sh
#
# One test world (datasets under lz4, gzip-7, off and zle with recordsize
# 64K, many small files, big ones, a sparse file, an all-zero file,
# hardlinks, symlinks, xattrs, a volume, an archive, three snapshots with
# changes between them, user properties, a bookmark), then:
#  (a) from the SAME pool, every kind of send by OLD and by NEW: the
#      streams must be byte-identical (cmp), -n -v reports too;
#  (b) the same source captured by each binary into its own pool, and the
#      same streams received by each into fresh pools (each under gzip-7,
#      lz4 and off targets): the block index (hash, codec, level, lsize,
#      psize), the node set, the snapshots (roots, figures; guid and
#      creation for received ones), which blocks each snapshot holds, the
#      space figures, the received properties and the bytes of every pack
#      in commit order must be identical;
#  (c) every snapshot restored by each binary (trees, a volume image, a
#      tar) must be identical.
# Prints one line per comparison and exits 1 if any differs. KEEP=1 keeps
# the work directory.
set -u
OLD=${OLD:?set OLD to the ferry binary from before the refactor}
NEW=${NEW:?set NEW to the ferry binary after it}
W=$(mktemp -d "${TMPDIR:-/tmp}/ferry-identity.XXXXXX")
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
differ=0
same=0
check() { # check DESC FILE-A FILE-B
	if cmp -s "$2" "$3"; then
		same=$((same + 1)); echo "same:      $1"
	else
		differ=$((differ + 1)); echo "DIFFERENT: $1"; diff "$2" "$3" | head -5 | sed 's/^/    /'
	fi
}
# f WHICH ARGS...: runs ferry as OLD (o) or NEW (n), each with its own home
f() { _w=$1; shift; if [ "$_w" = o ]; then FERRY_HOME="$W/home-o" "$OLD" "$@"; else FERRY_HOME="$W/home-n" "$NEW" "$@"; fi; }
die() { echo "identity: $*" >&2; exit 2; }

# ---- the source --------------------------------------------------------------------
S="$W/src"
mkdir -p "$S/mix" "$S/big" "$S/small" "$S/arch"
i=0
while [ $i -lt 1200 ]; do
	d="$S/mix/d$((i % 37))/e$((i % 5))"
	mkdir -p "$d"
	head -c $(( (i * 7919) % 20000 )) /dev/urandom >"$d/f$i"
	i=$((i + 1))
done
seq 1 300000 >"$S/mix/text"
ln -s text "$S/mix/link"
ln "$S/mix/text" "$S/mix/hardlink"
setfattr -n user.note -v "kept" "$S/mix/text" 2>/dev/null || true
: >"$S/mix/empty"
head -c 6000000 /dev/urandom >"$S/big/rand"
seq 1 900000 >"$S/big/text"
head -c 3000000 /dev/zero >"$S/big/zero"
# sparse: data islands in 40 MB of hole
truncate -s 40000000 "$S/big/sparse"
for off in 0 3 17 29; do
	head -c 200000 /dev/urandom | dd of="$S/big/sparse" bs=1M seek=$off conv=notrunc status=none
done
# half zeros, half text: zero records inside a file
{ head -c 1048576 /dev/zero; seq 1 100000; head -c 524288 /dev/zero; } >"$S/big/mixed"
for k in 1 2 3; do echo "small $k" >"$S/small/s$k"; done
seq 1 50000 >"$S/arch/a"
head -c 300000 /dev/urandom >"$S/arch/b"
tar -C "$S/arch" -cf "$W/in.tar" .
# the volume image: text, zeros, random
{ seq 1 200000; head -c 2097152 /dev/zero; head -c 1000000 /dev/urandom; } >"$W/vol.img"
truncate -s 8388608 "$W/vol.img"

change() { # the source between snapshots
	case $1 in
	2)
		seq 300001 310000 >>"$S/mix/text"
		rm -rf "$S/mix/d3"
		mv "$S/mix/d4" "$S/mix/d4-moved"
		echo new >"$S/mix/d5/new"
		head -c 100000 /dev/urandom | dd of="$S/big/rand" bs=100000 seek=20 conv=notrunc status=none
		head -c 65536 /dev/urandom | dd of="$S/big/sparse" bs=1M seek=10 conv=notrunc status=none
		echo "small 4" >"$S/small/s4"
		head -c 500000 /dev/urandom | dd of="$W/vol.img" bs=1M seek=5 conv=notrunc status=none
		;;
	3)
		rm "$S/big/zero"
		seq 1 1000 >"$S/mix/d6/e1/changed"
		truncate -s 4000000 "$S/big/rand"
		head -c 65536 /dev/zero | dd of="$W/vol.img" bs=1M seek=1 conv=notrunc status=none
		;;
	esac
}

# ---- (b) capture by each binary ----------------------------------------------------
for w in o n; do
	f $w pool create p "$W/pool-$w" || die "pool create"
	f $w create -o compression=lz4 -o source="$S/mix" -o user:x=1 p/lz4
	f $w create -o compression=gzip-7 -o source="$S/big" -o user:y=two p/gz
	f $w create -o compression=off -o source="$S/big" p/off
	f $w create -o compression=zle -o recordsize=64K -o source="$S/big" p/zle
	f $w create -o compression=gzip-1 -o source="$S/small" p/lz4/child
	f $w create -V 16M -o compression=lz4 p/vol
	f $w create -o compression=gzip-3 p/tar
done
for n in 1 2 3; do
	[ $n = 1 ] || change $n
	for w in o n; do
		for d in lz4 gz off zle lz4/child; do
			f $w snapshot p/$d@$n || die "snapshot p/$d@$n"
		done
		f $w snapshot --from "$W/vol.img" p/vol@$n || die "snapshot p/vol@$n"
		f $w snapshot --from "$W/in.tar" p/tar@$n || die "snapshot p/tar@$n"
		[ $n = 1 ] && f $w bookmark p/lz4@1 p/lz4#m1
	done
done

# catalogue POOLDIR RECEIVED: what must not change, one row a line
catalogue() {
	_db="$1/catalog.db"
	echo "-- blocks"
	sqlite3 "$_db" "SELECT hex(hash), codec, level, lsize, psize FROM blocks ORDER BY 1, 2, 3"
	echo "-- nodes"
	sqlite3 "$_db" "SELECT hex(hash), type, length(data) FROM nodes ORDER BY 1"
	echo "-- snapshots"
	if [ "$2" = 1 ]; then _id="s.guid, s.creation_ns,"; else _id=""; fi
	sqlite3 "$_db" "SELECT d.name, s.name, $_id hex(s.root), s.referenced,
		s.logicalreferenced, s.written FROM snapshots s JOIN datasets d ON d.id = s.ds_id
		ORDER BY 1, s.createtxg"
	echo "-- snapshot blocks"
	sqlite3 "$_db" "SELECT d.name || '@' || s.name, hex(b.hash), b.codec, b.level
		FROM snap_blocks sb JOIN snapshots s ON s.id = sb.snap_id
		JOIN datasets d ON d.id = s.ds_id JOIN blocks b ON b.id = sb.block_id ORDER BY 1, 2, 3, 4"
	echo "-- packs in commit order"
	for _k in $(sqlite3 "$_db" "SELECT name FROM packs ORDER BY id"); do
		sha256sum <"$1/packs/$_k" | cut -c1-64
	done
}
figures() { # figures WHICH POOL
	f $1 list -H -p -r -t all -o name,type,used,referenced,logicalused,logicalreferenced,written,usedbysnapshots,compressratio,refcompressratio,volsize "$2"
	f $1 get -H -r -o name,property,value,source all "$2" | awk -F'\t' '$4 == "local" || $4 == "received"'
	f $1 pool status "$2" | sed -n '/CODEC/,$p'
}
catalogue "$W/pool-o" 0 >cap-o.cat
catalogue "$W/pool-n" 0 >cap-n.cat
check "capture: block index, nodes, snapshot roots and figures, snapshot blocks, packs" cap-o.cat cap-n.cat
figures o p >cap-o.fig
figures n p >cap-n.fig
check "capture: space figures, properties, codec table" cap-o.fig cap-n.fig

# ---- (a) sends from the same pool (OLD's) --------------------------------------------
# NAME|ARGS
sends='full|p/lz4@3
full1|p/lz4@1
i12|-i @1 p/lz4@2
i23-c|-c -i @2 p/lz4@3
full-gz|p/gz@3
full-gz2|p/gz@2
full-off|p/off@3
full-zle|p/zle@3
c|-c p/lz4@3
c-gz|-c p/gz@3
c-off|-c p/off@3
c-vol|-c p/vol@3
vol|p/vol@3
vol1|p/vol@1
tar|-c p/tar@3
i|-i @1 p/lz4@3
i-c|-c -i @2 p/gz@3
i-vol|-i @1 p/vol@3
i-mark|-i #m1 p/lz4@3
I|-I @1 p/lz4@3
R|-R p/lz4@3
R-i|-R -i @1 p/lz4@3
R1|-R p/lz4@1
p|-p p/gz@3
compress-gzip1|--compress=gzip-1 p/gz@3
compress-gzip1-off|--compress=gzip-1 p/off@3
compress-lz4-c|-c --compress=lz4 p/gz@3
compress-lz4-c-off|-c --compress=lz4 p/off@3
compress-off|--compress=off p/zle@3
compress-zle-R|-R --compress=zle p/lz4@3'
printf '%s\n' "$sends" >sends.list
while IFS='|' read -r name args; do
	# shellcheck disable=SC2086
	FERRY_HOME="$W/home-o" "$OLD" send $args >"s-o-$name" 2>"s-o-$name.err" || die "old send $args"
	# shellcheck disable=SC2086
	FERRY_HOME="$W/home-o" "$NEW" send $args >"s-n-$name" 2>"s-n-$name.err" || die "new send $args"
	check "send $args: the stream" "s-o-$name" "s-n-$name"
	# shellcheck disable=SC2086
	FERRY_HOME="$W/home-o" "$OLD" send -n -v $args >"n-o-$name" 2>&1
	# shellcheck disable=SC2086
	FERRY_HOME="$W/home-o" "$NEW" send -n -v $args >"n-n-$name" 2>&1
	check "send -n -v $args: the estimate" "n-o-$name" "n-n-$name"
done <sends.list

# ---- (b) the same streams received by each binary --------------------------------------
# TARGET|STREAM|RECV-OPTIONS
recvs='r/a|full1|
r/a|i12|
r/a|i23-c|
r/full|full|
r/c|c|
r/cc|full1|
r/cc|i-mark|
r/ci|full1|
r/ci|i|
r/gz|full-gz2|
r/gz|i-c|
r/gzf|full-gz|
r/gzc|c-gz|
r/g1|compress-gzip1|
r/l|compress-lz4-c|
r/lz/x|compress-lz4-c|
r/lz/y|c|
r/lz/off|compress-lz4-c-off|
r/lz/zle|full-zle|
r/o/off|full-off|
r/o/c|c-off|
r/o/g|compress-gzip1-off|
r/vol|vol1|
r/vol|i-vol|
r/volf|vol|
r/vc|c-vol|
r/tar|tar|
r/p|p|
r/k|full-gz|-o compression=lz4
r/ks|p|--keep-source-compression
r/pkg|R|-F
r/pkgR|R1|-d
r/pkgR|R-i|-F -d
r/pkgI|full1|
r/pkgI|I|
r/z|compress-off|
r/zR|compress-zle-R|-d'
printf '%s\n' "$recvs" >recvs.list
for w in o n; do
	f $w pool create -o compression=gzip-7 r "$W/recv-$w" || die "recv pool"
	f $w create -o compression=lz4 r/lz
	f $w create -o compression=off r/o
	f $w create r/zR
	f $w create r/pkgR
	while IFS='|' read -r tgt stream opts; do
		# shellcheck disable=SC2086
		f $w recv $opts $tgt <"s-o-$stream" >/dev/null 2>"r-$w.err" ||
			{ cat "r-$w.err"; die "$w: recv $opts $tgt < $stream"; }
	done <recvs.list
done
catalogue "$W/recv-o" 1 >recv-o.cat
catalogue "$W/recv-n" 1 >recv-n.cat
check "recv: block index, nodes, snapshots (guid, creation, root, figures), snapshot blocks, packs" recv-o.cat recv-n.cat
figures o r >recv-o.fig
figures n r >recv-n.fig
check "recv: space figures, properties, codec table" recv-o.fig recv-n.fig

# ---- (c) restores by each binary ---------------------------------------------------------
for snap in $(f o list -H -r -t snapshot -o name p); do
	tag=$(echo "$snap" | tr '/@' '__')
	for w in o n; do
		rm -rf "rs-$w"
		if FERRY_HOME="$W/home-o" "$([ $w = o ] && echo "$OLD" || echo "$NEW")" \
			restore "$snap" "$W/rs-$w" 2>"rs-$w.err"; then :; else cat "rs-$w.err"; die "restore $snap"; fi
	done
	if [ -d rs-o ]; then
		(cd rs-o && find . -printf '%p %y %m %s %T@ %l\n' | sort) >rs-o.list
		(cd rs-n && find . -printf '%p %y %m %s %T@ %l\n' | sort) >rs-n.list
		check "restore $snap: the tree's names, types, modes, sizes, mtimes" rs-o.list rs-n.list
		(cd rs-o && find . -type f -exec sha256sum {} + | sort) >rs-o.sum
		(cd rs-n && find . -type f -exec sha256sum {} + | sort) >rs-n.sum
		check "restore $snap: the files' bytes" rs-o.sum rs-n.sum
	else
		check "restore $snap: the image" rs-o rs-n
	fi
done
for w in o n; do
	FERRY_HOME="$W/home-o" "$([ $w = o ] && echo "$OLD" || echo "$NEW")" \
		restore --format tar p/lz4@3 >"tar-$w" 2>/dev/null || die "restore --format tar"
done
check "restore --format tar p/lz4@3" tar-o tar-n

echo "identity: $same same, $differ different"
[ "$differ" = 0 ]
