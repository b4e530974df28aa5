#!/bin/sh
# pool recover killed (kill -9, by strace at a syscall) at spread points of
# its writes: the catalogue it builds, the commit point, each step of the
# swap. After each kill the pool is as before (its old catalogue, which
# the next open uses) or recovered (the next open finishes the swap), and
# a recover run again succeeds with the same state. Without strace: skipped.
. "$(dirname "$0")/lib.sh"

if ! command -v strace >/dev/null 2>&1; then
	echo "1..0 # SKIP strace is not installed"
	exit 0
fi
P=$T/p/tank
mkdir -p "$T/p" "$T/src/sub"
seq 1 30000 >"$T/src/sub/seq"
head -c 100000 /dev/urandom >"$T/src/r"
run sh -c "'$FERRY' pool create tank '$P' && '$FERRY' create -o source='$T/src' -o user:x=1 tank/fs &&
	'$FERRY' snapshot tank/fs@a && echo b >'$T/src/b' && '$FERRY' snapshot tank/fs@b &&
	'$FERRY' hold keep tank/fs@a && '$FERRY' bookmark tank/fs@a tank/fs#bm &&
	'$FERRY' create -V 256K tank/vol && '$FERRY' gc tank"
is "$rc" 0 "a pool with a filesystem, a volume, snapshots, a hold and a bookmark"

state() {
	ferry list -H -p -r -t all -o name,type,guid,createtxg,creation,used,referenced,written tank
	ferry get -H -p -r all tank | awk -F'\t' '$2 != "available"'
	ferry holds -H -p tank/fs@a
}
state >"$T/before"
ferry restore tank/fs@b "$TS/before-b"
cp -a "$P" "$T/copy"

# the profile: how many of each write-class call one recover makes
rm -f "$P/catalog.db"
strace -f -qq -c -U name,calls -o "$T/profile" "$FERRY" pool recover tank >/dev/null 2>&1
calls() { awk -v s="$1" '$1 == s { print $2 }' "$T/profile"; }
nw=$(calls pwrite64) nf=$(calls fsync) nr=$(calls rename)
like "${nw:-0}:${nf:-0}:${nr:-0}" "^[1-9][0-9]*:[1-9]:[1-9]$" "the profile has writes, fsyncs and renames"
points="pwrite64:1 pwrite64:$(( (nw + 1) / 2 )) pwrite64:$nw"
i=1; while [ "$i" -le "$nf" ]; do points="$points fsync:$i"; i=$((i + 1)); done
i=1; while [ "$i" -le "$nr" ]; do points="$points rename:$i"; i=$((i + 1)); done
points="$points unlink:1"

# kill_at SYS:N WHAT: a fresh copy of the pool, WHAT done to it (keep: its
# catalogue as it is; delete: catalog.db deleted), recover killed at SYS:N
for how in keep delete; do
	for pt in $points; do
		rm -rf "$P" && cp -a "$T/copy" "$P"
		[ "$how" = delete ] && rm -f "$P/catalog.db"
		strace -f -qq -o /dev/null -e inject="${pt%%:*}:signal=KILL:when=${pt#*:}" \
			"$FERRY" pool recover tank >/dev/null 2>&1
		krc=$?
		bad=''
		if [ "$how" = keep ] || [ -e "$P/catalog.db" ] || [ -e "$P/catalog.db.recover" ]; then
			# as before, or recovered: the next open finishes the swap
			[ "$(state 2>&1)" = "$(cat "$T/before")" ] || bad="$bad; the state after the kill differs"
			[ ! -e "$P/catalog.db.recover" ] || bad="$bad; the open left catalog.db.recover"
		fi
		run ferry pool recover tank
		[ "$rc" = 0 ] || bad="$bad; recover again: rc $rc: $(cat "$T/err")"
		[ "$(state 2>&1)" = "$(cat "$T/before")" ] || bad="$bad; the state after recover differs"
		[ -z "$(ls "$P" | grep '^catalog\.db\.recover')" ] || bad="$bad; a catalog.db.recover file is left"
		if [ -z "$bad" ]; then
			ok "$how, killed at $pt (exit $krc): as before or recovered, and recover again gives the same state"
		else
			not_ok "$how, killed at $pt (exit $krc)"; diag "${bad#; }"
		fi
	done
done
rm -rf "$TS/now"
ferry restore tank/fs@b "$TS/now"
"$FERRY_TOOLS/treecmp" "$TS/before-b" "$TS/now" >"$T/cmp" 2>&1
is "$?" 0 "the last recovered pool restores tank/fs@b as before"
run ferry gc tank
is "$rc" 0 "gc on it"
is "$(state)" "$(cat "$T/before")" "after gc, the same state"
done_testing
