#!/bin/sh
# ferry dump and the golden stream vectors: every good vector dumps exactly
# as its .dump file says, every bad vector fails with exit 1 and the one
# expected error line, usage errors exit 2. When mkvectors is built, the
# committed vectors must be what it generates.
. "$(dirname "$0")/lib.sh"
V=$FERRY_SRC/tests/vectors

# dump -v, from a file and from stdin
for s in "$V"/good/*.stream; do
	n=$(basename "$s" .stream)
	run ferry dump -v "$s"
	if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && cmp -s "$T/out" "$V/good/$n.dump"; then
		ok "good/$n: dump -v matches"
	else
		not_ok "good/$n: dump -v matches"
		diag "rc=$rc" "$(cat "$T/err")" "$(diff "$V/good/$n.dump" "$T/out" | head -20)"
	fi
	ferry dump -v <"$s" >"$T/stdin.out" 2>"$T/err"
	rc=$?
	if [ "$rc" = 0 ] && cmp -s "$T/stdin.out" "$V/good/$n.dump"; then
		ok "good/$n: dump -v from stdin matches"
	else
		not_ok "good/$n: dump -v from stdin matches"
	fi
	# Without -v the per-record lines of the body are left out.
	grep -Ev '^(NODE|WRITE|WRITE_BYREF) record ' "$V/good/$n.dump" >"$T/want"
	run ferry dump "$s"
	if [ "$rc" = 0 ] && cmp -s "$T/out" "$T/want"; then
		ok "good/$n: dump matches"
	else
		not_ok "good/$n: dump matches"
		diag "$(diff "$T/want" "$T/out" | head -20)"
	fi
done

# bad vectors: exit 1, exactly one stderr line "ferry: dump: <reason>"
for s in "$V"/bad/*.stream; do
	n=$(basename "$s" .stream)
	want=$(cat "$V/bad/$n.err")
	run ferry dump -v "$s"
	lines=$(wc -l <"$T/err")
	if [ "$rc" = 1 ] && [ "$lines" = 1 ] && grep -q '^ferry: dump: ' "$T/err" &&
		grep -qF -- "$want" "$T/err"; then
		ok "bad/$n: refused"
	else
		not_ok "bad/$n: refused"
		diag "rc=$rc (want 1), want: $want" "stderr: $(cat "$T/err")"
	fi
done

# what was decoded before the error is still printed
run ferry dump "$V/bad/trunc-before-end.stream"
is "$rc" 1 "a truncated stream fails dump"
like "$(cat "$T/out")" "^BEGIN record 0" "a bad stream's good records are printed"
like "$(cat "$T/out")" "total records = 8" "and its summary"

# usage and files
refused 2 "dump: invalid option.*usage: ferry dump" "unknown option" ferry dump -x
refused 2 "dump: too many arguments" "two files" ferry dump a b
refused 1 "^ferry: dump: cannot open 'nope.stream'" "missing file" ferry dump nope.stream
run ferry dump - <"$V/good/full.stream"
is "$rc" 0 "'-' reads stdin"
run ferry dump </dev/null
is "$(cat "$T/err")" "ferry: dump: empty stream" "empty stdin"
is "$rc" 1 "empty stdin fails"
printf 'x' >"$T/one"
refused 1 "stream truncated in record 0: 1 of 8 header bytes" "one byte" ferry dump "$T/one"
mkdir "$T/dir"
refused 1 "^ferry: dump: " "a directory" ferry dump "$T/dir"

# the committed vectors are what mkvectors writes
if [ -x "$FERRY_TOOLS/mkvectors" ]; then
	"$FERRY_TOOLS/mkvectors" "$T/vec" >/dev/null 2>&1
	if [ $? = 0 ] && diff -r -x '*.dump' -x README.md "$T/vec" "$V" >"$T/diff" && \
		[ "$(ls "$T/vec/good" | wc -l)" -gt 0 ]; then
		ok "tests/vectors matches mkvectors"
	else
		not_ok "tests/vectors matches mkvectors"
		diag "$(head -10 "$T/diff")"
	fi
fi

done_testing
