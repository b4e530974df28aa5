#!/bin/sh
# Simulated time (FERRY_NOW stepping hourly, two files changing each hour):
# snapshot --auto, sync and prune on the source (24 hourly, 7 daily), prune
# of the backup by its inherited properties (24 hourly, 30 daily, 12
# monthly, 5 yearly). The snapshots left on both sides equal an independent
# computation of restic's rules (prune_model.py simulate); every sync after
# the first is incremental; every snapshot the backup kept restores
# identical to what the source had at that hour.
#
# make check runs SYNC_HOURS=192 (8 days); tests/sync-year.sh runs a whole
# year (8760 hours) through this same script.
. "$(dirname "$0")/lib.sh"
HOURS=${SYNC_HOURS:-192}
START=2024-01-01T00:00:00Z
# pools and the source tree on tmpfs when there is one: an hour costs four
# commands, and their fsyncs dominate on a disk
W=$TS/w
mkdir -p "$W/p" "$W/src"
ferry pool create tank "$W/p/tank"
ferry pool create -o compression=gzip-6 bk "$W/p/bk"
ferry create bk/host1
ferry set ferry:keep-hourly=24 ferry:keep-daily=30 ferry:keep-monthly=12 ferry:keep-yearly=5 bk
for k in 0 1 2 3 4 5 6 7; do printf 'init %s\n' "$k" >"$W/src/f$k"; done
head -c 200000 /dev/urandom >"$W/src/big"
ferry create -o source="$W/src" tank/home
python3 -c '
import datetime, sys
t = datetime.datetime(2024, 1, 1)
for h in range(int(sys.argv[1])):
    print(h, (t + datetime.timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%SZ"))' "$HOURS" >"$T/hours"
t0=$(date +%s)
modes=$T/modes
: >"$modes"
while read -r h now; do
	# two files change each hour: f(h mod 5) and f(5 + h mod 3)
	printf 'hour %s\n' "$h" >"$W/src/f$((h % 5))"
	printf 'hour %s padded\n' "$h" >"$W/src/f$((5 + h % 3))"
	export FERRY_NOW=$now
	"$FERRY" snapshot --auto tank/home || echo "snapshot $h failed" >>"$modes"
	"$FERRY" sync --json tank/home bk/host1/home >"$T/s.json" 2>>"$T/sync.err"
	echo "$h $? $(grep -o '"mode": "[a-z-]*"' "$T/s.json")" >>"$modes"
	"$FERRY" prune --keep-hourly 24 --keep-daily 7 tank/home >/dev/null || echo "prune $h failed" >>"$modes"
	"$FERRY" prune -r bk >/dev/null || echo "backup prune $h failed" >>"$modes"
done <"$T/hours"
unset FERRY_NOW
t1=$(date +%s)
diag "$HOURS simulated hours in $((t1 - t0)) s"
is "$(head -1 "$modes")" '0 0 "mode": "full"' "the first sync is a full one"
is "$(sed 1d "$modes" | grep -cv ' 0 "mode": "incremental"$')" 0 "every sync after it is incremental"
[ -s "$T/sync.err" ] && diag "$(head -5 "$T/sync.err")"
python3 "$FERRY_SRC/tests/cli/prune_model.py" simulate "$HOURS" "$START" hourly=24,daily=7 \
	hourly=24,daily=30,monthly=12,yearly=5 >"$T/model"
is "$(ferry list -H -t snapshot -o name tank/home | sed 's/.*@/src /')" "$(grep '^src' "$T/model")" \
	"the source kept what restic's rules keep ($(grep -c '^src' "$T/model") snapshots)"
is "$(ferry list -H -t snapshot -o name bk/host1/home | sed 's/.*@/dst /')" "$(grep '^dst' "$T/model")" \
	"the backup kept what restic's rules keep ($(grep -c '^dst' "$T/model") snapshots)"
is "$(ferry holds -H "$(ferry list -H -t snapshot -o name tank/home | tail -1)" | cut -f2)" \
	"ferry-sync:bk/host1/home" "the source's newest is the held base"

ferry gc bk >/dev/null
ferry gc tank >/dev/null
# every kept backup snapshot when there are few, else 40 of them at random
ferry list -H -t snapshot -o name bk/host1/home >"$T/kept"
n=$(wc -l <"$T/kept")
[ "$n" -gt 60 ] && { shuf -n 40 --random-source="$T/hours" "$T/kept" >"$T/pick"; } || cp "$T/kept" "$T/pick"
# the tree at hour H (tests/cli/hour_trees.py), one directory per
# picked snapshot under $TS/e
python3 "$FERRY_SRC/tests/cli/hour_trees.py" trees "$T/pick" "$TS/e" "$W/src/big"
restore_cmp "$T/pick" "$TS/e"
is "$bad" 0 "after gc, $checked kept backup snapshots (of $n) restore as the source was at their hour"
[ "$checked" -ge 20 ] && ok "at least 20 spot-checked" || not_ok "at least 20 spot-checked ($checked)"
done_testing
