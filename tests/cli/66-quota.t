#!/bin/sh
# quota and refquota (zfsprops(7); ferry(8) PROPERTIES): set and shown as
# zfs shows them, refused on a volume and below what is used; available
# shows what they leave. Enforced when a snapshot commits (and while a
# receive arrives: tests/cli/89; the streams here are too short to be
# stopped before their end, except a resumption whose partial receive
# alone passes the quota, refused at once): a capture over
# a refquota, a receive over its dataset's quota, over an ancestor's, over
# a refquota, are refused with exit 1 and one line, committing nothing and
# giving the space back; a receive that rolls back first (-F) is measured
# after it; a partial receive (recv -s) whose completion is refused stays
# as it was and completes once the quota is raised. Ends with after_check
# against pools that got the same snapshots without quotas.
. "$(dirname "$0")/lib.sh"
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S"
"$PRNG" bin 1 300000 >"$S/a"
ferry pool create -o compression=off tank "$T/tank"
ferry create -o source="$S" tank/h
ferry snapshot tank/h@one
cp -a "$S" "$TS/one"
"$PRNG" bin 2 300000 >"$S/b"
ferry snapshot tank/h@two
"$PRNG" bin 3 300000 >"$S/c"
ferry snapshot tank/h@three
ferry send tank/h@one >"$T/one.s"
ferry send -i @one tank/h@two >"$T/two.s"
ferry send -i @two tank/h@three >"$T/three.s"
ferry send tank/h@two >"$T/two-full.s"
mkdir "$TS/g"
"$PRNG" bin 9 300000 >"$TS/g/g"
ferry create -o source="$TS/g" tank/g
ferry snapshot tank/g@g1
ferry send tank/g@g1 >"$T/g1.s"
# the streams' snapshots reference 300000, 600000 and 900000 bytes (off)
ferry pool create -o compression=off bk "$T/bk"
ferry create bk/c

# ---- the properties ----
is "$(ferry get -H -o value,source quota,refquota bk/c | tr '\t\n' ' ;')" "none default;none default;" \
	"quota and refquota are none by default"
is "$(ferry get -H -p -o value quota bk/c)" 0 "none is 0 with -p, as in zfs"
run ferry set quota=1M refquota=512K bk/c
is "$rc:$(ferry get -H -o value,source quota,refquota bk/c | tr '\t\n' ' ;')" "0:1M local;512K local;" \
	"set as sizes, shown as zfs shows them"
is "$(ferry get -H -p -o value quota,refquota bk/c | tr '\n' ' ')" "1048576 524288 " "and exactly with -p"
is "$(ferry get -H -p -o value available bk/c)" 524288 "available is what the tightest limit leaves"
ferry create bk/c/x
is "$(ferry get -H -o value,source quota bk/c/x)" "none	default" "a quota is not inherited"
is "$(ferry get -H -p -o value available bk/c/x)" 1048576 "but limits what a child has available"
ferry destroy bk/c/x
ferry set quota=none refquota=none bk/c
is "$(ferry get -H -o value quota,refquota bk/c | tr '\n' ' ')" "none none " "none lifts them"
refused 1 "'quota' must be a size or 'none', not 'lots'" "a bad value is refused" \
	"$FERRY" set quota=lots bk/c
ferry create -V 1M bk/vol
refused 1 "property 'quota' does not apply to a volume" "not on a volume (volsize is its quota)" \
	"$FERRY" set quota=1M bk/vol
refused 1 "property 'refquota' does not apply to a volume" "nor refquota" "$FERRY" set refquota=1M bk/vol
ferry destroy bk/vol

# ---- a capture over its refquota ----
ferry pool create -o compression=off cap "$T/cap"
ferry create -o source="$TS/one" -o refquota=200K cap/h
refused 1 "^ferry: cannot snapshot 'cap/h@one': quota exceeded: 'cap/h' would use 293K, over its refquota of 200K$" \
	"a capture over the refquota is refused with one line" "$FERRY" snapshot cap/h@one
is "$(ferry list -H -r -t snapshot -o name cap | wc -l):$(ferry get -H -p -o value used cap)" "0:0" \
	"nothing of it is committed"
ferry gc cap >/dev/null
is "$(ferry pool status cap | awk '$1 == "off" { print $2 }')" "" "and no block of it stays"
run ferry set refquota=300000 cap/h
is "$rc" 0 "a refquota exactly the size fits"
run ferry snapshot cap/h@one
is "$rc" 0 "then the capture commits"
ferry pool create -o compression=off capctl "$T/capctl"
ferry create -o source="$TS/one" capctl/h
ferry snapshot capctl/h@one

# ---- receives over a quota ----
ferry set quota=400K bk/c
run ferry recv bk/c/h <"$T/one.s"
is "$rc" 0 "a receive within the quota"
refused 1 "^ferry: cannot set property for 'bk/c/h': quota: size is less than current used or reserved space$" \
	"a quota below what is used is refused, in zfs's words" "$FERRY" set quota=200K bk/c/h
refused 1 "refquota: size is less than current used or reserved space" \
	"a refquota below what is referenced too" "$FERRY" set refquota=200K bk/c/h
before=$(ferry list -H -p -r -t all -o name,used,referenced bk)
refused 1 "^ferry: cannot receive into 'bk/c/h': quota exceeded: 'bk/c' would use 586K, over its quota of 400K$" \
	"an incremental over the parent's quota is refused with one line" "$FERRY" recv bk/c/h <"$T/two.s"
is "$(ferry list -H -p -r -t all -o name,used,referenced bk)" "$before" "nothing is committed"
ferry create -o quota=450K bk/c/h2
refused 1 "quota exceeded: 'bk/c/h2' would use 586K, over its quota of 450K" \
	"the dataset's own quota, the first met from below" "$FERRY" recv bk/c/h2/x <"$T/two-full.s"
ferry set quota=none bk/c/h2
refused 1 "quota exceeded: 'bk/c' would use 879K, over its quota of 400K" \
	"a quota below another does not lift the ancestor's" "$FERRY" recv bk/c/h2/x <"$T/two-full.s"
ferry destroy -r bk/c/h2
ferry create -o refquota=400K bk/r
run ferry recv bk/r/h <"$T/one.s"
is "$rc" 0 "a refquota does not count the children"
ferry set refquota=400K bk/r/h
before=$(ferry list -H -p -r -t all -o name,used,referenced bk)
refused 1 "quota exceeded: 'bk/r/h' would use 586K, over its refquota of 400K" \
	"a receive over the dataset's refquota" "$FERRY" recv bk/r/h <"$T/two.s"
is "$(ferry list -H -p -r -t all -o name,used,referenced bk)" "$before" "nothing is committed either"

# -F: measured after what it destroys
ferry set refquota=none bk/r/h
ferry recv bk/r/h <"$T/two.s"
run ferry set quota=600000 bk/r
is "$rc" 0 "a quota exactly what is used can be set"
refused 1 "quota exceeded: 'bk/r' would use 879K, over its quota of 586K" "a third snapshot does not fit" \
	"$FERRY" recv bk/r/h <"$T/three.s"
run ferry recv -F bk/r/h <"$T/g1.s"
is "$rc" 0 "a full stream that replaces its snapshots (-F) fits: measured after what it destroys"

# ---- a partial receive whose completion is over the quota ----
ferry set quota=none bk/c
head -c 200000 "$T/two.s" >"$T/two.cut"
run ferry recv -s bk/c/h <"$T/two.cut"
tok=$(ferry get -H -o value receive_resume_token bk/c/h)
like "$rc:$tok" '^1:1-' "a cut receive keeps a partial state"
ferry set quota=400K bk/c
ferry send -t "$tok" >"$T/rest.s"
before=$(ferry list -H -p -r -t all -o name,used,referenced bk)
refused 1 "^ferry: cannot receive into 'bk/c/h': quota exceeded: 'bk/c' would use more than its quota of 400K$" \
	"its resumption over the quota is refused with one line, before a block is stored" \
	"$FERRY" recv -s bk/c/h <"$T/rest.s"
is "$(ferry get -H -o value receive_resume_token bk/c/h)" "$tok" "the partial state stays as it was"
is "$(ferry list -H -p -r -t all -o name,used,referenced bk)" "$before" "and nothing else changed"
ferry set quota=1M bk/c
run ferry recv -s bk/c/h <"$T/rest.s"
is "$rc:$(ferry get -H -o value receive_resume_token bk/c/h)" "0:-" "with room, the same resumption completes"

# ---- the pools equal pools that got the same snapshots without quotas ----
ferry pool create -o compression=off ctl "$T/ctl"
ferry create ctl/c
ferry create ctl/r
ferry recv ctl/c/h <"$T/one.s"
ferry recv ctl/c/h <"$T/two.s"
ferry recv ctl/r/h <"$T/one.s"
ferry recv ctl/r/h <"$T/two.s"
ferry recv -F ctl/r/h <"$T/g1.s"
after_check bk ctl "receives refused over quotas"
after_check cap capctl "a capture refused over its refquota"
done_testing
