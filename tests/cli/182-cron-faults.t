#!/bin/sh
# A cron job under faults. Simulated hours (FERRY_NOW stepping hourly, two
# files changing each hour, as in 95-sync-year.t, and 600 KB more every
# eighth hour) of snapshot --auto, sync,
# prune on both sides and, every sixth hour, gc of both pools (and of the
# backup whenever a sync left a partial receive to resume); about one
# command in three runs with the fault build (lib/fault.c) failing one or
# two of its writes, fsyncs, renames, unlinks, creates or allocations at a
# random point (CRON_SEED chooses them; CRON_HOURS how many hours, default
# 60; make torture-cron runs more); a quarter of the syncs lose their
# connection at a random byte. No command may crash or misuse its
# exit status; a failure says why in one line; a snapshot exists exactly
# when its command said so. Then clean runs of sync, prune and gc must
# bring both sides level, and every snapshot left on either side restores
# identical to the tree of its hour; scrub finds nothing; and the backup's
# figures and blocks equal those of a pool that got its snapshots in one
# send -R.
. "$(dirname "$0")/lib.sh"
FB=${FERRY_FAULT_BIN:-$FERRY_SRC/build-fault/ferry}
if [ ! -x "$FB" ]; then
	_n=$((_n + 1)); echo "ok $_n # skip no fault build at $FB (make BUILD=build-fault FAULT=1)"
	done_testing; exit $?
fi
HOURS=${CRON_HOURS:-60}
SEED=${CRON_SEED:-1}
W=$T/w
mkdir -p "$W/src"
ferry pool create tank "$W/tank"
ferry pool create -o compression=gzip-6 bk "$W/bk"
ferry create bk/host1
ferry set ferry:keep-hourly=24 ferry:keep-daily=30 ferry:keep-monthly=12 ferry:keep-yearly=5 bk
for k in 0 1 2 3 4 5 6 7; do printf 'init %s\n' "$k" >"$W/src/f$k"; done
head -c 200000 /dev/urandom >"$W/src/big"
ferry create -o source="$W/src" tank/home
# the backup is reached over a pseudo-ssh (FERRY_SSH, as in 98-sync-ssh.t):
# what sshd would run for a key forced to `ferry shell --append-only`; when
# $T/cut names a byte count, the connection drops after that many bytes of
# a receive's stream (the far side keeps a partial receive to resume). The
# far side runs the fault build too when the command has faults.
cat >"$T/ssh" <<EOF
#!/bin/sh
while [ \$# -gt 1 ]; do shift; done
bin=$FERRY
[ -n "\${FERRY_FAULT:-}" ] && bin=$FB
case "\$1" in
*" recv "*) if [ -s "$T/cut" ]; then
	n=\$(cat "$T/cut")
	head -c "\$n" | SSH_ORIGINAL_COMMAND=\$1 "\$bin" shell --scope bk/host1 --append-only
	exit \$?
fi ;;
esac
SSH_ORIGINAL_COMMAND=\$1 exec "\$bin" shell --scope bk/host1 --append-only
EOF
chmod +x "$T/ssh"
export FERRY_SSH=$T/ssh
DEST=ssh://backup@bk.example/bk/host1/home

# the plan: per hour and command, "-" (a clean run) or the faults to
# inject, and for a sync "-" or where the connection drops
python3 - "$HOURS" "$SEED" >"$T/plan" <<'EOF'
import datetime, random, sys
hours, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
# how far into a command each kind's calls go (most commands here make
# fewer: a point past the end fires nothing)
span = {"write": 120, "fsync": 16, "rename": 5, "unlink": 6, "create": 12, "alloc": 20000}
kinds = list(span)
def fault():
    out = []
    for _ in range(1 if rng.random() < 0.7 else 2):
        k = rng.choice(kinds)
        err = "ENOMEM" if k == "alloc" else rng.choice(["EIO", "ENOSPC"]) if k in ("write", "create") else "EIO"
        out.append("%s:%d:%s" % (k, rng.randint(1, span[k]), err))
    return ",".join(out)
t = datetime.datetime(2024, 1, 1)
for h in range(hours):
    now = (t + datetime.timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cmds = ["snap", "sync", "prune-src", "prune-bk"] + (["gc-tank", "gc-bk"] if h % 6 == 5 else [])
    for c in cmds:
        cut = "-"
        if c == "sync" and rng.random() < 0.25:
            # blob's hours send 600 KB, the others a few KB
            cut = str(rng.randint(1, 650000 if h % 8 == 0 else 6000))
        print(h, now, c, fault() if rng.random() < 1 / 3 else "-", cut)
EOF

# step CMD...: runs one planned command ($plan_f: its faults, or -), with
# the fault build when it has faults; checks its exit status and stderr
crashes=0 misuse=0 chatty=0 faulted=0 fired=0 failed=0
step() {
	rm -f "$T/fired"
	if [ "$plan_f" = - ]; then
		"$FERRY" "$@" >/dev/null 2>"$T/err" </dev/null
	else
		faulted=$((faulted + 1))
		FERRY_FAULT=$plan_f FERRY_FAULT_LOG="$T/fired" "$FB" "$@" >/dev/null 2>"$T/err" </dev/null
	fi
	rc=$?
	[ -s "$T/fired" ] && fired=$((fired + 1))
	_what="hour $plan_h: ferry $* ($plan_f)"
	_lines=$(wc -l <"$T/err")
	if [ "$rc" -ge 128 ]; then
		crashes=$((crashes + 1)); diag "$_what: crashed ($rc): $(head -c 300 "$T/err")"; return
	fi
	case "$1:$rc" in
	*:0) [ "$_lines" = 0 ] || { chatty=$((chatty + 1)); diag "$_what: succeeded saying $(head -c 300 "$T/err")"; } ;;
	sync:1 | sync:3 | *:1)
		failed=$((failed + 1))
		if [ "$_lines" != 1 ] || ! grep -q '^ferry: ' "$T/err"; then
			chatty=$((chatty + 1)); diag "$_what: failed in $_lines lines: $(head -c 300 "$T/err")"
		fi ;;
	*) misuse=$((misuse + 1)); diag "$_what: exit $rc: $(head -c 300 "$T/err")" ;;
	esac
}

# blob H: the bytes of file blob from hour H on
blob() { python3 "$FERRY_SRC/tests/cli/hour_trees.py" blob "$1"; }
t0=$(date +%s)
snapbad=0 partials=0 gcbad=0
while read -r plan_h now cmd plan_f plan_cut; do
	if [ "$cmd" = snap ]; then
		# two files change each hour: f(h mod 5) and f(5 + h mod 3)
		printf 'hour %s\n' "$plan_h" >"$W/src/f$((plan_h % 5))"
		printf 'hour %s padded\n' "$plan_h" >"$W/src/f$((5 + plan_h % 3))"
		# and every eighth hour 600 KB of new random bytes (a stream
		# long enough for a fault to cut it in the middle)
		[ $((plan_h % 8)) = 0 ] && blob "$plan_h" >"$W/src/blob"
	fi
	export FERRY_NOW=$now
	case $cmd in
	snap)
		step snapshot --auto tank/home
		name=tank/home@auto-$(echo "$now" | tr -d ':-')
		if "$FERRY" list -H -o name "$name" >/dev/null 2>&1; then there=1; else there=0; fi
		[ "$rc" = 0 ] && [ "$there" = 0 ] && { snapbad=$((snapbad + 1)); diag "hour $plan_h: snapshot said yes, $name is not there"; }
		[ "$rc" != 0 ] && [ "$there" = 1 ] && { snapbad=$((snapbad + 1)); diag "hour $plan_h: snapshot failed, $name is there"; }
		;;
	sync)
		if [ "$plan_cut" = - ]; then rm -f "$T/cut"; else echo "$plan_cut" >"$T/cut"; fi
		step sync -q tank/home "$DEST"
		rm -f "$T/cut"
		# a gc between a broken sync and the next one, which resumes it
		# (where a resumed receive once lost its blocks)
		tok=$("$FERRY" get -H -o value receive_resume_token bk/host1/home 2>/dev/null)
		case "$tok" in 1-*)
			partials=$((partials + 1))
			"$FERRY" gc bk >/dev/null 2>"$T/err" || { gcbad=$((gcbad + 1)); diag "hour $plan_h: gc after a broken sync: $(cat "$T/err")"; } ;;
		esac ;;
	prune-src) step prune --keep-hourly 24 --keep-daily 7 tank/home ;;
	prune-bk) step prune -r bk ;;
	gc-tank) step gc tank ;;
	gc-bk) step gc bk ;;
	esac
done <"$T/plan"
diag "$HOURS hours in $(($(date +%s) - t0)) s (seed $SEED): $faulted commands with faults, $fired reached them, $failed failed; $partials syncs left a partial receive"
is "$crashes" 0 "no command crashed"
is "$misuse" 0 "every exit status is 0 or 1 (sync: or 3)"
is "$chatty" 0 "a success is silent, a failure says why in one line"
is "$snapbad" 0 "a snapshot exists exactly when snapshot said so"
is "$gcbad" 0 "gc between a broken sync and its resume succeeds"
[ "$fired" -ge $((faulted / 4)) ] && ok "faults fired in $fired of $faulted commands" ||
	not_ok "faults fired in $fired of $faulted commands (a quarter at least)"

# then the cron job's next clean hour brings both sides level
export FERRY_NOW
run ferry sync -q tank/home "$DEST"
is "$rc:$(cat "$T/err")" "0:" "a clean sync after it all succeeds"
run ferry prune --keep-hourly 24 --keep-daily 7 tank/home
is "$rc:$(cat "$T/err")" "0:" "a clean prune of the source"
run ferry prune -r bk
is "$rc:$(cat "$T/err")" "0:" "a clean prune of the backup"
run ferry gc tank
is "$rc:$(cat "$T/err")" "0:" "gc of the source"
run ferry gc bk
is "$rc:$(cat "$T/err")" "0:" "gc of the backup"
newest=$(ferry list -H -t snapshot -o name tank/home | tail -1)
like "$(ferry list -H -t snapshot -o name bk/host1/home)" "^bk/host1/home@${newest#*@}\$" \
	"the backup has the source's newest snapshot"
is "$(ferry holds -H "$newest" | cut -f2)" "ferry-sync:$DEST" "which is the source's held sync base"

# every snapshot on both sides restores as the source was at its hour
ferry list -H -t snapshot -o name tank/home bk/host1/home >"$T/kept"
python3 "$FERRY_SRC/tests/cli/hour_trees.py" trees "$T/kept" "$TS/e" "$W/src/big" blob
restore_cmp "$T/kept" "$TS/e"
is "$bad" 0 "all $checked snapshots on both sides restore as the source was at their hour"
run ferry scrub tank
is "$rc" 0 "scrub of the source finds nothing"
run ferry scrub bk
is "$rc" 0 "scrub of the backup finds nothing"

# the backup against a pool that got the same snapshots in one stream
ferry pool create -o compression=gzip-6 ctl "$W/ctl"
ferry create ctl/host1
ferry send -R "$(ferry list -H -t snapshot -o name bk/host1/home | tail -1)" | ferry recv ctl/host1/home
# (a snapshot a commit: its first gc merges the small packs of a long
# history, and must find nothing else; after_check's then finds nothing)
run ferry gc -v ctl
like "$rc:$(cat "$T/out" "$T/err")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, [0-9]+ rewritten, 0 orphans removed$" \
	"the control's first gc merges small packs only"
after_check bk/host1/home ctl/host1/home "the backup after $HOURS hours with faults"
done_testing
