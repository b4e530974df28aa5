#!/bin/sh
# Issue 11, item 4: in `ferry send ... | ferry recv ...` on one terminal
# exactly one progress line is drawn, the receiver's, and it knows the
# total: a send whose stderr is a terminal writes its size estimate (a dry
# run's count, what -nv prints) into the stream's HINT (ferry-stream(5)).
# A stream without one (an old golden vector, cron) is received as before,
# its line without a percentage; an estimate above or below the truth, or
# a hostile 2^64-1, never breaks the line (clamped: no more than 100 %, the
# line ends at 100 %) nor the receive.
. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || { ok "# SKIP no script(1)"; done_testing; exit; }
V=$FERRY_SRC/tests/vectors/good
S="$T/src"
mkdir -p "$S/d"
"$FERRY_TOOLS/prng" bin 1 12000000 >"$S/r1"
"$FERRY_TOOLS/prng" bin 2 12000000 >"$S/r2"
"$FERRY_TOOLS/prng" text 3 6000000 >"$S/d/t"
ferry pool create tank "$T/tank"
ferry pool create bk "$T/bk"
ferry pool create ctl "$T/ctl"
ferry pool create vp "$T/vp"
ferry create -o source="$S" tank/a
ferry snapshot tank/a@s1
# the control: the same data by a pipe nobody watches
ferry send tank/a@s1 2>/dev/null | ferry recv ctl/a

# onpty CMD: runs the shell command on a pseudo-terminal (script(1)); its
# output split into lines at \n (a line's redraws are \r-separated, each
# ending in the erase that | stands for), in $T/pty
onpty() {
	script -qfec "$1" /dev/null </dev/null >"$T/pty.raw" 2>&1
	rc=$?
	tr -d '\r' <"$T/pty.raw" | sed 's/\x1b\[K/|/g' >"$T/pty"
}
meter_lines() { grep -c '/s' "$T/pty"; }
last_draw() { grep '/s' "$T/pty" | tail -1 | tr '|' '\n' | grep . | tail -1; }
# every percentage any redraw showed, one a line
percents() { grep -oE '\([0-9]+%\)' "$T/pty" | tr -d '()%'; }
max_percent() { percents | sort -n | tail -1; }
hint_size() { ferry dump "$1" | awk '/^HINT record/ { h = 1 } h && $1 == "size" { print $3; exit }'; }
size_of() { wc -c <"$1" | tr -d ' '; }

# ---- send | recv on one terminal ------------------------------------------------
onpty "'$FERRY' send tank/a@s1 | '$FERRY' recv bk/a"
is "$rc:$(meter_lines)" "0:1" "send | recv on one terminal: exactly one status line"
like "$(last_draw)" '^bk/a: ([0-9.]+[KMG]?) of \1 \(100%\), [0-9.]+[KMG]?B?/s, ETA 0s$' \
	"it is the receiver's, and it has a total, a percentage and an ETA"
if grep -q 'tank/a@s1:' "$T/pty"; then not_ok "the sender drew nothing into the pipe"
else ok "the sender drew nothing into the pipe"; fi
is "$(max_percent)" 100 "no redraw showed more than 100 %"

# what the sender wrote: its dry run's count, which is exactly the stream
onpty "'$FERRY' send tank/a@s1 >'$T/s1.stream'"
is "$rc" 0 "send to a file on a terminal"
is "$(hint_size "$T/s1.stream")" "$(size_of "$T/s1.stream")" \
	"the stream's HINT holds its exact size"
onpty "'$FERRY' send -nP tank/a@s1"
like "$(cat "$T/pty")" "size	$(size_of "$T/s1.stream")" \
	"send -nP on the terminal estimates what a send from it carries, HINT included"
ferry send tank/a@s1 >"$T/cron.stream" 2>/dev/null
is "$(ferry dump "$T/cron.stream" | grep -c '^HINT')" 0 \
	"with nobody watching (stderr no terminal) the stream has no HINT"
is "$(( $(size_of "$T/s1.stream") - $(size_of "$T/cron.stream") ))" 40 \
	"and is the same stream but for the HINT's 40 bytes"
onpty "'$FERRY' send -q tank/a@s1 >'$T/q.stream'"
is "$(ferry dump "$T/q.stream" | grep -c '^HINT')" 0 "send -q writes no estimate either"
# into a pipe -c makes no dry run for it (it would read every block twice)
onpty "'$FERRY' send -c tank/a@s1 | '$FERRY' dump - >'$T/c.dump'"
is "$rc:$(grep -c '^HINT' "$T/c.dump")" "0:0" "send -c into a pipe: no estimate (no extra pass over the data)"
onpty "'$FERRY' send -c tank/a@s1 >'$T/c.stream'"
is "$(hint_size "$T/c.stream")" "$(size_of "$T/c.stream")" \
	"send -c to a file, which counts for its own line anyway: the estimate is in"

# ---- a stream without a HINT: an old golden vector ------------------------------
onpty "'$FERRY' recv vp/v <'$V/full.stream'"
is "$rc:$(meter_lines)" "0:1" "an old stream without HINT is received, one status line"
like "$(last_draw)" '^vp/v: [0-9.]+[KMG]?B?, [0-9.]+[KMG]?B?/s$' "with bytes and rate, no percentage"
is "$(percents)" "" "no redraw had a percentage"
onpty "'$FERRY' recv vp/h <'$V/hint.stream'"
like "$rc:$(last_draw)" '^0:vp/h: ([0-9.]+[KMG]?B?) of \1 \(100%\), .*ETA 0s$' \
	"the same stream with a HINT: the line has its total"

# ---- wrong and hostile estimates -------------------------------------------------
full=$(size_of "$T/s1.stream")
"$FERRY_TOOLS/sethint" $((full * 4)) <"$T/s1.stream" >"$T/big.stream"
"$FERRY_TOOLS/sethint" 1000 <"$T/s1.stream" >"$T/small.stream"
"$FERRY_TOOLS/sethint" 18446744073709551615 <"$T/s1.stream" >"$T/huge.stream"
is "$(hint_size "$T/big.stream"):$(hint_size "$T/small.stream"):$(hint_size "$T/huge.stream")" \
	"$((full * 4)):1000:18446744073709551615" "the three rewritten streams carry their estimates"
for k in big small huge; do
	onpty "'$FERRY' recv bk/$k <'$T/$k.stream'"
	is "$rc:$(meter_lines)" "0:1" "$k estimate: received, one status line"
	like "$(last_draw)" "^bk/$k: ([0-9.]+[KMG]?) of \\1 \\(100%\\), [0-9.]+[KMG]?B?/s, ETA 0s\$" \
		"$k estimate: the line ends at the bytes received, 100 %"
	is "$(max_percent)" 100 "$k estimate: no redraw showed more than 100 %"
done
like "$(grep -oE 'ETA [^|]*' "$T/pty" | sort -u | tr '\n' ' ')" '^(ETA (0s|>99h|--) )+$' \
	"the hostile estimate's ETA shows as >99h (or not yet known), never a wrapped number"

# ---- what was received -----------------------------------------------------------
for k in a big small huge; do
	after_check "bk/$k" ctl/a "bk/$k"
done

done_testing
