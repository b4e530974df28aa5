#!/bin/sh
# Issue 15's acceptance over every byte of the packs (pack format 3): one
# bit flipped at a time at a uniformly random byte of the pool's pack files
# (SCRUB_FLIPS per pool, default 6; SCRUB_PACK_POOLS pools, default 8),
# plus one in each pool's file headers, node records and checkpoint, so
# each kind is met whatever the draw: scrub reports every flip, a block
# with exactly the files whose content holds it (the oracle hashes the
# kept source trees), a node record or checkpoint as a record at its pack
# and offset (a node record with the paths whose node it is), a file
# header as its pack's; nothing else; nothing on the clean pools.
# tests/torture/scrub-flips.sh runs it with more pools (>= 1,000 flips).
. "$(dirname "$0")/lib.sh"
LIB="$FERRY_SRC/tests/cli/scrub_lib.py"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
NP=${SCRUB_PACK_POOLS:-8}
NF=${SCRUB_FLIPS:-6}
mkdir -p "$T/p"
false_clean=0 bad=0 flips=0
: >"$T/kinds"
: >"$T/none"
for i in $(seq 1 "$NP"); do
	S="$T/s$i"
	mkdir -p "$S/d/e"
	seq 1 $((2000 + i * 100)) >"$S/numbers"
	head -c $((12000 + i * 1000)) /dev/urandom >"$S/d/random"
	head -c 5000 /dev/urandom >"$S/d/e/r2"
	echo "$i" >"$S/d/e/small"
	codec=$(echo "lz4 gzip-6 off zle" | cut -d' ' -f$((i % 4 + 1)))
	ferry pool create -o compression=$codec q$i "$T/p/$i"
	ferry create -o source="$S" -o recordsize=4K q$i/fs
	ferry snapshot q$i/fs@a
	cp -a "$S" "$TS/$i-a"
	head -c 3000 /dev/urandom >>"$S/d/random"
	echo more >>"$S/numbers"
	ferry snapshot q$i/fs@b
	cp -a "$S" "$TS/$i-b"
	# gc leaves no garbage and only the committed checkpoint: every byte
	# of the packs is then something a flip must be found in
	ferry gc q$i >/dev/null
	set -- "q$i/fs@a=$TS/$i-a" "q$i/fs@b=$TS/$i-b"
	"$FERRY" scrub --json q$i >"$T/j" 2>"$T/e"
	rc=$?
	res=$($PY "$LIB" check "$T/none" 4096 q$i "$@" <"$T/j" 2>&1)
	[ "$rc:$res" = "0:ok" ] || { false_clean=$((false_clean + 1)); diag "q$i clean: rc $rc: $res $(cat "$T/e")"; }
	cp -a "$T/p/$i" "$T/clean"
	k=0
	for kind in pack node state $(seq 1 "$NF"); do
		k=$((k + 1))
		rm -rf "$T/p/$i"
		cp -a "$T/clean" "$T/p/$i"
		case $kind in [0-9]*) only= ;; *) only=$kind ;; esac
		hit=$($PY "$LIB" flip-any "$T/p/$i" $((15800 + i * 100 + k)) $only 2>&1) ||
			{ bad=$((bad + 1)); diag "q$i: flip-any: $hit"; continue; }
		echo "${hit%% *}" >>"$T/kinds"
		"$FERRY" scrub --json q$i >"$T/j" 2>"$T/e"
		rc=$?
		res=$($PY "$LIB" check-any "$hit" 4096 q$i "$@" <"$T/j" 2>&1)
		[ "$rc:$res" = "5:ok" ] || { bad=$((bad + 1)); diag "q$i ($hit): rc $rc: $res $(cat "$T/e")"; }
		flips=$((flips + 1))
	done
	rm -rf "$T/p/$i" "$T/clean" "$TS/$i-a" "$TS/$i-b" "$S"
	ferry pool export q$i
done
is "$false_clean" 0 "$NP clean pools (lz4, gzip-6, off, zle): nothing reported"
is "$bad" 0 "$flips bit flips anywhere in the packs of $NP pools: every one reported, where it is"
diag "flips by what they hit: $(sort "$T/kinds" | uniq -c | tr -s ' \n' ' ')"
done_testing
