#!/bin/sh
# Issue 11, item 3 (the parts done): what zfs users type, in zfs's format.
#  - destroy -n -v / -v in current OpenZFS's words and units ("would
#    destroy X", "would reclaim 36B"; -p: "destroy<TAB>X", "reclaim<TAB>N",
#    with -r too);
#  - get -s local,received,inherited,default,none and get -o all with the
#    RECEIVED column.
# The formats below are copied from OpenZFS (cmd/zfs/zfs_main.c).
. "$(dirname "$0")/lib.sh"

S="$T/src" S2="$T/src2"
mkdir -p "$S" "$S2"
head -c 100000 /dev/urandom >"$S/big"
head -c 50000 /dev/urandom >"$S2/other"
ferry pool create tank "$T/tank"
ferry pool create bk "$T/bk"
ferry create -o source="$S" tank/a
ferry create -o source="$S2" tank/a/c
ferry snapshot -r tank/a@s1
rm "$S/big" "$S2/other"
echo small >"$S/small"
ferry snapshot -r tank/a@s2

# ---- destroy -n -v ----------------------------------------------------------
run ferry destroy -n -v tank/a@s1
is "$rc:$(sed -n 1p "$T/out")" "0:would destroy tank/a@s1" "destroy -nv: would destroy NAME"
like "$(sed -n 2p "$T/out")" "^would reclaim [0-9.]+K$" "would reclaim SIZE with zfs's unit (K)"
is "$(wc -l <"$T/out" | tr -d ' ')" 2 "and nothing else"
run ferry destroy -n -v -p tank/a@s1
rec=$(sed -n 's/^reclaim\t//p' "$T/out")
is "$(sed -n 1p "$T/out")" "destroy	tank/a@s1" "destroy -nvp: destroy<TAB>NAME"
like "$rec" "^[0-9]{6}$" "reclaim<TAB>BYTES, exact"
[ "$rec" -ge 100000 ] && ok "the whole file's blocks ($rec bytes)" || not_ok "reclaim $rec < 100000"
recc=$(ferry destroy -n -v -p tank/a/c@s1 | sed -n 's/^reclaim\t//p')
run ferry destroy -r -n -v -p tank/a@s1
is "$(cat "$T/out")" "destroy	tank/a@s1
destroy	tank/a/c@s1
reclaim	$((rec + recc))" "destroy -rnvp: every snapshot, then the total"
run ferry destroy -n -v -r -p tank/a/c
is "$(cat "$T/out")" "destroy	tank/a/c@s1
destroy	tank/a/c@s2
destroy	tank/a/c" "destroy -nvrp of a dataset: destroy<TAB>NAME lines"
ferry bookmark tank/a@s2 tank/a#b
run ferry destroy -n -v tank/a#b
is "$(cat "$T/out")" "would destroy tank/a#b" "destroy -nv of a bookmark"
run ferry destroy -v tank/a@s1
is "$rc:$(sed -n 1p "$T/out")" "0:will destroy tank/a@s1" "destroy -v: will destroy NAME"
like "$(sed -n 2p "$T/out")" "^will reclaim [0-9.]+K$" "will reclaim SIZE"

# ---- get -s, get -o all ---------------------------------------------------------
ferry set my:tag=one tank/a
ferry snapshot tank/a@s3
ferry send -p tank/a@s3 | ferry recv bk/q
ferry set my:tag=two bk/q
ferry set compression=gzip bk/q
run ferry get -o all my:tag,compression,used bk/q
is "$(cat "$T/out")" "NAME  PROPERTY     VALUE  RECEIVED  SOURCE
bk/q  my:tag       two    one       local
bk/q  compression  gzip   -         local
bk/q  used         $(printf '%-5s' "$(ferry get -H -o value used bk/q)")  -         -" \
	"get -o all: NAME PROPERTY VALUE RECEIVED SOURCE, the received value under a local one"
run ferry get -H -o property,received my:tag bk/q
is "$(cat "$T/out")" "my:tag	one" "get -o received"
run ferry get -H -s local -o property all bk/q
is "$(cat "$T/out")" "compression
my:tag" "get -s local: only the local values"
ferry inherit -S my:tag bk/q
run ferry get -H -s received -o property,value,source all bk/q
is "$(cat "$T/out")" "my:tag	one	received" "get -s received after inherit -S"
run ferry get -H -s none -o property used,compression bk/q
is "$(cat "$T/out")" "used" "get -s none: the read-only figures"
run ferry get -H -s default -o property,source recordsize,compression bk/q
is "$(cat "$T/out")" "recordsize	default" "get -s default"
run ferry get -s temporary all bk/q
is "$rc:$(cat "$T/out")" "0:" "get -s temporary: ferry has none"
refused 2 "bad source 'nosuch'" "get -s with an unknown source" ferry get -s nosuch all bk/q
run ferry get -s local --json all bk/q
is "$(python3 -c 'import json,sys; print(sorted(json.load(sys.stdin)["datasets"]["bk/q"]["properties"]))' <"$T/out")" \
	"['compression']" "get -s with --json"

ferry gc tank >/dev/null
ferry restore tank/a@s2 "$TS/r"
diff -r "$S" "$TS/r" >/dev/null && ok "the remaining snapshot restores to its tree" || not_ok "tank/a@s2 differs"

done_testing
