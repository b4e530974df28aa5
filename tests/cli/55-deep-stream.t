#!/bin/sh
# Trees as deep as NODE_TREE_DEPTH_MAX (16384 directory levels) go through
# recv, send (full, incremental, from a bookmark) and diff without
# recursion; a deeper stream is refused with one clear line and changes
# nothing. The streams come from tests/tools/mkdeepstream (a chain of
# directories "d", each with a file "f").
. "$(dirname "$0")/lib.sh"
MKDEEP="$FERRY_TOOLS/mkdeepstream"
# the restored tree on a tmpfs when there is one (removing 16384 levels
# from a disk takes long)
R=$T/r
if [ -d /dev/shm ] && [ -w /dev/shm ] && DS=$(mktemp -d /dev/shm/ferry-deep.XXXXXX 2>/dev/null); then
	R=$DS/r
	trap 'rm -rf "$DS"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
fi
MAX=16384
mkdir -p "$T/p"
ferry pool create -o compression=gzip-7 tank "$T/p/tank"
"$MKDEEP" $MAX deep/fs@s >"$T/max"
"$MKDEEP" $MAX deep/fs@s changed >"$T/max2"
"$MKDEEP" $((MAX + 1)) deep/fs@s >"$T/over"

run "$FERRY" recv tank/a <"$T/max"
is "$rc" 0 "a stream $MAX levels deep is received"
before=$(ferry list -H -p -r -t all -o name,used,referenced tank)
refused 1 "nested deeper than $MAX levels" "a stream one level deeper is refused" \
	"$FERRY" recv tank/b <"$T/over"
is "$(ferry list -H -p -r -t all -o name,used,referenced tank)" "$before" "and the pool is unchanged"

ferry send tank/a@s >"$T/back"
strip() { "$FERRY" dump <"$1" | grep -Ev 'dataset =|creation_txg|digest|toguid|payload|total bytes'; }
is "$(strip "$T/back" | md5sum)" "$(strip "$T/max" | md5sum)" \
	"send of it writes the same records as the stream it came from"
run "$FERRY" recv tank/c <"$T/back"
is "$rc" 0 "and that stream is received again"
run "$FERRY" recv tank/v <"$T/max2"
is "$rc" 0 "the second $MAX-level stream is received"
# diff compares snapshots of one dataset: the changed tree as an
# incremental onto the received copy (every node again)
"$MKDEEP" $MAX deep/fs@s2 changed incremental >"$T/max2i"
run "$FERRY" recv tank/c <"$T/max2i"
is "$rc" 0 "the changed $MAX-level tree is received as an incremental"
run "$FERRY" diff tank/c@s tank/c@s2
is "$rc" 0 "diff of two $MAX-level trees succeeds"
# as zfs diff: the directories above the changed file kept their entries
# and attributes, so the file is the only change
deepest=$(python3 -c "print('/d' * $MAX + '/f')")
is "$(cat "$T/out")" "M	$deepest" "it reports the changed file, $MAX levels down, and only it"

# an incremental between the two trees: only the changed path
ferry pool create ctl "$T/p/ctl"
ferry recv ctl/a <"$T/max"
ferry pool create bk "$T/p/bk"
run sh -c "'$FERRY' send -R tank/a@s | '$FERRY' recv bk/a"
is "$rc" 0 "a -R package of the deep tree is received"
ferry bookmark tank/a@s tank/a#m
run sh -c "'$FERRY' send tank/a@s | '$FERRY' recv bk/b"
is "$rc" 0 "so is a plain stream of it"
is "$(ferry list -H -p -o name,logicalreferenced,referenced bk/a@s | cut -f2-)" \
	"$(ferry list -H -p -o name,logicalreferenced,referenced ctl/a@s | cut -f2-)" \
	"its space figures equal a direct receive's"
run prlimit --nofile=64:64 "$FERRY" restore bk/a@s "$R"
is "$rc" 0 "the received $MAX-level tree restores"
is "$("$FERRY_TOOLS/mkdeep" -c "$R")" "$MAX not empty" "all $MAX levels of it"
is "$(cat "$R/d/d/d/f")" "level 3" "with its files"
done_testing
