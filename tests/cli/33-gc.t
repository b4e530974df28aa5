#!/bin/sh
# Garbage collection: destroyed snapshots' blocks are reclaimed, packs that
# are mostly garbage are rewritten, survivors restore exactly, and
# destroying everything returns the pool to within 1 MiB of an empty one.
# After each gc the pool's figures and blocks equal those of a control pool
# that only ever got what is left.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir "$S"
ferry create -o source="$S" -o compression=lz4 tank/fs
ferry create -o source="$S" tank/other
empty=$(du -sk "$T/p/tank" | cut -f1)

head -c 12000000 /dev/urandom >"$S/big"
head -c 4000000 /dev/urandom >"$S/keep"
seq 1 100000 >"$S/text"
ferry snapshot tank/fs@one
rm "$S/big"
ferry snapshot tank/fs@two
cp -a "$S" "$T/copy-two"
head -c 3000000 /dev/urandom >"$S/later"
ferry snapshot tank/fs@three
ferry snapshot tank/other@x
cp -a "$S" "$T/copy-three"
full=$(du -sk "$T/p/tank" | cut -f1)
[ "$full" -gt $((empty + 18000)) ] && ok "data landed in packs (${full}K)" || not_ok "pool is only ${full}K"

run ferry gc -v tank
is "$rc" 0 "gc with nothing to free"
like "$(cat "$T/out")" "freed 0 blocks" "nothing freed while every snapshot lives"

run ferry destroy tank/fs@one
is "$rc" 0 "destroy the snapshot holding big"
run ferry gc -v tank
is "$rc" 0 "gc after destroy"
like "$(cat "$T/out")" "freed [1-9][0-9]* blocks" "gc frees the destroyed snapshot's blocks"
like "$(cat "$T/out")" "1 rewritten" "the mostly-garbage pack is rewritten"
after=$(du -sk "$T/p/tank" | cut -f1)
[ "$after" -lt $((full - 11000)) ] && ok "disk use drops by big's size (${full}K -> ${after}K)" ||
	not_ok "disk use ${full}K -> ${after}K"
run ferry restore tank/fs@two "$T/r2"
is "$rc" 0 "restore @two after gc"
run "$TREECMP" --no-root "$T/copy-two" "$T/r2"
is "$rc" 0 "@two restores identically after gc moved its blocks"
run ferry restore tank/fs@three "$T/r3"
is "$rc" 0 "restore @three after gc"
run "$TREECMP" --no-root "$T/copy-three" "$T/r3"
is "$rc" 0 "@three restores identically after gc"
run ferry gc -v tank
like "$rc:$(cat "$T/out")" "^0:freed 0 blocks.* 0 deleted, 0 rewritten" "a second gc has nothing to do"
# The control never had @one: @two and @three captured whole from copies
# of their trees, other@x from @three's.
ferry pool create ctl "$T/p/ctl"
ferry create -o compression=lz4 ctl/fs
ferry snapshot --from "$T/copy-two" ctl/fs@two
ferry snapshot --from "$T/copy-three" ctl/fs@three
ferry create ctl/other
ferry snapshot --from "$T/copy-three" ctl/other@x
after_check -e "/fs@two=$T/copy-two" -e "/fs@three=$T/copy-three" -e "/other@x=$T/copy-three" \
	tank ctl "destroy @one, gc"

# a crashed writer's pack (no catalogue row) is an orphan gc removes
head -c 100000 /dev/urandom >"$T/p/tank/packs/00000000deadbeef.pack"
run ferry gc -v tank
like "$rc:$(cat "$T/out")" "^0:.*1 orphans removed" "gc removes an orphan pack"

# destroy everything: back to an empty pool
run ferry destroy -r tank/fs
is "$rc" 0 "destroy -r a dataset with snapshots"
run ferry destroy tank/other@x
is "$rc" 0 "destroy the last snapshot"
run ferry gc tank
is "$rc" 0 "gc after destroying everything"
end=$(du -sk "$T/p/tank" | cut -f1)
[ "$end" -le $((empty + 1024)) ] && ok "disk use back to within 1 MiB of empty (${empty}K -> ${end}K)" ||
	not_ok "disk use ${end}K vs empty ${empty}K"
# the newest checkpoint of the catalogue (docs/ferry-nodes.md) is all
# that stays: one small pack, and no other
is "$(ls "$T/p/tank/packs" | grep -vc '^r[0-9a-f]\{16\}\.pack$')" 0 "no data pack files left"
is "$(ls "$T/p/tank/packs" | wc -l)" 1 "only the newest checkpoint's pack is kept"
run ferry list -H -t snapshot -r tank
is "$rc:$(cat "$T/out")" "0:" "no snapshots left"
# the control: a pool that only ever had the dataset left, empty
ferry pool create ctl0 "$T/p/ctl0"
ferry create ctl0/other
after_check tank ctl0 "destroy everything, gc"
done_testing
