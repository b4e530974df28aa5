#!/bin/sh
# The destination (over ssh) unreachable for 10 simulated days while the
# source snapshots and prunes hourly (24 hourly, 7 daily): every sync fails
# saying so, the held base survives every prune, and when the destination
# is back the next sync is one incremental from that base: every snapshot
# the source kept since, each sent once, no block the destination had sent
# again (the stream is exactly `send -I BASE NEWEST`).
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/sync_lib.sh"
W=$TS/w
mkdir -p "$W/p" "$W/src"
ferry pool create tank "$W/p/tank"
ferry pool create -o compression=gzip-6 bk "$W/p/bk"
for k in 0 1 2 3; do echo "init $k" >"$W/src/f$k"; done
ferry create -o source="$W/src" tank/home
cat >"$T/ssh" <<EOF
#!/bin/sh
# pseudo-ssh: the host is down while $T/down exists
while [ \$# -gt 1 ]; do shift; done
if [ -e "$T/down" ]; then echo "ssh: connect to host backup port 22: Connection refused" >&2; exit 255; fi
SSH_ORIGINAL_COMMAND=\$1 exec "$FERRY" shell --scope bk --append-only
EOF
chmod +x "$T/ssh"
export FERRY_SSH=$T/ssh
DEST=ssh://backup/bk/home
python3 -c '
import datetime
t = datetime.datetime(2024, 6, 1)
for h in range(24 * 13):
    u = t + datetime.timedelta(hours=h)
    print(h, u.strftime("%Y-%m-%dT%H:%M:%SZ"), u.strftime("auto-%Y%m%dT%H%M%SZ"))' >"$T/hours"
fails=0 wrong=0
while read -r h now name; do
	[ "$h" = 48 ] && touch "$T/down"
	[ "$h" = 288 ] && { rm -f "$T/down"; break; }
	printf 'hour %s\n' "$h" >"$W/src/f$((h % 4))"
	export FERRY_NOW=$now
	"$FERRY" snapshot --auto tank/home
	mkdir -p "$TS/want/$name"; cp -a "$W/src/." "$TS/want/$name/"
	"$FERRY" sync tank/home "$DEST" >"$T/s.out" 2>"$T/s.err"; r=$?
	if [ -e "$T/down" ]; then
		[ "$r" = 1 ] && grep -q "cannot reach backup: ssh: connect to host backup port 22: Connection refused" "$T/s.err" ||
			{ wrong=$((wrong + 1)); diag "hour $h: rc=$r $(cat "$T/s.err")"; }
		fails=$((fails + 1))
	elif [ "$r" != 0 ]; then
		wrong=$((wrong + 1)); diag "hour $h: rc=$r $(cat "$T/s.err")"
	fi
	[ "$h" = 47 ] && base=$(ferry list -H -t snapshot -o name tank/home | tail -1)
	"$FERRY" prune --keep-hourly 24 --keep-daily 7 tank/home >/dev/null
done <"$T/hours"
is "$fails:$wrong" "240:0" "240 hourly syncs found the destination unreachable and said so"
is "$(ferry holds -H "$base" | cut -f2)" "ferry-sync:$DEST" "the base of the last good sync is still held"
is "$(ferry list -H -t snapshot -o name bk/home | tail -1)" "bk/home@${base#*@}" "(and it is the destination's newest)"
left=$(ferry list -H -t snapshot -o name tank/home | awk -v b="$base" 'f { n++ } $0 == b { f = 1 } END { print n }')
[ "$left" -ge 24 ] && [ "$left" -lt 240 ] && ok "the source pruned its hourly snapshots meanwhile ($left left after the base)" ||
	not_ok "the source pruned meanwhile ($left left after the base)"
newest=$(ferry list -H -t snapshot -o name tank/home | tail -1)
want=$(ferry send -n -P -c -p -I "@${base#*@}" "$newest" | sed -n 's/^size\t//p')
before=$(ferry list -H -t snapshot -o name bk/home | wc -l)
syncj tank/home "$DEST"
is "$rc:$(cat "$T/sum")" "0:tank/home incremental $left resumed=0 aborted=0 @${base#*@} @${newest#*@}" \
	"back online: one incremental from the held base with every snapshot kept since"
is "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["datasets"][0]; print(d["bytes"], d["blocks"]["present"])' "$T/out")" \
	"$want 0" "exactly the stream send -I BASE NEWEST makes, no block the destination had sent again"
is "$(ferry list -H -t snapshot -o name bk/home | wc -l)" "$((before + left))" "each arrived once"
is "$(ferry holds -H "$newest" | cut -f2)  $(ferry get -H -o value userrefs "$base")" "ferry-sync:$DEST  0" \
	"the hold moved to the new base"
unset FERRY_NOW
SAS_WANT=$TS/want same_as_source tank/home bk/home "after ten days offline"
done_testing
