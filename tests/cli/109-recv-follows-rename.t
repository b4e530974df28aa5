#!/bin/sh
# An incremental package (send -R -I) after the sender renamed a child:
# as zfs receive does (recv_incremental_replication), the replica's child
# is found by its snapshots' guids and renamed to match, so the child's
# incremental finds its base. On the code before this test the receive
# failed: "'bk/q/c' does not exist: an incremental stream needs its base
# snapshot".
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/top" "$T/src/kid/sub" "$T/src/other"
printf 'top\n' >"$T/src/top/f"
head -c 50000 /dev/urandom >"$T/src/kid/sub/r"
printf 'other\n' >"$T/src/other/g"
ferry pool create tank "$T/p/tank"
ferry pool create bk "$T/p/bk"
ferry create -o source="$T/src/top" tank/z
ferry create -o source="$T/src/kid" tank/z/b
ferry create -o source="$T/src/other" tank/z/o
ferry snapshot -r tank/z@3
run sh -c "'$FERRY' send -R tank/z@3 | '$FERRY' recv bk/q"
is "$rc:$(cat "$T/err")" "0:" "the first package"
ferry rename tank/z/b tank/z/c
printf 'more\n' >>"$T/src/kid/sub/r"
ferry snapshot -r tank/z@4
run sh -c "'$FERRY' send -R -I @3 tank/z@4 | '$FERRY' recv -F bk/q"
is "$rc:$(cat "$T/err")" "0:" "send -R -I after a child's rename: received"
is "$(ferry list -H -r -t snapshot -o name bk/q | sort | tr '\n' ' ')" \
	"bk/q/c@3 bk/q/c@4 bk/q/o@3 bk/q/o@4 bk/q@3 bk/q@4 " "the child was renamed to match, then got @4"
is "$(ferry get -Hp -o value guid bk/q/c@3 bk/q/c@4 | tr '\n' ' ')" \
	"$(ferry get -Hp -o value guid tank/z/c@3 tank/z/c@4 | tr '\n' ' ')" "with the sender's guids"
# a rename into a new parent the replica lacks is left to the substream
ferry create tank/z/n
ferry rename tank/z/o tank/z/n/o
ferry snapshot -r tank/z@5
run sh -c "'$FERRY' send -R -I @4 tank/z@5 | '$FERRY' recv -F bk/q"
is "$rc:$(cat "$T/err")" "0:" "a rename under a new parent: received"
is "$(ferry list -H -r -t snapshot -o name bk/q/n | sort | tr '\n' ' ')" \
	"bk/q/n/o@3 bk/q/n/o@4 bk/q/n/o@5 bk/q/n@5 " "the parent came in its substream first, then the move"
run sh -c "'$FERRY' send -R -i @4 tank/z/c@5 | '$FERRY' recv bk/q/c"
is "$rc" 0 "a plain incremental into the renamed replica"
# every snapshot restores as its source was
for s in 3 4; do
	rm -rf "$TS/r"
	ferry restore "bk/q/c@$s" "$TS/r" >/dev/null 2>&1
	rm -rf "$TS/s"
	ferry restore "tank/z/c@$s" "$TS/s" >/dev/null 2>&1
	run "$FERRY_TOOLS/treecmp" --no-root "$TS/s" "$TS/r"
	is "$rc:$(cat "$T/out" "$T/err")" "0:" "bk/q/c@$s restores as tank/z/c@$s"
done
ferry gc bk >/dev/null
rm -rf "$TS/r"
run ferry restore bk/q/n/o@5 "$TS/r"
"$FERRY_TOOLS/treecmp" --no-root "$T/src/other" "$TS/r" >"$T/out" 2>&1
is "$rc:$?:$(cat "$T/out")" "0:0:" "after gc, the moved child's newest snapshot restores as its source"
# the replica that followed the renames against one that got the sender's
# snapshots in one package: same datasets, snapshots, figures and blocks
ferry pool create ctl "$T/p/ctl"
run sh -c "'$FERRY' send -R tank/z@5 | '$FERRY' recv ctl/q"
is "$rc:$(cat "$T/err")" "0:" "the control: the whole package in one go"
after_check bk/q ctl/q "after the renames"
done_testing
