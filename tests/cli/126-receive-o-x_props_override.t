#!/bin/sh
# Follows OpenZFS tests/zfs-tests/tests/functional/cli_root/zfs_receive/
# receive-o-x_props_override.ksh, with user properties (org.zts:*) for
# zfs's native ones ferry does not have (copies, atime, quota):
#  3.1 a property given twice in -o/-x, or both overridden and excluded,
#      is refused, and so are -o volsize and -x volsize;
#  3.2 -o works on a stream without properties;
#  3.3 on an -R package, -o sets the property on the top dataset and its
#      descendants inherit it; -x leaves a sent property out;
#  3.4 -x on an incremental package: the earlier received value goes (the
#      effective value is inherited or the default again), local values stay;
#  3.7 -o of a property a volume does not have is refused for a volume
#      stream, and applied where it fits in a package with a volume below;
#  3.8 -o/-x with -e and -d.
# (compression is never received without --keep-source-compression: the
# receive rule; 3.5 and 3.6 need quota, which ferry does not have.)
# After gc, the pool of 3.4 equals a control that got the end state at once.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/s" "$T/sub"
seq 1 3000 >"$T/s/f"; seq 1 2000 >"$T/sub/g"
src() { ferry get -H -o value,source "$2" "$1" | tr '\t' ' '; }
ferry pool create tank "$T/p/tank"
P=org.zts:p

# 3.1
ferry create -o source="$T/s" tank/orig
ferry snapshot tank/orig@snap1
ferry send tank/orig@snap1 >"$T/full"
for args in "-o $P" "-x $P=off" "-o $P=off -x $P" "-o $P=off -o $P=on" "-x $P -x $P" \
	"-o recordsize=65536 -o recordsize=8192" "-o volsize=32K" "-x volsize"; do
	# shellcheck disable=SC2086
	refused 2 "recv" "recv $args is refused" sh -c "'$FERRY' recv $args tank/dest <'$T/full'"
done
is "$(ferry list -H -o name tank/dest 2>&1 | grep -c 'does not exist')" 1 "and receives nothing"
ferry create -V 64K tank/orig/zvol
head -c 65536 /dev/zero >"$T/z.img"
ferry snapshot --from "$T/z.img" tank/orig/zvol@snap1
ferry send tank/orig/zvol@snap1 >"$T/zfull"
refused 2 "volsize" "-o volsize= on a volume stream is refused" \
	sh -c "'$FERRY' recv -o volsize=32K tank/dvol <'$T/zfull'"
ferry destroy -r tank/orig

# 3.2
ferry create -o source="$T/s" tank/orig
ferry snapshot tank/orig@snap1
ferry send tank/orig@snap1 | ferry recv -o compression=gzip -o "$P:dest=v" tank/dest
is "$(src tank/dest compression)" "gzip local" "-o compression on a stream without properties"
is "$(src tank/dest $P:dest)" "v local" "-o of a user property"
ferry destroy -r tank/orig
ferry destroy -r tank/dest

# 3.3
ferry create -o source="$T/s" tank/orig
ferry create -o source="$T/sub" tank/orig/sub
ferry snapshot -r tank/orig@snap1
ferry send -R tank/orig@snap1 | ferry recv tank/dest
ferry snapshot -r tank/orig@snap2
ferry snapshot -r tank/orig@snap3
ferry set "$P:copies=2" tank/orig
ferry set "$P:orig=val" tank/orig
ferry set "$P:orig=val" tank/orig/sub
ferry send -R -I tank/orig@snap1 tank/orig@snap3 >"$T/incr"
run sh -c "'$FERRY' recv -F -o '$P:dest2=val' -o recordsize=65536 -x compression -x '$P:orig' tank/dest <'$T/incr'"
is "$rc:$(cat "$T/err")" "0:" "recv -F -o ... -x ... of the -R -I package"
is "$(src tank/dest $P:copies)" "2 received" "a sent property is received"
is "$(src tank/dest $P:dest2)" "val local" "-o sets it on the top dataset"
is "$(src tank/dest recordsize)" "64K local" "a native one too"
is "$(src tank/dest/sub $P:copies)" "2 inherited from tank/dest" "the child inherits what the top received"
is "$(src tank/dest/sub $P:dest2)" "val inherited from tank/dest" "and what -o set on the top"
is "$(src tank/dest/sub recordsize)" "64K inherited from tank/dest" "recordsize as well"
is "$(src tank/dest $P:orig)" "- -" "-x leaves the property out of the top"
is "$(src tank/dest/sub $P:orig)" "- -" "and out of the child"
ferry destroy -r tank/orig
ferry destroy -r tank/dest

# 3.4
ferry create -o source="$T/s" tank/orig
ferry create -o source="$T/sub" tank/orig/sub
ferry snapshot -r tank/orig@snap1
ferry set "$P:copies=2" tank/orig
ferry set "$P:orig=oldval" tank/orig
ferry set "$P:orig=oldsubval" tank/orig/sub
ferry send -R tank/orig@snap1 | ferry recv tank/dest
is "$(src tank/dest $P:copies)" "2 received" "3.4: received"
is "$(src tank/dest/sub $P:copies)" "2 inherited from tank/dest" "3.4: inherited below"
is "$(src tank/dest $P:orig)" "oldval received" "3.4: the top's own value"
is "$(src tank/dest/sub $P:orig)" "oldsubval received" "3.4: the child's own value"
ferry set "$P:copies=3" tank/orig
ferry set "$P:orig=newval" tank/orig
ferry set "$P:orig=newsubval" tank/orig/sub
ferry set compression=gzip tank/dest
ferry set "$P:dest=localval" tank/dest
ferry snapshot -r tank/orig@snap2
ferry snapshot -r tank/orig@snap3
ferry send -R -I tank/orig@snap1 tank/orig@snap3 >"$T/incr"
run sh -c "'$FERRY' recv -F -x '$P:copies' -x compression -x '$P:orig' -x '$P:dest' tank/dest <'$T/incr'"
is "$rc:$(cat "$T/err")" "0:" "recv -F -x ... of the -R -I package"
is "$(src tank/dest $P:dest)" "localval local" "-x keeps a local value"
is "$(src tank/dest $P:orig)" "- -" "-x of a changed property: the earlier received value goes"
is "$(src tank/dest/sub $P:orig)" "- -" "on the child too"
is "$(src tank/dest $P:copies)" "- -" "and the effective value is the default again"
is "$(src tank/dest/sub $P:copies)" "- -" "below as well"
is "$(src tank/dest compression)" "gzip local" "-x compression: the local value stays"
is "$(src tank/dest/sub compression)" "gzip inherited from tank/dest" "and is inherited"

# 3.7
ferry pool create tank7 "$T/p/tank7"
ferry create -V 128K tank7/orig
head -c 131072 /dev/urandom >"$T/v.img"
ferry snapshot --from "$T/v.img" tank7/orig@snap1
ferry send tank7/orig@snap1 >"$T/vfull"
refused 1 "recordsize" "-o recordsize on a volume stream is refused" \
	sh -c "'$FERRY' recv -o recordsize=65536 tank7/dest <'$T/vfull'"
run sh -c "'$FERRY' recv -x recordsize -x '$P' tank7/dest <'$T/vfull'"
is "$rc:$(cat "$T/err")" "0:" "-x of properties a volume does not have is accepted"
is "$(src tank7/dest type)" "volume -" "the volume is received"
is "$(src tank7/dest recordsize)" "- -" "without recordsize"
ferry destroy -r tank7/orig
ferry destroy -r tank7/dest
ferry create -o source="$T/s" tank7/orig
ferry create -V 128K tank7/orig/sub
ferry snapshot tank7/orig@snap1
ferry snapshot --from "$T/v.img" tank7/orig/sub@snap1
ferry send -R tank7/orig@snap1 >"$T/repl"
run sh -c "'$FERRY' recv -o recordsize=65536 tank7/dest <'$T/repl'"
is "$rc:$(cat "$T/err")" "0:" "a package with a volume below takes -o recordsize"
is "$(src tank7/dest recordsize)" "64K local" "set on the filesystem"
is "$(src tank7/dest/sub type)" "volume -" "the volume is received"
is "$(src tank7/dest/sub recordsize)" "- -" "and has no recordsize"

# 3.8
ferry pool create tank8 "$T/p/tank8"
ferry create -o source="$T/s" tank8/orig
ferry create -p tank8/orig/1/2/3/4
ferry set "$P:copies=2" tank8/orig
ferry set "$P:orig=oldval" tank8/orig
ferry set "$P:a=on" tank8/orig/1/2
ferry snapshot -r tank8/orig@snap1
ferry send -R tank8/orig/1/2@snap1 >"$T/r8"
ferry create tank8/dest
ferry recv -e -o "$P:copies=3" -x "$P:a" -o "$P:orig=newval" tank8/dest <"$T/r8"
is "$(ferry list -H -o name tank8/dest/2/3/4)" "tank8/dest/2/3/4" "-e: the tree is received"
is "$(src tank8/dest/2 $P:copies)" "3 local" "-e: -o on the top"
is "$(src tank8/dest/2/3/4 $P:copies)" "3 inherited from tank8/dest/2" "-e: inherited below"
is "$(src tank8/dest/2 $P:a)" "- -" "-e: -x leaves it out"
is "$(src tank8/dest/2 $P:orig)" "newval local" "-e: -o of a user property"
is "$(src tank8/dest/2/3/4 $P:orig)" "newval inherited from tank8/dest/2" "-e: inherited below"
ferry destroy -r tank8/dest
ferry create tank8/dest
ferry recv -d -o "$P:copies=3" -x "$P:a" -o "$P:orig=newval" tank8/dest <"$T/r8"
is "$(ferry list -H -o name tank8/dest/orig/1/2/3/4)" "tank8/dest/orig/1/2/3/4" "-d: the tree is received"
is "$(src tank8/dest/orig/1/2 $P:copies)" "3 local" "-d: -o on the top"
is "$(src tank8/dest/orig/1/2/3/4 $P:copies)" "3 inherited from tank8/dest/orig/1/2" "-d: inherited below"
is "$(src tank8/dest/orig/1/2 $P:a)" "- -" "-d: -x leaves it out"

# the control of 3.4: the end state received at once
ferry pool create ctl "$T/p/ctl"
ferry send -R tank/orig@snap3 | ferry recv -x "$P:copies" -x "$P:orig" ctl/dest
ferry set compression=gzip ctl/dest
ferry set "$P:dest=localval" ctl/dest
for d in dest dest/sub; do
	is "$(ferry get -H -o property,value,source all tank/$d | grep -v -e available -e guid -e creat | sed 's#tank/#X/#')" \
		"$(ferry get -H -o property,value,source all ctl/$d | grep -v -e available -e guid -e creat | sed 's#ctl/#X/#')" \
		"3.4: $d's properties equal the control's"
done
ferry destroy -r tank/orig
ferry send -R ctl/dest@snap3 >/dev/null
after_check tank ctl "recv -o/-x"
done_testing
