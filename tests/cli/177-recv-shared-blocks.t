#!/bin/sh
# The walk at a receive's END counts every object of the stream once,
# however many times the tree names it (recv/verify.c marks a stream
# object's entry in its set instead of keeping a second set of what it
# reached): a block two files share, a block one file holds twice, a
# blocklist two identical files share; in an incremental, the same for a
# block of the base that new files name again. Each receive succeeds and
# the pools end as one that got the same snapshots in one go (after_check:
# gc, figures, blocks, every snapshot restored byte for byte).
. "$(dirname "$0")/lib.sh"
PRNG="$FERRY_TOOLS/prng"
K=131072
S="$T/src"
mkdir -p "$S" "$T/p"
"$PRNG" bin 1 $K >"$T/x"
"$PRNG" bin 2 $K >"$T/y"
"$PRNG" bin 3 $K >"$T/z"
cat "$T/x" "$T/y" >"$S/xy"      # block x ...
cat "$T/x" "$T/z" >"$S/xz"      # ... again, in another blocklist
cat "$T/x" "$T/x" "$T/y" >"$S/xxy" # x twice in one blocklist
cp "$S/xy" "$S/xy-copy"          # the same blocklist twice
ferry pool create -o compression=off tank "$T/p/tank"
ferry create -o source="$S" -o recordsize=128K tank/fs
ferry snapshot tank/fs@a
# the incremental: new files naming the base's blocks x and z, twice each
cat "$T/z" "$T/x" >"$S/zx"
cat "$T/x" "$T/z" "$T/z" >"$S/xzz"
ferry snapshot tank/fs@b
ferry send tank/fs@a >"$T/a.s"
ferry send -i @a tank/fs@b >"$T/b.s"
ferry pool create -o compression=off bk "$T/p/bk"
run sh -c "'$FERRY' recv -v bk/fs <'$T/a.s'"
is "$rc" 0 "a full stream whose blocks and blocklists are named more than once is received"
like "$(cat "$T/out")" "blocks: 3 logical" "three blocks carried, once each"
run sh -c "'$FERRY' recv -v bk/fs <'$T/b.s'"
is "$rc" 0 "an incremental naming the base's blocks several times is received"
ferry pool create -o compression=off ctl "$T/p/ctl"
ferry send -R tank/fs@b | ferry recv ctl/fs
after_check "$@" bk ctl "a full and an incremental with shared blocks"
done_testing
