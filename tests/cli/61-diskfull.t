#!/bin/sh
# A failed write gives back what it wrote, and a full disk never crashes a
# command. Part 1 (anywhere): a failed receive or capture leaves no pack
# bytes behind, a failed recv -F package unlinks the packs of the
# substreams it had committed inside its transaction, a killed receive's
# packs are swept by the next writer that has the pool to itself, and never
# while a writer is alive.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
packs() { ls "$T/p/$1/packs" | sort; }
known() { # known POOL: the pack names the catalogue has
	sqlite3 "$T/p/$1/catalog.db" "SELECT name FROM packs ORDER BY name"
}

# ---- part 1: failed operations give back their packs ------------------------
S="$T/src"
mkdir -p "$S/a" "$S/b"
head -c 12000000 /dev/urandom >"$S/a/big"
seq 1 20000 >"$S/a/text"
head -c 9000000 /dev/urandom >"$S/b/big"
ferry pool create tank "$T/p/tank"
ferry create -o source="$S/a" tank/a
ferry create -o source="$S/b" tank/a/b
ferry snapshot -r tank/a@1
ferry send tank/a@1 >"$T/full"
ferry send -R tank/a@1 >"$T/pkg"
ferry pool create bk "$T/p/bk"
ferry pool create ctl "$T/p/ctl"
ferry create ctl/c
ferry recv ctl/c/a <"$T/full"

ferry create bk/c
before=$(packs bk)
size=$(wc -c <"$T/full")
head -c $((size * 3 / 4)) "$T/full" >"$T/cut"
refused 1 "cannot receive into 'bk/c/a'" "a truncated stream is refused" "$FERRY" recv bk/c/a <"$T/cut"
is "$(packs bk)" "$before" "the failed receive left no pack file behind"

# a -F package whose second substream is cut: the first one's nested commit
# is rolled back with it, and its packs go too
psize=$(wc -c <"$T/pkg")
head -c $((psize - 3000000)) "$T/pkg" >"$T/pkgcut"
refused 1 "cannot receive into 'bk/c/r'" "a cut -F package is refused" \
	"$FERRY" recv -F bk/c/r <"$T/pkgcut"
is "$(packs bk)" "$before" "the failed -F package left no pack file behind"
is "$(ferry list -H -r -o name bk/c)" "bk/c" "and nothing of it in the catalogue"

# kill -9 in the middle of a receive: its packs stay, nobody's ...
mkfifo "$T/fifo"
"$FERRY" recv bk/c/k <"$T/fifo" 2>/dev/null &
pid=$!
exec 3>"$T/fifo"
head -c $((size * 3 / 4)) "$T/full" >&3
# the receiver writes what arrived into a pack; wait until it is on disk
i=0
while [ "$i" -lt 100 ] && [ "$(du -sk "$T/p/bk/packs" | cut -f1)" -lt 4000 ]; do
	sleep 0.1; i=$((i + 1))
done
printf '%s\n' "$before" >"$T/b1"
packs bk >"$T/b2"
orph=$(comm -13 "$T/b1" "$T/b2")
[ -n "$orph" ] && ok "a live receive is writing its pack" || not_ok "no pack of the live receive"
# ... and while it is alive, another writer must not take them
ferry create -o source="$S/a" bk/c/other
run ferry snapshot bk/c/other@1
is "$rc" 0 "a capture next to a live receive succeeds"
still=$(for f in $orph; do [ -e "$T/p/bk/packs/$f" ] && echo "$f"; done)
is "$still" "$orph" "the live receive's packs are not swept by another writer"
kill -9 "$pid"; wait "$pid" 2>/dev/null; exec 3>&-
still=$(for f in $orph; do [ -e "$T/p/bk/packs/$f" ] && echo "$f"; done)
is "$still" "$orph" "kill -9 leaves the receive's packs (nobody's now)"
run ferry snapshot bk/c/other@2
is "$rc" 0 "the next capture succeeds"
is "$(packs bk)" "$(known bk)" "and it swept the killed receive's packs: every pack file is the catalogue's"
run ferry recv bk/c/a <"$T/full"
is "$rc" 0 "the whole stream is then received"
ferry destroy -r bk/c/other
after_check bk ctl "failed receives"

# ---- part 2: full disks ------------------------------------------------------------
RUNS=${DISKFULL_RUNS:-2}
MNT=
cleanup() { [ -n "$MNT" ] && umount "$MNT" 2>/dev/null; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
skip() { _n=$((_n + 1)); echo "ok $_n # skip $*"; }
# ENOSPC must cut the writes, not a mount or loop device we may not have
mkdir -p "$T/try"
if ! mount -t tmpfs -o size=1m tmpfs "$T/try" 2>/dev/null; then
	skip "part 2: mount is not allowed here"
	done_testing
	exit $?
fi
umount "$T/try"
can_loop=1
truncate -s 8M "$T/try.img"
if ! mkfs.ext4 -q -F "$T/try.img" >/dev/null 2>&1 || ! mount -o loop "$T/try.img" "$T/try" 2>/dev/null; then
	can_loop=0
else
	umount "$T/try"
fi
rm -f "$T/try.img"

rnd() { shuf -i "$1-$2" -n 1; }
avail() { df -B1 --output=avail "$MNT" | tail -1 | tr -d ' '; }
# fill LEAVE: a filler file takes all but LEAVE bytes of the filesystem
fill() {
	rm -f "$MNT/filler"
	_a=$(avail)
	[ "$_a" -gt "$1" ] && head -c $((_a - $1)) /dev/zero >"$MNT/filler" 2>/dev/null
	sync
}
# state: what must not change when a write fails
state() {
	figures full
	codecs full
	ls "$MNT/full/packs"
	du -sk "$MNT/full/packs" "$MNT/full/reserve" | cut -f1
}
crashed() { [ "$1" -ge 128 ]; }

# the data: @0 small, @1 a small increment, @big one larger than the
# filesystem, @2 a small one from @1
ferry pool create src "$T/p/src"
mkdir -p "$T/ds" "$T/bigsrc"
ferry create -o source="$T/ds" src/d

diskfull() { # diskfull NAME SIZE_MB MOUNT-SETUP...
	name=$1 mb=$2
	shift 2
	MNT="$T/mnt-$name"
	mkdir -p "$MNT"
	if ! "$@" "$MNT"; then
		not_ok "$name: cannot mount"; MNT=; return
	fi
	big=$((mb * 1300 * 1024))
	rm -rf "$T/ds"/*
	head -c $((mb * 12 * 1024)) /dev/urandom >"$T/ds/small"
	seq 1 $((mb * 2000)) >"$T/ds/text"
	ferry snapshot "src/d@$name-0"
	head -c $((mb * 8 * 1024)) /dev/urandom >"$T/ds/more"
	ferry snapshot "src/d@$name-1"
	head -c "$big" /dev/urandom >"$T/ds/big"
	ferry snapshot "src/d@$name-big"
	rm "$T/ds/big"
	echo tiny >"$T/ds/tiny"
	ferry snapshot "src/d@$name-2"
	ferry send "src/d@$name-0" >"$T/s0"
	ferry send -i "@$name-0" "src/d@$name-1" >"$T/s1"
	ferry send -i "@$name-1" "src/d@$name-big" >"$T/sbig"
	ferry send -i "@$name-1" "src/d@$name-2" >"$T/s2"
	rm -rf "$T/bigsrc"/*
	head -c "$big" /dev/urandom >"$T/bigsrc/big"

	ferry pool create full "$MNT/full"
	ferry pool create fctl "$T/p/fctl-$name"
	for p in full fctl; do
		ferry recv "$p/d" <"$T/s0"
		ferry recv "$p/d" <"$T/s1"
	done
	ferry create -o source="$T/bigsrc" full/cap
	ferry create -o source="$T/bigsrc" fctl/cap
	bad=0 fails=0
	for run in $(seq 1 "$RUNS"); do
		fill "$(rnd 0 $((big / 2)))"
		state >"$T/before"
		for what in recv capture; do
			if [ "$what" = recv ]; then
				run "$FERRY" recv full/d <"$T/sbig"
			else
				run "$FERRY" snapshot "full/cap@r$run"
			fi
			if [ "$rc" != 1 ] || [ "$(wc -l <"$T/err")" != 1 ] ||
			   ! grep -q "^ferry: cannot .*: pool 'full': no space left on device ([0-9.]*[KMG]*B* free" "$T/err"; then
				bad=$((bad + 1)); diag "$name run $run $what: rc=$rc: $(cat "$T/err")"
			fi
			state >"$T/after"
			if ! cmp -s "$T/before" "$T/after"; then
				bad=$((bad + 1)); diag "$name run $run $what changed the pool:" "$(diff "$T/before" "$T/after")"
			fi
		done
		fails=$((fails + 2))
	done
	is "$bad" 0 "$name: $fails receives and captures larger than the space fail with one clear line and change nothing"

	# the full disk: list, gc and destroy still work, whatever is left.
	# Each round starts with no -shm (a gc's close removes it), so the
	# first command makes it on the full disk.
	bad=0
	for leave in 0 4096 8192 9216 10240 11264 16384 24576; do
		rm -f "$MNT/filler"
		ferry gc full >/dev/null
		fill "$leave"
		for cmd in "list -t all -r full" "gc full" "pool status full"; do
			# shellcheck disable=SC2086
			run "$FERRY" $cmd
			if [ "$rc" != 0 ]; then
				bad=$((bad + 1)); diag "$name, $leave bytes free: ferry $cmd: rc=$rc: $(cat "$T/err")"
			fi
		done
	done
	is "$bad" 0 "$name: list, gc and pool status work on a full disk (0 to 24K free, no SIGBUS)"
	# with the reserve used up, a full disk still crashes nothing: the
	# -shm's holes are allocated before SQLite touches them, or it fails
	bad=0
	for leave in 0 8192 9216 10240 11264 16384; do
		rm -f "$MNT/filler"
		ferry gc full >/dev/null
		rm "$MNT/full/reserve"
		fill "$leave"
		run "$FERRY" list -t all -r full
		if [ "$rc" != 0 ] && { [ "$rc" != 1 ] || [ "$(wc -l <"$T/err")" != 1 ] ||
		   ! grep -q "pool 'full': no space left on device" "$T/err"; }; then
			bad=$((bad + 1)); diag "$name, no reserve, $leave bytes free: rc=$rc: $(cat "$T/err")"
		fi
	done
	is "$bad" 0 "$name: without the reserve, list on a full disk works or says no space in one line"
	rm -f "$MNT/filler"
	ferry gc full >/dev/null
	fill 0
	run ferry destroy "full/d@$name-0"
	is "$rc:$(cat "$T/err")" "0:" "$name: destroy works on the full disk"
	run ferry destroy -r full/cap
	is "$rc:$(cat "$T/err")" "0:" "$name: destroy -r of a dataset too"
	run ferry gc -v full
	is "$rc:$(cat "$T/err")" "0:" "$name: and gc after them"
	ferry destroy "fctl/d@$name-0"
	ferry destroy -r fctl/cap
	rm -f "$MNT/filler"
	run ferry recv full/d <"$T/s2"
	is "$rc:$(cat "$T/err")" "0:" "$name: the next smaller receive succeeds"
	ferry recv fctl/d <"$T/s2"
	# the control destroyed what the full pool destroyed; its garbage goes
	# before after_check, which wants a control with nothing to collect
	ferry gc fctl >/dev/null
	after_check full fctl "$name"
	is "$(ls "$MNT/full/packs" | sort)" "$(sqlite3 "$MNT/full/catalog.db" "SELECT name FROM packs ORDER BY name")" \
		"$name: every pack file is the catalogue's"
	ferry pool export full
	ferry pool export fctl
	umount "$MNT"
	MNT=
}

ext4() { # ext4 BLOCKSIZE DIR
	truncate -s 32M "$T/ext4-$1.img" && mkfs.ext4 -q -F -b "$1" -m 0 "$T/ext4-$1.img" >/dev/null &&
		mount -o loop "$T/ext4-$1.img" "$2"
}
tmpfs8() { mount -t tmpfs -o size=8m,mode=0755 tmpfs "$1"; }
if [ "$can_loop" = 1 ]; then
	diskfull ext4-1k 32 ext4 1024
	diskfull ext4-4k 32 ext4 4096
else
	skip "ext4 on a loop device: losetup is not allowed here"
fi
diskfull tmpfs 8 tmpfs8
done_testing
