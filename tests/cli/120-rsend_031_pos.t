#!/bin/sh
# Follows OpenZFS tests/zfs-tests/tests/functional/rsend/rsend_031_pos.ksh:
# a recursive incremental package that overlaps the target. zfs skips the
# snapshots the target already has (same guid: "snapshot ... already
# exists; ignoring"), receives the rest and, with -F, destroys the target's
# snapshots the sender no longer has. A plain -I package into a target that
# holds part of the range does the same (what a re-sent range after a
# partial success meets). A snapshot of the same name and another guid is
# still refused, and a single stream of a snapshot the target has too.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/s"
ferry pool create tank "$T/p/tank"
ferry pool create tank2 "$T/p/tank2"
ferry pool create ctl "$T/p/ctl"
ferry pool create tank3 "$T/p/tank3"
ferry create -o source="$T/s" tank/sendfs
n=0
for s in A B C; do
	n=$((n + 1)); echo "$s $n" >"$T/s/f$n"
	ferry snapshot "tank/sendfs@$s"
done
ferry send -R -p tank/sendfs@C >"$T/stream1"
run sh -c "'$FERRY' recv -F tank2/recvfs <'$T/stream1'"
is "$rc" 0 "recv -F of the -R package"
ferry destroy tank/sendfs@C
for s in D E; do
	n=$((n + 1)); echo "$s $n" >"$T/s/f$n"
	ferry snapshot "tank/sendfs@$s"
done
ferry send -R -p -I tank/sendfs@A tank/sendfs@E >"$T/stream2"
run sh -c "'$FERRY' recv -Fv tank2/recvfs <'$T/stream2'"
is "$rc" 0 "recv -Fv of the -R -I package that overlaps the target"
like "$(cat "$T/out")" "^snapshot tank2/recvfs@B already exists; ignoring$" \
	"-v names the snapshot the target already has as ignored"
like "$(cat "$T/out")" "received tank2/recvfs@D" "the snapshots it lacks are received"
is "$(ferry list -H -t snapshot -o name -r tank2 | tr '\n' ' ')" \
	"tank2/recvfs@A tank2/recvfs@B tank2/recvfs@D tank2/recvfs@E " \
	"D and E are there, C (which the sender no longer has) went"
is "$(ferry get -H -o value guid tank2/recvfs@B)" "$(ferry get -H -o value guid tank/sendfs@B)" \
	"B is the snapshot it was (same guid)"

# the plain -I form: a target that holds A and B gets -I @A @C
mkdir -p "$T/s2" "$T/s3"
ferry create -o source="$T/s2" tank/p
for s in A B C; do echo "$s" >"$T/s2/$s"; ferry snapshot "tank/p@$s"; done
ferry send tank/p@A | ferry recv tank2/p
ferry send -i @A tank/p@B | ferry recv tank2/p
ferry send -I @A tank/p@C >"$T/i-ac"
run sh -c "'$FERRY' recv -v tank2/p <'$T/i-ac'"
is "$rc" 0 "recv of -I @A @C into a target holding A and B (no -F)"
like "$(cat "$T/out")" "^snapshot tank2/p@B already exists; ignoring$" "B is ignored"
is "$(ferry list -H -t snapshot -o name tank2/p | tr '\n' ' ')" \
	"tank2/p@A tank2/p@B tank2/p@C " "C is received on top of B"
run sh -c "'$FERRY' recv -v tank2/p <'$T/i-ac'"
is "$rc:$(grep -c 'already exists; ignoring' "$T/out")" "0:2" \
	"the same package again: every snapshot ignored, nothing changes"

# what is still refused: a single stream of a snapshot the target has,
# and a package's snapshot of the same name but another guid
ferry create -o source="$T/s3" tank/q
echo a >"$T/s3/a"; ferry snapshot tank/q@A
ferry send tank/q@A | ferry recv tank3/q
echo b >"$T/s3/b"; ferry snapshot tank/q@B
ferry send -i @A tank/q@B >"$T/q-ab"
ferry recv tank3/q <"$T/q-ab"
refused 1 "already has this snapshot" "a single incremental stream of a snapshot the target has" \
	sh -c "'$FERRY' recv tank3/q <'$T/q-ab'"
ferry destroy tank/q@B
echo c >"$T/s3/c"; ferry snapshot tank/q@B
ferry send -I @A tank/q@B >"$T/q-ab2"
refused 1 "snapshot 'tank3/q@B' already exists" \
	"a package's snapshot of the same name and another guid is refused" \
	sh -c "'$FERRY' recv tank3/q <'$T/q-ab2'"

# the controls: what each target holds, received in one go
ferry send -R -p tank/sendfs@E | ferry recv ctl/recvfs
ferry send -I @A tank/p@C >"$T/pc"
ferry send tank/p@A | ferry recv ctl/p
ferry recv ctl/p <"$T/pc"
after_check tank2/recvfs ctl/recvfs "overlapping -R -I -F"
after_check tank2/p ctl/p "overlapping -I"
done_testing
