#!/bin/sh
# kill -9 at random points of a sync, both sides: strace kills whichever
# process of the sync (the sender, or the receiving ferry on the far side
# of a pseudo-ssh; the one process of a local sync) makes the K-th
# write-class system call, K drawn at random over a sync's profile. Each
# time the next sync recovers without a full resend (a resume of the
# partial receive, or an incremental from the last snapshot that arrived),
# and in the end the destination is identical to the source.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/sync_lib.sh"
if ! strace -f -qq -o /dev/null -e trace=write -e inject=write:signal=KILL:when=1 true 2>/dev/null; then
	echo "1..0 # SKIP strace cannot inject here"; exit 0
fi
KILLS=${SYNC_KILLS:-20}
W=$TS/w
mkdir -p "$W/p" "$W/src"
ferry pool create tank "$W/p/tank"
ferry pool create -o compression=gzip-6 bk "$W/p/bk"
# the local destination in a pool of its own: a block it already has
# must mean it was sent twice, not that the other destination has it
ferry pool create -o compression=gzip-6 lbk "$W/p/lbk"
ferry create lbk/local
seq 1 100000 >"$W/src/n"
ferry create -o source="$W/src" tank/a
# the pseudo-ssh notes the far side's pid: a receive whose sender was
# killed still saves its partial state when the killed sync has returned,
# and the next one must find it done (as it would by the time a timer
# runs again)
cat >"$T/ssh" <<EOF
#!/bin/sh
while [ \$# -gt 1 ]; do shift; done
echo \$\$ >>"$T/remote.pids"
SSH_ORIGINAL_COMMAND=\$1 exec "$FERRY" shell --scope bk/remote --append-only
EOF
chmod +x "$T/ssh"
export FERRY_SSH=$T/ssh
ferry create bk/remote
ROUND=0
change() { # two snapshots, each rewriting a file of the three with 700K
	ROUND=$((ROUND + 1))
	head -c 700000 /dev/urandom >"$W/src/r$((ROUND % 3))"
	echo "$ROUND" >>"$W/src/n"
	ferry snapshot "tank/a@r${ROUND}a"
	head -c 700000 /dev/urandom >"$W/src/r$(((ROUND + 1) % 3))"
	ferry snapshot "tank/a@r${ROUND}b"
}

SC='write,pwrite64,fsync,fdatasync'
calls() { awk '$NF ~ /^(write|pwrite64|fsync|fdatasync)$/ { n += $4 } END { print n }' "$1"; }
change
ferry sync tank/a ssh://bk/bk/remote/a >/dev/null
ferry sync tank/a lbk/local/a >/dev/null
# a sync's profile: write-class calls of one round, both sides, and of a
# local one
change
strace -f -qq -c -o "$T/prof" -e trace=$SC "$FERRY" sync tank/a ssh://bk/bk/remote/a >/dev/null
strace -f -qq -c -o "$T/profl" -e trace=$SC "$FERRY" sync tank/a lbk/local/a >/dev/null
N=$(calls "$T/prof") NL=$(calls "$T/profl")
diag "a round's sync makes $N write-class calls over ssh (both sides), $NL locally"
# the kills: a fixed pseudo-random sequence of (how, K). tree: the whole
# process tree of an ssh sync, K in 1..N (it lands on either side);
# sender: the sending process alone, at its K-th write (the first is its
# activity record, the stream goes 1M a write: K in 3..4 cuts the stream); local: the one process of a local sync, K in 1..NL
python3 -c '
import random, sys
r = random.Random(97)
n, nl = int(sys.argv[1]), int(sys.argv[2])
for i in range(200):
    how = ["local", "sender", "tree", "tree"][i % 4]
    print(how, r.randint(1, {"local": nl, "sender": 4, "tree": n}[how]) if how != "sender" else r.randint(3, 4))' "$N" "$NL" >"$T/ks"
kills=0 sender=0 receiver=0 locals=0 recovered=0 resumed=0 bad=0
while read -r how k && [ "$kills" -lt "$KILLS" ]; do
	if [ "$how" = local ]; then dest=lbk/local/a; else dest=ssh://bk/bk/remote/a; fi
	change
	if [ "$how" = sender ]; then
		strace -qq -o /dev/null -e trace=write -e inject=write:signal=KILL:when="$k" \
			"$FERRY" sync tank/a "$dest" >/dev/null 2>"$T/kerr"
	else
		strace -f -qq -o /dev/null -e trace=$SC -e inject=$SC:signal=KILL:when="$k" \
			"$FERRY" sync tank/a "$dest" >/dev/null 2>"$T/kerr"
	fi
	r=$?
	while read -r p; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done <"$T/remote.pids"
	: >"$T/remote.pids"
	[ "$r" = 0 ] && continue # K was past the end of this sync
	kills=$((kills + 1))
	if [ "$dest" = lbk/local/a ]; then locals=$((locals + 1))
	elif [ "$r" = 137 ]; then sender=$((sender + 1))
	else receiver=$((receiver + 1)); fi
	syncj tank/a "$dest"
	read -r _src mode _cnt res _rest <"$T/sum"
	# a full resend would be mode full; a block the destination already
	# had, sent again, would count as present
	present=$(sed -n 's/^ *"present": \([0-9]*\).*/\1/p' "$T/out" | head -1)
	if [ "$rc" = 0 ] && { [ "$mode" = incremental ] || [ "$mode" = up-to-date ]; } && [ "$present" = 0 ]; then
		recovered=$((recovered + 1))
		[ "$res" = resumed=1 ] && resumed=$((resumed + 1))
	else
		bad=$((bad + 1)); diag "kill $kills ($how K=$k, $dest, rc $r): the next sync: rc=$rc $(cat "$T/sum") present=$present $(cat "$T/err")"
	fi
done <"$T/ks"
diag "$kills kills: $sender of the sender, $receiver of the far side, $locals of a local sync; $resumed recoveries resumed a partial receive"
is "$kills" "$KILLS" "$KILLS syncs killed with kill -9"
[ "$sender" -ge 3 ] && [ "$receiver" -ge 3 ] && [ "$locals" -ge 2 ] && ok "both sides were killed" ||
	not_ok "both sides were killed ($sender, $receiver, $locals)"
is "$recovered:$bad" "$KILLS:0" "each time the next sync recovered without a full resend"
[ "$resumed" -ge 1 ] && ok "some recovered by resuming a partial receive" || not_ok "no recovery resumed"
ferry sync tank/a lbk/local/a >/dev/null
ferry sync tank/a ssh://bk/bk/remote/a >/dev/null
same_as_source tank/a bk/remote/a "over ssh, after the kills"
same_as_source tank/a lbk/local/a "locally, after the kills"
done_testing
