#!/bin/sh
# ferry prune: restic's bucket rules (last, hourly, daily, weekly, monthly,
# yearly, within; --prefix), checked against an independent model of them
# (prune_model.py) on snapshots spread over two years; never a held
# snapshot, the newest or a sync base; prune -n changes nothing and prints
# exactly what prune then does; the policy as inheritable ferry:keep-*
# properties applied by prune -r POOL; --gc; every snapshot left restores.
. "$(dirname "$0")/lib.sh"
MODEL="python3 $FERRY_SRC/tests/cli/prune_model.py"
mkdir -p "$T/p" "$T/src"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"
echo base >"$T/src/f"
ferry create -o source="$T/src" tank/a
# 70 snapshots at irregular times over two years (a fixed sequence), the
# file changing with each, named s01..s70 in time order
python3 - "$T/times" <<'EOF'
import datetime, random, sys
r = random.Random(13)
t = datetime.datetime(2023, 3, 30, 22, 15, 7)
with open(sys.argv[1], "w") as f:
    for i in range(70):
        step = r.choice([0.3, 0.7, 1, 2, 5, 11, 26, 50, 170, 400, 900])
        t += datetime.timedelta(hours=step, seconds=r.randint(1, 59))
        f.write(t.strftime("%Y-%m-%dT%H:%M:%SZ") + "\n")
EOF
i=0
while read -r when; do
	i=$((i + 1)); n=$(printf 's%02d' "$i")
	echo "$n" >"$T/src/f"
	FERRY_NOW=$when ferry snapshot tank/a@$n
	mkdir -p "$TS/want/$n"; cp -a "$T/src/." "$TS/want/$n/"
done <"$T/times"
is "$(ferry list -H -t snapshot tank/a | wc -l)" 70 "(70 snapshots over two years)"

snaps() { ferry list -H -p -t snapshot -o name,creation "$1"; }
kept_by() { # DATASET OPTIONS...: what prune -n --json keeps, sorted
	_ds=$1; shift
	ferry prune -n --json "$@" "$_ds" | python3 -c '
import json, sys
for d in json.load(sys.stdin)["datasets"]:
    for s in d["snapshots"]:
        if s["action"] == "keep": print(s["name"])' | sort
}
# untouched: the snapshots the prefix leaves out are listed as kept too
left_by_model() { # DATASET POLICY [--protect NAME]...
	_ds=$1 _pol=$2; shift 2
	snaps "$_ds" | $MODEL expect "$_pol" "$@"
}
check() { # POLICY OPTIONS...
	_pol=$1; shift
	_pre=$(printf '%s' "$_pol" | sed -n 's/.*prefix=\([^,]*\).*/\1/p')
	# what prune keeps, and what the prefix leaves alone
	_got=$( { kept_by tank/a "$@"; ferry list -H -t snapshot -o name tank/a |
		awk -F@ -v p="$_pre" 'p != "" && index($2, p) != 1'; } | sort -u)
	_want=$(left_by_model tank/a "$_pol" --protect "$held" --protect "$based")
	if [ "$_got" = "$_want" ]; then ok "policy $_pol: prune keeps what restic's rules keep"; else
		not_ok "policy $_pol: prune keeps what restic's rules keep"
		diag "ferry: $(echo $_got)" "model: $(echo $_want)"; fi
}
# a held snapshot and a sync base (the snapshot of a ferry-sync bookmark)
held=tank/a@s05 based=tank/a@s09
ferry hold keep $held
ferry bookmark $based "tank/a#ferry-sync_bk_a_00000000"
check last=3 --keep-last 3
check hourly=5 --keep-hourly 5
check daily=7 --keep-daily 7
check weekly=4 --keep-weekly 4
check monthly=6 --keep-monthly 6
check yearly=3 --keep-yearly 3
check hourly=24,daily=7,weekly=4,monthly=12,yearly=5 --keep-hourly 24 --keep-daily 7 \
	--keep-weekly 4 --keep-monthly 12 --keep-yearly 5
check daily=-1 --keep-daily -1
check within=1m2d --keep-within 1m2d
check within=1y --keep-within 1y
check within=3d12h,last=2 --keep-within 3d12h --keep-last 2
check monthly=2,prefix=s6 --keep-monthly 2 --prefix s6

# ---- reasons, -n, and the real thing -----------------------------------------------
run ferry prune -v -n --keep-daily 3 tank/a
like "$(grep "^keep    $held " "$T/out")" "held \\(tag 'keep'\\)$" "a held snapshot is kept as held"
like "$(grep "^keep    $based " "$T/out")" "sync base" "a sync base is kept as one"
like "$(grep "^keep    tank/a@s70 " "$T/out")" "daily snapshot, newest snapshot$" "the newest, with its reasons"
like "$(tail -1 "$T/out")" "^tank/a: [0-9]+ kept, [0-9]+ removed$" "a summary line"
before=$(ferry list -H -p -t snapshot -o name,guid tank/a)
cp "$T/out" "$T/dry"
ferry prune -n --keep-daily 3 tank/a >/dev/null
is "$(ferry list -H -p -t snapshot -o name,guid tank/a)" "$before" "prune -n changes nothing"
run ferry prune -v --keep-daily 3 tank/a
is "$rc:$(cat "$T/err")" "0:" "prune runs"
if cmp -s "$T/dry" "$T/out"; then ok "prune -n printed exactly what prune then did"; else
	not_ok "prune -n printed exactly what prune then did"; diag "$(diff "$T/dry" "$T/out")"; fi
is "$(ferry list -H -t snapshot -o name tank/a | sort)" \
	"$(printf '%s\n' "$before" | cut -f1 | grep -Fxv -f "$(grep '^remove' "$T/out" | awk '{print $2}' >"$T/rm"; echo "$T/rm")" | sort)" \
	"what it said it removed is gone, the rest is there"
is "$(ferry list -H -t snapshot -o name tank/a | sort)" \
	"$(left_by_model tank/a daily=3 --protect $held --protect $based)" "and that is restic's set"
run ferry prune --keep-daily 3 tank/a
is "$(cat "$T/out")" "tank/a: 5 kept, 0 removed" "a second prune has nothing to do"

# ---- the policy from properties ---------------------------------------------------------
mkdir -p "$T/src2"
echo b >"$T/src2/g"
ferry create -o source="$T/src2" tank/b
ferry create -o source="$T/src2" tank/b/c
for d in 1 2 3 4 5 6 7 8; do
	FERRY_NOW=2024-05-0${d}T10:00:00Z ferry snapshot -r tank/b@p$d
	FERRY_NOW=2024-05-0${d}T10:30:00Z ferry snapshot -r tank/b@q$d
done
refused 1 "has no retention policy" "prune without a policy" ferry prune tank/b
ferry set ferry:keep-daily=2 tank
ferry set ferry:keep-last=1 tank/b/c
ferry set ferry:prune-prefix=p tank/b/c
refused 2 "takes a count" "a bad --keep-* value" ferry prune --keep-daily x tank/b
ferry set ferry:keep-hourly=bad tank/a
refused 1 "ferry:keep-hourly of 'tank/a' is 'bad', not a count" "a bad property value" ferry prune -r tank
ferry inherit ferry:keep-hourly tank/a
run ferry prune -r -n --json tank
is "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s:%s:%s/%s" % (x["name"], x["policy_from"], x["policy"]["daily"], x["policy"]["last"])
               for x in d["datasets"]))' "$T/out")" \
	"tank:properties:2/0 tank/a:properties:2/0 tank/b:properties:2/0 tank/b/c:properties:2/1" \
	"prune -r POOL: each dataset's policy, inherited, or its own where it has one"
want_a=$(left_by_model tank/a daily=2 --protect $held --protect $based)
ferry prune -r -v tank >"$T/pr"
is "$(ferry list -H -t snapshot -o name tank/b | tr '\n' ' ')" "tank/b@q7 tank/b@q8 " \
	"the inherited keep-daily=2 thinned tank/b"
is "$(ferry list -H -t snapshot -o name tank/b/c | tr '\n' ' ')" \
	"tank/b/c@q1 tank/b/c@q2 tank/b/c@q3 tank/b/c@q4 tank/b/c@q5 tank/b/c@q6 tank/b/c@p7 tank/b/c@q7 tank/b/c@p8 tank/b/c@q8 " \
	"tank/b/c: its own keep-last=1 and the inherited keep-daily=2, over its ferry:prune-prefix=p snapshots; the others left alone"
is "$(ferry list -H -t snapshot -o name tank/a | sort)" "$want_a" "tank/a's inherited policy: restic's set"
is "$(grep -c '^remove  tank/b@' "$T/pr") $(grep -c '^remove  tank/b/c@' "$T/pr")" "14 6" \
	"and it said so, snapshot by snapshot"
refused 2 "needs --keep" "--prefix alone" ferry prune --prefix p tank/b

# ---- --gc and what is left -----------------------------------------------------------------
ferry release keep $held
ferry destroy "tank/a#ferry-sync_bk_a_00000000"
two=$(ferry list -H -t snapshot -o name tank/a | tail -2)
run ferry prune --gc --keep-last 2 tank/a
like "$(tail -1 "$T/out")" "^gc tank: freed [0-9]+ blocks" "--gc collects after"
is "$(ferry list -H -t snapshot -o name tank/a)" "$two" "keep-last 2"
ferry destroy -r tank/b
ferry send -R tank/a@s70 >"$T/pkg"
ferry recv ctl/a <"$T/pkg"
o1=${two%%
*}
after_check -e "/a@${o1#*@}=$TS/want/${o1#*@}" -e "/a@s70=$TS/want/s70" tank/a ctl/a "after prune --gc"
done_testing
