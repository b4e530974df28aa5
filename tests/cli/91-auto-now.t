#!/bin/sh
# FERRY_NOW: every "now" of ferry (snapshot, dataset and hold creation times,
# --auto names) is the given ISO 8601 UTC time, and a bad one is refused
# before anything runs. snapshot --auto[=LABEL] names snapshots
# auto-YYYYMMDDTHHMMSSZ[-LABEL] (one name for a whole -r tree), names that
# sort as their times do; list --prefix shows only snapshots so named.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/c"
echo a >"$T/src/f"
echo c >"$T/src/c/g"
ferry pool create tank "$T/p/tank"
FERRY_NOW=2023-12-31T23:59:58Z ferry create -o source="$T/src" tank/a
ferry create -o source="$T/src/c" tank/a/c
is "$(ferry get -H -p -o value creation tank/a)" 1704067198 "a dataset's creation time comes from FERRY_NOW"

FERRY_NOW=2024-02-29T13:05:07Z ferry snapshot -r --auto=hourly tank/a
is "$(ferry list -H -r -t snapshot -o name tank | tr '\n' ' ')" \
	"tank/a@auto-20240229T130507Z-hourly tank/a/c@auto-20240229T130507Z-hourly " \
	"snapshot -r --auto=LABEL: one name for the tree, from FERRY_NOW"
is "$(ferry get -H -p -o value creation tank/a@auto-20240229T130507Z-hourly)" 1709211907 \
	"the snapshot's creation time is FERRY_NOW"
FERRY_NOW='2024-02-29 14:00:00.5' ferry snapshot --auto tank/a
FERRY_NOW=2024-03-01T00:00:00+00:00 ferry snapshot --auto tank/a
ferry snapshot tank/a@manual
# a later snapshot whose name sorts first would still sort by time
FERRY_NOW=2025-01-01T00:00Z ferry snapshot --auto=daily tank/a
is "$(ferry list -H -t snapshot -o name -s name tank/a | tr '\n' ' ')" \
	"tank/a@auto-20240229T130507Z-hourly tank/a@auto-20240229T140000Z tank/a@auto-20240301T000000Z tank/a@auto-20250101T000000Z-daily tank/a@manual " \
	"auto names sort as their times; other ISO forms are read too"
is "$(ferry list -H -t snapshot -o name --prefix auto- tank/a | tr '\n' ' ')" \
	"tank/a@auto-20240229T130507Z-hourly tank/a@auto-20240229T140000Z tank/a@auto-20240301T000000Z tank/a@auto-20250101T000000Z-daily " \
	"list --prefix shows only the snapshots named so"
is "$(ferry list -H -r -t snapshot -o name --prefix auto-2024022 tank | wc -l)" 3 "list -r --prefix"
is "$(ferry list -H -r -o name --prefix zzz tank | tr '\n' ' ')" "tank tank/a tank/a/c " \
	"--prefix leaves datasets alone"
refused 1 "exists" "a second --auto in the same second is refused" \
	env FERRY_NOW=2025-01-01T00:00:00Z "$FERRY" snapshot --auto=daily tank/a
refused 2 "with --auto, name datasets" "--auto takes datasets" ferry snapshot --auto tank/a@x
refused 2 "not a snapshot name part" "a bad label" ferry snapshot --auto=a/b tank/a
for bad in 2024-13-01T00:00:00Z 2024-02-30T00:00:00Z 2024-01-01T00:00:00+02:00 yesterday 1969-12-31T23:59:59Z; do
	refused 2 "^ferry: FERRY_NOW: '.*' is not an ISO 8601 UTC time" "FERRY_NOW=$bad is refused" \
		env FERRY_NOW="$bad" "$FERRY" list tank
done
is "$(ferry list -H -t snapshot tank/a | wc -l)" 5 "nothing was made by a refused command"
FERRY_NOW=2030-06-15T08:00:00Z ferry hold t tank/a@manual
is "$(ferry holds -H -p tank/a@manual | cut -f3)" 1907740800 "a hold's time comes from FERRY_NOW"
# without FERRY_NOW the real clock is used
now=$(date +%s)
ferry snapshot tank/a@real
c=$(ferry get -H -p -o value creation tank/a@real)
[ "$c" -ge $((now - 5)) ] && [ "$c" -le $((now + 60)) ] && ok "without FERRY_NOW, the wall clock" ||
	not_ok "without FERRY_NOW, the wall clock ($c vs $now)"
done_testing
