#!/bin/sh
# A stream through a pipe moves in 1 MiB steps: `ferry send` into a pipe,
# `ferry recv` and `ferry dump` from one, each ask the kernel for a 1 MiB
# pipe buffer (io_pipe_grow, F_SETPIPE_SZ) instead of the 64 KiB a shell
# gives, so `send | recv` switches threads a quarter as often. The other
# end of each pipe here is a python3 process that reads the pipe's size
# (F_GETPIPE_SZ) once ferry has had its turn; where the kernel would not
# grant 1 MiB (/proc/sys/fs/pipe-max-size, not root), those checks are
# skipped, not failed. What went through the enlarged pipes must be the
# same stream and make the same snapshots: the receives end with
# after_check against a pool that got the stream from a file.
. "$(dirname "$0")/lib.sh"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
PRNG="$FERRY_TOOLS/prng"
S="$T/src"
mkdir -p "$T/p" "$S/d"
"$PRNG" text 1 3000000 >"$S/text"
"$PRNG" bin 2 2500000 >"$S/random"
for n in 1 2 3 4 5 6 7 8 9; do "$PRNG" text $((n + 10)) $((n * 7000)) >"$S/d/f$n"; done
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@a
cp -a "$S" "$TS/a"
ferry send tank/fs@a >"$T/a.stream"
size=$(stat -c %s "$T/a.stream")
grant=1
max=$(cat /proc/sys/fs/pipe-max-size 2>/dev/null || echo 0)
[ "$(id -u)" = 0 ] || [ "$max" -ge 1048576 ] || grant=0

# the other ends, in python3: F_GETPIPE_SZ reads the size of a pipe.
# feed.py STREAM SIZEFILE writes the stream into its stdout, then waits (at
# most 30 s) for the reader to have grown that pipe and writes its size;
# drain.py OUT reads its stdin to the end into OUT, then prints its size.
cat >"$T/feed.py" <<'PYEOF'
import fcntl, sys, time
F_GETPIPE_SZ = 1032
sys.stdout.buffer.write(open(sys.argv[1], "rb").read())
sys.stdout.buffer.flush()
end = time.time() + 30
while fcntl.fcntl(1, F_GETPIPE_SZ) != 1048576 and time.time() < end:
    time.sleep(0.01)
open(sys.argv[2], "w").write(str(fcntl.fcntl(1, F_GETPIPE_SZ)))
PYEOF
cat >"$T/drain.py" <<'PYEOF'
import fcntl, sys
F_GETPIPE_SZ = 1032
open(sys.argv[1], "wb").write(sys.stdin.buffer.read())
print(fcntl.fcntl(0, F_GETPIPE_SZ))
PYEOF
# grown NAME SIZEFILE: the pipe's size is 1 MiB, or the kernel grants none
grown() {
	if [ $grant = 1 ]; then
		is "$(cat "$2")" 1048576 "$1"
	else
		ok "# SKIP the kernel grants no 1 MiB pipe here (pipe-max-size $max)"
	fi
}

# send into a pipe: the reader takes every byte, then reads the pipe's size
run sh -c "'$FERRY' send tank/fs@a | $PY '$T/drain.py' '$T/sent'"
is "$rc" 0 "send into a pipe: exit 0"
cmp -s "$T/sent" "$T/a.stream"
is "$?" 0 "send into a pipe: the same stream as into a file ($size bytes)"
grown "send makes the pipe it writes into 1 MiB" "$T/out"

# recv from a pipe
ferry pool create -o compression=lz4 dst "$T/p/dst"
run sh -c "$PY '$T/feed.py' '$T/a.stream' '$T/recvsz' | '$FERRY' recv dst/fs"
is "$rc" 0 "recv from a pipe: exit 0"
grown "recv makes the pipe it reads from 1 MiB" "$T/recvsz"

# dump from a pipe: the same stream, the same summary as from the file
ferry dump "$T/a.stream" >"$T/dump.file"
run sh -c "$PY '$T/feed.py' '$T/a.stream' '$T/dumpsz' | '$FERRY' dump"
is "$rc" 0 "dump from a pipe: exit 0"
cmp -s "$T/out" "$T/dump.file"
is "$?" 0 "dump from a pipe: the same records as from the file"
grown "dump makes the pipe it reads from 1 MiB" "$T/dumpsz"

# send | recv, both ends growing the same pipe
ferry pool create -o compression=lz4 both "$T/p/both"
run sh -c "'$FERRY' send tank/fs@a | '$FERRY' recv both/fs"
is "$rc" 0 "send | recv: exit 0"

# a receive from a file, for comparison
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
ferry recv ctl/fs <"$T/a.stream"
after_check -e "/fs@a=$TS/a" dst ctl "received from a grown pipe"
after_check -e "/fs@a=$TS/a" both ctl "received through send | recv"
done_testing
