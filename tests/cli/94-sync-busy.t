#!/bin/sh
# Two overlapping syncs of the same (dataset, destination): the second
# exits at once with status 4 naming the first, or waits with --wait
# (--wait=SECS gives up after SECS); a sync of the same dataset to another
# destination is not held up; a killed sync's lock is free at once.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/sync_lib.sh"
mkdir -p "$T/p" "$T/src"
ferry pool create tank "$T/p/tank"
ferry pool create bk "$T/p/bk"
seq 1 50000 >"$T/src/n"
ferry create -o source="$T/src" tank/a
ferry snapshot tank/a@1
# a slow far side: a pseudo-ssh that waits for a go file before it runs
# the forced command
cat >"$T/slowssh" <<EOF
#!/bin/sh
while [ \$# -gt 1 ]; do shift; done
while [ ! -e "$T/go" ]; do sleep 0.05; done
SSH_ORIGINAL_COMMAND=\$1 exec "$FERRY" shell --scope bk
EOF
chmod +x "$T/slowssh"
sed '/go/d' "$T/slowssh" >"$T/fastssh"
chmod +x "$T/fastssh"
FERRY_SSH=$T/slowssh "$FERRY" sync tank/a ssh://bk/bk/a >"$T/first.out" 2>"$T/first.err" &
first=$!
sleep 0.5
t0=$(date +%s%N)
refused 4 "^ferry: cannot sync 'tank/a' to 'ssh://bk/bk/a': a sync of tank/a to ssh://bk/bk/a is already running \(pid $first\)$" \
	"an overlapping sync exits busy, naming the first" env FERRY_SSH="$T/slowssh" "$FERRY" sync tank/a ssh://bk/bk/a
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -lt 1500 ] && ok "at once ($(((t1 - t0) / 1000000)) ms)" || not_ok "at once ($(((t1 - t0) / 1000000)) ms)"
refused 4 "is already running" "--wait=1 gives up after a second" \
	env FERRY_SSH="$T/slowssh" "$FERRY" sync --wait=1 tank/a ssh://bk/bk/a
run ferry sync tank/a bk/other
is "$rc" 0 "a sync of the same dataset to another destination runs meanwhile"
run env FERRY_SSH="$T/fastssh" "$FERRY" sync -n tank/a ssh://bk/bk/a
is "$rc:$(cat "$T/out")" "0:tank/a -> ssh://bk/bk/a: would send 1 snapshot in full to @1, $(sed -n 's/.*@1, //p' "$T/out")" \
	"so does a dry run (it takes no lock)"
FERRY_SSH=$T/slowssh "$FERRY" sync --wait tank/a ssh://bk/bk/a >"$T/second.out" 2>"$T/second.err" &
second=$!
sleep 0.5
kill -0 "$second" 2>/dev/null && ok "--wait waits" || not_ok "--wait waits"
touch "$T/go"
wait "$first"; r1=$?
wait "$second"; r2=$?
is "$r1:$r2" "0:0" "both succeed"
like "$(cat "$T/first.out")" "^tank/a -> ssh://bk/bk/a: sent 1 snapshot in full" "the first sent"
is "$(cat "$T/second.out")" "tank/a -> ssh://bk/bk/a: up to date at @1" "the second found it done"
# a killed sync leaves no lock behind
rm -f "$T/go"
ferry snapshot tank/a@2
FERRY_SSH=$T/slowssh "$FERRY" sync tank/a ssh://bk/bk/a >/dev/null 2>&1 &
k=$!
sleep 0.5
kill -9 "$k"; wait "$k" 2>/dev/null
touch "$T/go"
run env FERRY_SSH="$T/slowssh" "$FERRY" sync tank/a ssh://bk/bk/a
like "$rc:$(cat "$T/out")" "^0:tank/a -> ssh://bk/bk/a: sent 1 snapshot incremental from @1 to @2" \
	"after a kill -9 the next sync runs at once"
SAS_WANT= same_as_source tank/a bk/a "after the overlapping syncs"
done_testing
