#!/bin/sh
# Crash safety: kill -9 at random points during capture (20 times) and
# during destroy/gc (20 times); the pool must open every time and every
# snapshot that exists must restore identically. After a last gc, the pool
# equals a control that captured copies of the surviving snapshots' trees.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir -p "$S/d"
seq 1 50000 >"$S/d/text"
head -c 2000000 /dev/urandom >"$S/d/rand"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@base
cp -a "$S" "$T/base"
rnd() { printf '0.%03d' "$(shuf -i "$1" -n 1)"; }

# ---- capture -----------------------------------------------------------------
bad=0 done_snaps=0
for i in $(seq 1 20); do
	head -c 3000000 /dev/urandom >"$S/new$i"
	echo "change $i" >>"$S/d/text"
	"$FERRY" snapshot "tank/fs@k$i" >/dev/null 2>&1 &
	pid=$!
	sleep "$(rnd 0-200)"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if ! "$FERRY" list -H -t snapshot -r tank >"$T/list" 2>"$T/err"; then
		bad=$((bad + 1)); diag "pool does not open after kill $i: $(cat "$T/err")"; continue
	fi
	if grep -q "@k$i\$" "$T/list" || grep -q "@k$i	" "$T/list"; then
		done_snaps=$((done_snaps + 1))
		rm -rf "$T/r"
		if ! "$FERRY" restore "tank/fs@k$i" "$T/r" 2>"$T/err" ||
		   ! "$TREECMP" --no-root "$S" "$T/r" >"$T/out"; then
			bad=$((bad + 1)); diag "k$i differs: $(cat "$T/err" "$T/out")"
		fi
		cp -a "$S" "$T/want-k$i"
	fi
	rm -f "$S/new$i"
done
is "$bad" 0 "20 kills during capture: pool opens, completed snapshots restore identically"
diag "$done_snaps of 20 captures completed before their kill"
rm -rf "$T/r"
run ferry restore tank/fs@base "$T/r"
is "$rc" 0 "restore the snapshot taken before the kills"
run "$TREECMP" --no-root "$T/base" "$T/r"
is "$rc" 0 "the snapshot taken before the kills restores identically"
run ferry snapshot tank/fs@after
is "$rc" 0 "a capture after the kills succeeds"
cp -a "$S" "$T/want-after"

# ---- destroy and gc ---------------------------------------------------------------
bad=0
prev=after
for i in $(seq 1 20); do
	head -c 4000000 /dev/urandom >"$S/tmp$i"
	head -c 1000000 /dev/urandom >"$S/keep$i"
	ferry snapshot "tank/fs@g$i" >/dev/null 2>&1
	rm "$S/tmp$i"
	ferry snapshot "tank/fs@h$i" >/dev/null 2>&1
	rm -rf "$T/want-h$i" && cp -a "$S" "$T/want-h$i"
	if [ $((i % 2)) = 0 ]; then
		"$FERRY" destroy "tank/fs@g$i" >/dev/null 2>&1 &
		pid=$!
		sleep "$(rnd 0-30)"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	else
		ferry destroy "tank/fs@g$i" >/dev/null 2>&1
	fi
	"$FERRY" gc tank >/dev/null 2>&1 &
	pid=$!
	sleep "$(rnd 0-150)"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if ! "$FERRY" list -H -t snapshot -r tank >/dev/null 2>"$T/err"; then
		bad=$((bad + 1)); diag "pool does not open after gc kill $i: $(cat "$T/err")"; continue
	fi
	if [ $((i % 4)) = 0 ]; then
		for s in "base:$T/base" "h$((i - 1)):$T/want-h$((i - 1))"; do
			rm -rf "$T/r"
			if ! "$FERRY" restore "tank/fs@${s%%:*}" "$T/r" 2>"$T/err" ||
			   ! "$TREECMP" --no-root "${s#*:}" "$T/r" >"$T/out"; then
				bad=$((bad + 1)); diag "${s%%:*} after gc kill $i: $(cat "$T/err" "$T/out")"
			fi
		done
	fi
done
is "$bad" 0 "20 kills during destroy/gc: pool opens, snapshots restore identically"
# a g snapshot whose destroy was killed before it committed is destroyed
# now, by a destroy that runs to its end: what is left is then known
for i in $(seq 2 2 20); do
	if "$FERRY" list -H -o name "tank/fs@g$i" >/dev/null 2>&1; then
		ferry destroy "tank/fs@g$i"
	fi
done
run ferry gc -v tank
is "$rc" 0 "a full gc after the kills completes"

# The control: every snapshot left (base, the captures that completed
# before their kill, after, h1..h20), in the same order, each captured whole
# from a copy of its tree, with no capture killed, nothing destroyed and no
# gc interrupted. tank's snapshots are compared with the copies themselves
# (every surviving one after the final gc, base included).
ferry pool create ctl "$T/p/ctl"
ferry create ctl/fs
set --
for sn in $("$FERRY" list -H -o name -t snapshot tank/fs); do
	sn=${sn#*@}
	d=$T/want-$sn
	[ "$sn" = base ] && d=$T/base
	ferry snapshot --from "$d" "ctl/fs@$sn"
	set -- "$@" -e "/fs@$sn=$d"
done
after_check "$@" tank ctl "kills during capture, destroy and gc"
done_testing
