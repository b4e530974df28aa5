#!/bin/sh
# Issue 11, item 4: on a terminal (script(1)'s pseudo-terminal here),
# snapshot, send, recv, restore and gc draw one redrawn status line on stderr
# (bytes and files, of how many when known, rate, percentage and ETA with a
# total); it ends with the command; in send | recv only the receiver
# draws; -q and a stderr that is no terminal draw nothing.
. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || { ok "# SKIP no script(1)"; done_testing; exit; }
S="$T/src"
mkdir -p "$S/d"
for i in 1 2 3 4; do head -c 24M /dev/urandom >"$S/f$i"; done
echo small >"$S/d/s"
ferry pool create tank "$T/tank"
ferry pool create bk "$T/bk"
ferry create -o source="$S" tank/a

# onpty CMD: runs the shell command on a pseudo-terminal; its output,
# split into lines at \n (the redraws of one line are \r-separated), in
# $T/pty
onpty() {
	script -qfec "$1" /dev/null </dev/null >"$T/pty.raw" 2>&1
	rc=$?
	tr -d '\r' <"$T/pty.raw" | sed 's/\x1b\[K/|/g' >"$T/pty"
}
# meter_lines: the lines of $T/pty that hold a status line
meter_lines() { grep -c '/s' "$T/pty"; }
last_draw() { grep '/s' "$T/pty" | tail -1 | tr '|' '\n' | grep . | tail -1; }

onpty "'$FERRY' snapshot tank/a@s1"
is "$rc:$(meter_lines)" "0:1" "snapshot on a terminal: one status line"
like "$(last_draw)" "^tank/a@s1: 96(\.0)?M, 5 files, [0-9.]+[KMG]?B?/s$" \
	"it ends with the bytes and files read and the rate (capture knows no total)"

onpty "'$FERRY' restore tank/a@s1 '$TS/r'"
is "$rc:$(meter_lines)" "0:1" "restore on a terminal: one status line"
like "$(last_draw)" "^tank/a@s1: 96(\.0)?M of 96(\.0)?M \(100%\), [0-9]+ files, [0-9.]+[KMG]?B?/s, ETA [0-9]+[smh]" \
	"with the total, the percentage, the rate and the ETA"
like "$(grep '/s' "$T/pty" | tr '|' '\n' | grep -E '\([0-9]{1,2}%\)' | head -1)" \
	"^tank/a@s1: [0-9.]+[KMG]?B? of 96(\.0)?M \([0-9]+%\), .*/s, ETA ([0-9]+[smh]|--)" \
	"and partway through, a percentage under 100"
diff -r "$S" "$TS/r" >/dev/null && ok "the restore is whole" || not_ok "restore differs"

onpty "'$FERRY' send tank/a@s1 >'$T/stream'"
is "$rc:$(meter_lines)" "0:1" "send to a file on a terminal: one status line"
like "$(last_draw)" "^tank/a@s1: [0-9.]+M of [0-9.]+M \(100%\), [0-9.]+[KMG]?B?/s, ETA [0-9]+[smh]" \
	"with its estimate as the total"

onpty "'$FERRY' send tank/a@s1 | '$FERRY' recv bk/a"
is "$rc:$(meter_lines)" "0:1" "send | recv on one terminal: exactly one status line"
like "$(last_draw)" '^bk/a: ([0-9.]+M) of \1 \(100%\), [0-9.]+[KMG]?B?/s, ETA 0s$' \
	"the receiver's, with the total the sender's estimate in the stream gives (67-stream-estimate.t)"

onpty "'$FERRY' send -q tank/a@s1 >'$T/stream2'; '$FERRY' restore -q tank/a@s1 '$TS/r2'"
is "$rc:$(cat "$T/pty")" "0:" "-q: nothing drawn"
onpty "'$FERRY' snapshot tank/a@s2 2>'$T/snap.err'; '$FERRY' restore tank/a@s2 '$TS/r3' 2>'$T/rest.err'; '$FERRY' send -i @s1 tank/a@s2 2>'$T/send.err' | '$FERRY' recv bk/a 2>'$T/recv.err'"
is "$rc:$(cat "$T/pty")" "0:" "stderr not a terminal: nothing on the terminal"
is "$(cat "$T/snap.err" "$T/rest.err" "$T/send.err" "$T/recv.err")" "" "and the files stderr went to stay empty"

ferry gc bk >/dev/null
ferry restore bk/a@s2 "$TS/bk"
diff -r "$S" "$TS/bk" >/dev/null && ok "what was received restores whole" || not_ok "bk/a@s2 differs"

# the control for after_check: the same snapshots of tank/a in one go
ferry pool create ctl "$T/ctl"
ferry send -R tank/a@s2 | ferry recv ctl/a

# gc: the marking, then the sweep of the packs with their total
head -c 24M /dev/urandom >"$S/f1"
ferry snapshot -q tank/a@s3
ferry destroy tank/a@s1
ferry destroy tank/a@s2
onpty "'$FERRY' gc tank"
is "$rc:$(meter_lines)" "0:1" "gc on a terminal: one status line"
like "$(last_draw)" "^tank: sweeping: [0-9.]+[KMG]? of [0-9.]+[KMG]? \(100%\), [0-9.]+[KMG]?B?/s, ETA 0s$" \
	"it ends with the packs swept, of their total, the rate and the ETA"
like "$(grep '/s' "$T/pty" | tr '|' '\n' | grep . | head -1)" "^tank: marking: [0-9.]+[KMG]?B?, [0-9.]+[KMG]?B?/s$" \
	"and begins with the marking (no total)"
ferry snapshot -q tank/a@s4
ferry destroy tank/a@s3
onpty "'$FERRY' gc -q tank; '$FERRY' gc tank 2>'$T/gc.err'"
is "$rc:$(cat "$T/pty"):$(cat "$T/gc.err")" "0::" "gc -q, and gc with stderr not a terminal: nothing drawn"
ferry restore tank/a@s4 "$TS/a4"
diff -r "$S" "$TS/a4" >/dev/null && ok "after the gcs tank/a@s4 restores whole" || not_ok "tank/a@s4 differs"

# sync: a status line while it sends (the dataset, bytes of the
# catalogue's estimate, percentage, rate and ETA: tests/cli/112), cleared
# before its report line on stdout; -q and a non-terminal draw none
onpty "'$FERRY' sync tank/a bk/sy >'$T/sync.out'"
like "$rc:$(grep '/s' "$T/pty" | tr '|' '\n' | grep -c '^tank/a: [0-9.]*[KMG]\?B\? of [0-9.]*[KMG]\?B\? ([0-9]*%), [0-9.]*[KMG]\?B\?/s, ETA ')" \
	"^0:[1-9]" "sync on a terminal: a status line with the dataset, bytes of a total, rate and ETA"
like "$(cat "$T/sync.out")" "^tank/a -> bk/sy: sent " "and its report on stdout"
onpty "'$FERRY' sync -q tank/a bk/sq >'$T/syncq.out'"
is "$rc:$(cat "$T/pty")" "0:" "sync -q: nothing drawn"
onpty "'$FERRY' sync tank/a bk/sn >/dev/null 2>'$T/sync.err'"
is "$rc:$(cat "$T/pty"):$(cat "$T/sync.err")" "0::" "sync with stderr not a terminal: nothing drawn"
# what sync sent restores whole
ferry restore bk/sy@s4 "$TS/sy"
diff -r "$S" "$TS/sy" >/dev/null && ok "what sync sent restores whole" || not_ok "bk/sy@s4 differs"
for d in sy sq sn; do
	ferry send -R tank/a@s4 | ferry recv "ctl/$d"
done
after_check bk ctl "after the receives and syncs"

done_testing
