#!/bin/sh
# Follows OpenZFS tests/zfs-tests/tests/functional/cli_root/zfs_receive/
# zfs_receive_014_pos.ksh: a -p stream carries the sender's whole property
# set, which replaces the received set. A property the sender has since
# inherited is no longer received ('-' afterwards); a truncated stream
# leaves the received properties as they were. compression is received
# only with --keep-source-compression (ferry's receive rule), used here
# to follow the upstream checks; without it the receiver's policy stays.
# A stream without -p leaves the received set alone. After gc the pool
# equals a control that only got the intact streams.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/s"
seq 1 2000 >"$T/s/f"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"
src() { ferry get -H -o value,source "$2" "$1" | tr '\t' ' '; }
ferry create -o source="$T/s" tank/orig
ferry set compression=gzip-1 tank/orig
ferry set org.zts:p=val tank/orig
ferry set org.zts:kept=k tank/orig
ferry snapshot tank/orig@snap1
ferry send -p tank/orig@snap1 >"$T/full"
ferry recv --keep-source-compression tank/dest <"$T/full"
is "$(src tank/dest compression)" "gzip-1 received" "the full -p stream: compression received"
is "$(src tank/dest org.zts:p)" "val received" "and the user property"

ferry set compression=gzip-2 tank/orig
ferry inherit org.zts:p tank/orig
head -c 3000000 /dev/urandom >"$T/s/file"
ferry snapshot tank/orig@snap2
ferry send -p -i @snap1 tank/orig@snap2 >"$T/incr"
head -c 2000000 "$T/incr" >"$T/trun"
ferry snapshot tank/orig@snap3
ferry send -p -i @snap1 tank/orig@snap3 >"$T/incr"
run sh -c "'$FERRY' recv -F --keep-source-compression tank/dest <'$T/trun'"
is "$rc" 1 "the truncated incremental is refused"
is "$(src tank/dest compression)" "gzip-1 received" "compression stays as received before"
is "$(src tank/dest org.zts:p)" "val received" "and so does the user property"
run sh -c "'$FERRY' recv -F --keep-source-compression tank/dest <'$T/incr'"
is "$rc" 0 "the intact incremental is received"
is "$(src tank/dest compression)" "gzip-2 received" "compression is the new received value"
is "$(src tank/dest org.zts:p)" "- -" "the property the sender inherited is no longer received"
is "$(src tank/dest org.zts:kept)" "k received" "one it still sets stays received"

# without --keep-source-compression, and a stream without -p
ferry set org.zts:p=again tank/orig
ferry snapshot tank/orig@snap4
ferry set org.zts:local=l tank/dest
ferry send -p -i @snap3 tank/orig@snap4 | ferry recv tank/dest
is "$(src tank/dest org.zts:p)" "again received" "a property set again is received again"
is "$(src tank/dest compression)" "gzip-2 received" "compression not in the receiver's hands stays"
ferry inherit org.zts:kept tank/orig
ferry snapshot tank/orig@snap5
ferry send -i @snap4 tank/orig@snap5 | ferry recv tank/dest
is "$(src tank/dest org.zts:kept)" "k received" "a stream without -p leaves the received set alone"
ferry snapshot tank/orig@snap6
ferry send -p -i @snap5 tank/orig@snap6 | ferry recv tank/dest
is "$(src tank/dest org.zts:kept)" "- -" "the next -p stream drops it"
is "$(src tank/dest org.zts:local)" "l local" "a local property is never dropped"

# the control: the intact streams only
ferry recv --keep-source-compression ctl/dest <"$T/full"
ferry recv --keep-source-compression ctl/dest <"$T/incr"
ferry send -p -I @snap3 tank/orig@snap6 | ferry recv ctl/dest
ferry set org.zts:local=l ctl/dest
is "$(ferry get -H -p -o property,value,source all tank/dest | grep -v -e available -e guid -e createtxg -e creation)" \
	"$(ferry get -H -p -o property,value,source all ctl/dest | grep -v -e available -e guid -e createtxg -e creation)" \
	"every property equals the control's"
ferry send tank/orig@snap6 >/dev/null
ferry destroy -r tank/orig
after_check tank ctl "received properties replaced"
done_testing
