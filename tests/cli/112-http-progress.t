#!/bin/sh
# Issue 12, progress over HTTP: on a terminal (script(1)'s pseudo-terminal
# here), send --to, recv --from and sync to a URL draw one redrawn status
# line with the bytes of an estimated total, a percentage, the rate and an
# ETA, ending at 100 %. The totals are the catalogue's (ferry(8), send):
# a full send the snapshot's referenced figure, an incremental what the
# base lacks as send -nv counts it (a walk of what changed, no block read),
# a recv --from the server's estimate in the stream's HINT. -q and a
# stderr that is no terminal draw nothing. Fails on the code before it,
# whose line had bytes and rate only.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"

command -v script >/dev/null || { ok "# SKIP no script(1)"; done_testing; exit; }
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S/d"
"$PRNG" bin 1 6000000 >"$S/f1"
"$PRNG" text 2 3000000 >"$S/d/f2"
ferry pool create -o compression=lz4 tank "$T/tank"
ferry create -o source="$S" tank/a
ferry snapshot tank/a@s1
ferry pool create -o compression=lz4 bk "$T/bk"
ferry create bk/c
ferry pool create -o compression=lz4 pull "$T/pull"
token a bk/c append
serve_start bk
D=$URL/bk/c/a

onpty() {
	script -qfec "$1" /dev/null </dev/null >"$T/pty.raw" 2>&1
	rc=$?
	tr -d '\r' <"$T/pty.raw" | sed 's/\x1b\[K/|/g' >"$T/pty"
}
# draws: every drawn state of the status line, one a line
draws() { tr '|' '\n' <"$T/pty" | grep '/s'; }
last_draw() { draws | tail -1; }

# a full send: the total is the snapshot's referenced figure
REF=$(ferry get -H -o value referenced tank/a@s1)
onpty "'$FERRY' send tank/a@s1 --to '$D' --token-file '$T/tok.a' --limit-rate 4M"
is "$rc" 0 "send --to on a terminal"
like "$(draws | head -1)" "^tank/a@s1: [0-9.]+[KMG]?B? of $REF \([0-9]+%\), [0-9.]+[KMG]?B?/s, ETA ([0-9]+[smh]|--)$" \
	"the line has the snapshot's referenced figure as its total, a percentage and an ETA"
like "$(draws | grep -E '\(([1-9]|[1-9][0-9])%\)' | head -1)" "ETA [0-9]+[smh]$" \
	"partway, a percentage between 1 and 99 and a time left"
like "$(last_draw)" '^tank/a@s1: ([0-9.]+[KMG]) of \1 \(100%\), [0-9.]+[KMG]?B?/s, ETA 0s$' \
	"it ends at 100 % of what went through"
is "$(grep -c '/s' "$T/pty")" 1 "one status line"

# an incremental: what the base lacks, as send -nv counts it
"$PRNG" bin 3 4000000 >>"$S/f1"
ferry snapshot tank/a@s2
EST=$(ferry send -nv -i @s1 tank/a@s2 | sed -n 's/^total estimated size is //p')
onpty "'$FERRY' send -i @s1 tank/a@s2 --to '$D' --token-file '$T/tok.a' --limit-rate 2M"
is "$rc" 0 "send -i --to on a terminal"
like "$(draws | head -1)" "^tank/a@s2: [0-9.]+[KMG]?B? of $EST \([0-9]+%\), " \
	"the incremental's total is send -nv's estimate ($EST, not the snapshot's $REF)"
like "$(last_draw)" '^tank/a@s2: ([0-9.]+[KMG]) of \1 \(100%\), .*ETA 0s$' "it ends at 100 %"

# recv --from: the server's estimate in the stream's HINT
onpty "'$FERRY' recv --from '$D@s2' --token-file '$T/tok.a' --limit-rate 4M pull/a"
is "$rc" 0 "recv --from on a terminal"
like "$(draws | grep -E '\(([1-9]|[1-9][0-9])%\)' | head -1)" \
	"^bk/c/a@s2: [0-9.]+[KMG]?B? of [0-9.]+[KMG] \([0-9]+%\), [0-9.]+[KMG]?B?/s, ETA ([0-9]+[smh]|--)$" \
	"its line has a total, a percentage under 100 and an ETA"
like "$(last_draw)" '^bk/c/a@s2: ([0-9.]+[KMG]) of \1 \(100%\), .*ETA 0s$' "it ends at 100 %"
ferry restore pull/a@s2 "$TS/pull"
diff -r "$S" "$TS/pull" >/dev/null && ok "what recv --from received restores whole" || not_ok "pull/a@s2 differs"

# sync to the URL: the incremental's estimate again
"$PRNG" text 4 2000000 >"$S/d/f3"
ferry snapshot tank/a@s3
EST=$(ferry send -nv -i @s2 tank/a@s3 | sed -n 's/^total estimated size is //p')
onpty "'$FERRY' sync --token-file '$T/tok.a' tank/a '$D' >'$T/sync.out'"
is "$rc" 0 "sync to the URL on a terminal"
like "$(draws | head -1)" "^tank/a: [0-9.]+[KMG]?B? of $EST \([0-9]+%\), [0-9.]+[KMG]?B?/s, ETA " \
	"its line's total is the incremental's estimate"
like "$(cat "$T/sync.out")" "^tank/a -> $D: sent 1 snapshot incremental from @s2 to @s3" "and its report"

# nothing for -q, nor for a stderr that is no terminal (cron)
"$PRNG" bin 5 3000000 >"$S/f4"
ferry snapshot tank/a@s4
onpty "'$FERRY' send -q -i @s3 tank/a@s4 --to '$D' --token-file '$T/tok.a'; '$FERRY' recv -q --from '$D@s4' -i @s2 --token-file '$T/tok.a' pull/a"
is "$rc:$(cat "$T/pty")" "0:" "-q: nothing drawn (send --to, recv --from)"
ferry destroy pull/a@s4
onpty "'$FERRY' recv --from '$D@s4' -i @s2 --token-file '$T/tok.a' pull/a 2>'$T/recv.err'"
is "$rc:$(cat "$T/pty"):$(cat "$T/recv.err")" "0::" "recv --from with stderr not a terminal: nothing drawn"
"$PRNG" text 6 1000000 >>"$S/d/f2"
ferry snapshot tank/a@s5
onpty "'$FERRY' send -i @s4 tank/a@s5 --to '$D' --token-file '$T/tok.a' 2>'$T/send.err'"
is "$rc:$(cat "$T/pty"):$(cat "$T/send.err")" "0::" "send --to with stderr not a terminal: nothing drawn"
"$FERRY" send -i @s4 tank/a@s5 --to "$D" --token-file "$T/tok.a" 2>"$T/send2.err" | cat
is "$(cat "$T/send2.err")" "" "nor into a file"

ferry restore pull/a@s4 "$TS/pull4"
ferry restore tank/a@s4 "$TS/tank4"
diff -r "$TS/tank4" "$TS/pull4" >/dev/null && ok "pull/a@s4 restores as tank/a@s4" || not_ok "pull/a@s4 differs"

serve_stop
is "$serve_rc" 0 "the server stopped cleanly"
ferry pool create -o compression=lz4 ctl "$T/ctl"
ferry create ctl/c
ferry send -R tank/a@s5 | ferry recv ctl/c/a
after_check bk/c ctl/c "after the transfers with a status line"

done_testing
