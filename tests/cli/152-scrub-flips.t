#!/bin/sh
# Issue 15's acceptance, kept fast: random bit flips over many small pools
# (SCRUB_POOLS, default 20; each gets 10 flipped blocks, header or payload,
# then, one at a time, 3 flipped node rows): scrub reports every one, each
# block with exactly the files whose content holds it (an oracle hashes the
# kept source trees), each node with a path, and nothing else; and nothing
# on the clean pools. tests/torture/scrub-flips.sh runs it with more pools.
# (One node at a time: a node under another damaged one cannot be named by
# any path, as a zpool cannot name a file under a damaged directory.)
. "$(dirname "$0")/lib.sh"
LIB="$FERRY_SRC/tests/cli/scrub_lib.py"
# the system's interpreter when there is one: a pyenv shim costs 0.3 s a start
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
NP=${SCRUB_POOLS:-20}
mkdir -p "$T/p"
: >"$T/none"
false_clean=0 bad=0 flips=0
# scrubbed FLIPS TREES...: scrub --json of p$i matches the oracle (rc 5, or 0
# for no flips)
scrubbed() {
	_f=$1; shift
	"$FERRY" scrub --json p$i >"$T/j" 2>"$T/e"
	_rc=$?
	_res=$($PY "$LIB" check "$_f" 4096 p$i "$@" <"$T/j" 2>&1)
	_want=5; [ -s "$_f" ] || _want=0
	[ "$_rc:$_res" = "$_want:ok" ] || { diag "p$i ($_f): rc $_rc: $_res $(cat "$T/e")"; return 1; }
}
for i in $(seq 1 "$NP"); do
	S="$T/s$i"
	mkdir -p "$S/d/e"
	seq 1 $((3000 + i * 100)) >"$S/numbers"
	head -c $((20000 + i * 1000)) /dev/urandom >"$S/d/random"
	head -c 9000 /dev/urandom >"$S/d/e/r2"
	echo "$i" >"$S/d/e/small"
	codec=$(echo "lz4 gzip-6 off zle" | cut -d' ' -f$((i % 4 + 1)))
	ferry pool create -o compression=$codec p$i "$T/p/$i"
	ferry create -o source="$S" -o recordsize=4K p$i/fs
	ferry snapshot p$i/fs@a
	cp -a "$S" "$TS/$i-a"
	head -c 5000 /dev/urandom >>"$S/d/random"
	echo more >>"$S/numbers"
	ferry snapshot p$i/fs@b
	cp -a "$S" "$TS/$i-b"
	set -- "p$i/fs@a=$TS/$i-a" "p$i/fs@b=$TS/$i-b"
	scrubbed "$T/none" "$@" || false_clean=$((false_clean + 1))
	cp -a "$T/p/$i" "$T/clean"
	$PY "$LIB" flip-blocks "$T/p/$i" 10 $((15200 + i)) >"$T/f"
	scrubbed "$T/f" "$@" || bad=$((bad + 1))
	flips=$((flips + $(wc -l <"$T/f")))
	for k in 1 2 3; do
		rm -rf "$T/p/$i"
		cp -a "$T/clean" "$T/p/$i"
		$PY "$LIB" flip-nodes "$T/p/$i" 1 $((15300 + i * 10 + k)) >"$T/f"
		scrubbed "$T/f" "$@" || bad=$((bad + 1))
		flips=$((flips + 1))
	done
	rm -rf "$T/p/$i" "$T/clean" "$TS/$i-a" "$TS/$i-b" "$S"
	ferry pool export p$i
done
is "$false_clean" 0 "$NP clean pools (lz4, gzip-6, off, zle): nothing reported"
is "$bad" 0 "$flips bit flips over $NP pools: every one reported, blocks with exactly their files"
done_testing
