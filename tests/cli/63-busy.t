#!/bin/sh
# A busy pool says who holds it, in one line and in ferry's words: the
# catalogue's write lock held by another program (a sqlite3 shell in
# BEGIN IMMEDIATE) or by a long recv -F, the gc lock held by a receive; a
# killed holder's record is ignored. Never "catalogue: catalogue:" or
# SQLite's "database is locked" alone.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/a" "$T/src/b"
export FERRY_LOCK_WAIT=1
ferry pool create tank "$T/p/tank"
head -c 3000000 /dev/urandom >"$T/src/a/f"
head -c 6000000 /dev/urandom >"$T/src/b/f"
ferry create -o source="$T/src/a" tank/a
ferry create -o source="$T/src/b" tank/a/b
ferry snapshot -r tank/a@1
ferry snapshot tank/a@2
# write_locker POOL: the pid holding the catalogue's write lock (SQLite's
# POSIX lock on byte 120 of the -shm), if any
write_locker() {
	ino=$(stat -c %i "$T/p/$1/catalog.db-shm" 2>/dev/null) || return
	awk -v ino="$ino" '$2 == "POSIX" && $4 == "WRITE" && $7 == 120 { split($6, d, ":"); if (d[3] == ino) print $5 }' /proc/locks
}

# ---- another program holds the write lock --------------------------------------
mkfifo "$T/sq"
sqlite3 "$T/p/tank/catalog.db" <"$T/sq" >/dev/null &
sq=$!
exec 3>"$T/sq"
echo "BEGIN IMMEDIATE;" >&3
i=0
while [ "$i" -lt 50 ] && [ "$(write_locker tank)" != "$sq" ]; do sleep 0.1; i=$((i + 1)); done
is "$(write_locker tank)" "$sq" "(a sqlite3 shell holds the catalogue's write lock)"
msg="pool 'tank' is busy: pid $sq \\(sqlite3\\) holds its catalogue's write lock\$"
refused 1 "^ferry: cannot set property for 'tank/a': $msg" "set names the sqlite3 shell and its pid" \
	"$FERRY" set foo:bar=1 tank/a
refused 1 "^ferry: .*$msg" "destroy of a snapshot too" "$FERRY" destroy tank/a@1
refused 1 "^ferry: .*$msg" "a capture's commit too" "$FERRY" snapshot tank/a@3
refused 1 "^ferry: .*$msg" "create too" "$FERRY" create tank/new
run ferry list -H -o name -t snapshot -r tank
is "$rc:$(cat "$T/out" | tr '\n' ' ')" "0:tank/a@1 tank/a@2 tank/a/b@1 " "reading works meanwhile, and nothing changed"
echo "COMMIT;" >&3
exec 3>&-
wait "$sq"
run ferry set foo:bar=1 tank/a
is "$rc" 0 "once the shell commits, set works"

# ---- a long recv -F holds the write lock and the gc lock --------------------
ferry send -R tank/a@1 >"$T/pkg"
ferry pool create bk "$T/p/bk"
mkfifo "$T/in"
"$FERRY" recv -F bk/r <"$T/in" >"$T/recv.out" 2>"$T/recv.err" &
rp=$!
exec 4>"$T/in"
# all of the first substream (tank/a, 3 MB) and part of the second: the
# package's transaction opens at the first commit and stays open
head -c 5000000 "$T/pkg" >&4
i=0
while [ "$i" -lt 100 ] && [ "$(write_locker bk)" != "$rp" ]; do sleep 0.1; i=$((i + 1)); done
is "$(write_locker bk)" "$rp" "(the receive holds bk's catalogue write lock)"
msg="pool 'bk' is busy: a receive into bk/r \\(pid $rp\\) is running\$"
refused 1 "^ferry: cannot create 'bk/x': $msg" "create names the receive and its pid" \
	"$FERRY" create bk/x
refused 1 "^ferry: .*$msg" "gc, kept out by the gc lock, names it too" "$FERRY" gc bk
tail -c +5000001 "$T/pkg" >&4
exec 4>&-
wait "$rp"
is "$?:$(cat "$T/recv.err")" "0:" "the receive then completes"
run ferry create bk/x
is "$rc" 0 "and create works"
run ferry gc bk
is "$rc" 0 "and gc"
is "$(ls "$T/p/bk/run")" "" "no activity record is left once the commands end"

# ---- a killed holder is not named -------------------------------------------------
mkfifo "$T/in2"
"$FERRY" recv bk/k <"$T/in2" 2>/dev/null &
kp=$!
exec 5>"$T/in2"
head -c 2000000 "$T/pkg" >&5
i=0
while [ "$i" -lt 50 ] && [ -z "$(ls "$T/p/bk/run" 2>/dev/null | grep "^$kp\\.")" ]; do sleep 0.1; i=$((i + 1)); done
like "$(ls "$T/p/bk/run")" "^$kp\\." "(a receive has its activity record)"
refused 1 "^ferry: .*pool 'bk' is busy: a receive into bk/k \\(pid $kp\\) is running\$" \
	"gc names a plain receive holding the gc lock" "$FERRY" gc bk
kill -9 "$kp"; wait "$kp" 2>/dev/null; exec 5>&-
is "$(ls "$T/p/bk/run" | grep -c "^$kp\\.")" 1 "kill -9 leaves its record"
run ferry gc bk
is "$rc:$(cat "$T/err")" "0:" "gc runs: the dead holder's record does not make the pool busy"
is "$(ls "$T/p/bk/run" | grep -c "^$kp\\.")" 0 "(and the stale record is gone)"

# ---- no doubled prefixes, no SQLite words alone ----------------------------------
grep -h "catalogue: catalogue\|database is locked" "$T"/*.err "$T/err" >"$T/bad" 2>/dev/null
is "$(cat "$T/bad")" "" "no message says 'catalogue: catalogue:' or only 'database is locked'"
ferry pool create ctl "$T/p/ctl"
ferry recv -F ctl/r <"$T/pkg"
ferry create ctl/x
after_check bk ctl "the receive that made others wait"
done_testing
