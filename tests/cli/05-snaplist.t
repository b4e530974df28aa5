#!/bin/sh
# Snapshots in list/get output and dataset destroy rules, as zfs shows them;
# after destroy -r and gc the pool equals one that never had anything.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src"
echo one > "$T/src/f"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" tank/a
ferry create tank/a/child
ferry snapshot tank/a@s1 >/dev/null
echo two >> "$T/src/f"
ferry snapshot tank/a@s2 >/dev/null

is "$(ferry list -H -o name -r tank | tr '\n' ' ')" "tank tank/a tank/a/child " "list hides snapshots by default"
is "$(ferry list -H -o name -t snapshot | tr '\n' ' ')" "tank/a@s1 tank/a@s2 " "list -t snapshot: all snapshots, oldest first"
is "$(ferry list -H -o name -t all -r tank/a | tr '\n' ' ')" "tank/a tank/a@s1 tank/a@s2 tank/a/child " "list -t all: a dataset's snapshots follow it"
is "$(ferry list -H -o name,type tank/a@s2)" "$(printf 'tank/a@s2\tsnapshot')" "list a snapshot by name"
is "$(ferry list -H -o name,avail tank/a@s1)" "$(printf 'tank/a@s1\t-')" "snapshots have no AVAIL"
is "$(ferry get -H -o value type tank/a@s1)" "snapshot" "get type of a snapshot"
is "$(ferry get -H -o name -r type tank/a | tr '\n' ' ')" "tank/a tank/a@s1 tank/a@s2 tank/a/child " "get -r includes snapshots"
is "$(ferry get -H -o name -r -t filesystem type tank/a | tr '\n' ' ')" "tank/a tank/a/child " "get -t filesystem leaves them out"
like "$(ferry get -H -p -o value referenced tank/a@s2)" "^[1-9][0-9]*$" "a snapshot references bytes"
ferry set org.example:tag=x tank/a
is "$(ferry get -H -o value,source org.example:tag tank/a@s1)" "$(printf 'x\tinherited from tank/a')" "snapshots show their dataset's user properties"
refused 1 "snapshot properties cannot be changed" "snapshot properties are read-only" ferry set org.example:tag=y tank/a@s1
refused 1 "does not exist" "missing snapshot" ferry get all tank/a@nope

ferry destroy -r tank/a/child
refused 1 "has children or snapshots" "snapshots count as children" ferry destroy tank/a
run ferry destroy -n -v -r tank/a
is "$rc:$(cat "$T/out" | tr '\n' ' ')" "0:would destroy tank/a@s1 would destroy tank/a@s2 would destroy tank/a " "destroy -n -v lists what would go"
is "$(ferry list -H -o name -t all -r tank | tr '\n' ' ')" "tank tank/a tank/a@s1 tank/a@s2 " "destroy -n changed nothing"
run ferry destroy -r tank/a
is "$rc" 0 "destroy -r with snapshots"
is "$(ferry list -H -o name -t all -r tank)" "tank" "dataset and snapshots are gone"
# the control: a pool that never had anything
ferry pool create ctl "$T/p/ctl"
after_check tank ctl "destroy -r"

done_testing
