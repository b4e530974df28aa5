#!/bin/sh
# kill -9 at write-class system calls (strace syscall-count injection) of
# capture (full, incremental), recv (full, incremental, resumed recv -s of
# both), gc, destroy -r and rollback -r: after every kill the catalogue is
# intact, every pack it lists is whole, the pool opens, the state is the one
# before or after the operation, every snapshot restores identically, the
# operation run again succeeds, and after gc the pool equals a control that
# was never killed. A quick selection of 6 points per operation (54 in all)
# of tests/torture/kill.sh; `make torture-kill` runs more than 1,000. Then the
# harness's self-test: each check reports a pool broken on purpose.
. "$(dirname "$0")/lib.sh"
if ! command -v strace >/dev/null 2>&1; then
	echo "1..0 # SKIP strace is not installed"
	exit 0
fi
# inject works only where ptrace is allowed: a traced echo must die of it
strace -qq -o /dev/null -e inject=write:signal=KILL:when=1 echo x >/dev/null 2>&1
if [ $? != 137 ]; then
	echo "1..0 # SKIP strace cannot inject a signal here (no ptrace?)"
	exit 0
fi
# tmpfs when there is one: a kill -9 does not depend on the disk, and fsync
# is free there (see kill.sh)
SHM=$T
[ -d /dev/shm ] && [ -w /dev/shm ] && SHM=$(mktemp -d /dev/shm/ferry-53.XXXXXX)
trap 'rm -rf "$SHM"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
KILLSH=$FERRY_SRC/tests/torture/kill.sh
export FERRY FERRY_TOOLS FERRY_SRC

sh "$KILLSH" -n 6 -m 50 -w "$SHM/k" -r "$T/results" >"$T/kill.out" 2>&1
rc=$?
[ -s "$T/results" ] || { not_ok "the harness ran"; diag "$(tail -20 "$T/kill.out")"; done_testing; exit 1; }
while read -r name calls run killed missed failed secs; do
	is "$failed" 0 "$name: $killed of $run points killed (of $calls write-class calls), every check holds after each"
done <"$T/results"
killed=$(awk '{ k += $4 } END { print k + 0 }' "$T/results")
[ "$killed" -ge 50 ] && ok "$killed points killed in all" || not_ok "only $killed points killed, fewer than 50"
is "$rc" 0 "tests/torture/kill.sh exits 0"
[ -f "$T/results.failures" ] && diag "$(cat "$T/results.failures")"
diag "$(sed -n '/^operation/,/^total/p' "$T/kill.out")"

sh "$KILLSH" --selftest -w "$SHM/st" -r "$T/selftest" >"$T/st.out" 2>&1
rc=$?
n=0
while read -r _ rest; do
	n=$((n + 1))
	case $rest in
	*" ok") ok "self-test: ${rest% ok}: reported" ;;
	*) not_ok "self-test: ${rest% FAILED}: not reported"; diag "$(grep -F "${rest% FAILED}" "$T/st.out")" ;;
	esac
done <<EOF
$(grep "^selftest " "$T/selftest")
EOF
[ "$n" -ge 25 ] && ok "$n self-test cases ran" || { not_ok "only $n self-test cases ran"; diag "$(tail -5 "$T/st.out")"; }
is "$rc" 0 "kill.sh --selftest exits 0"
done_testing
