#!/bin/sh
# tests/torture/kill.sh — kill -9 at syscall-counted points of ferry's write
# paths, and what must hold after each kill (DESIGN.md, crash safety: "a
# crash at any point leaves the last committed state intact and the pool
# opens without repair").
#
#   sh tests/torture/kill.sh [-n POINTS] [-m MIN] [-s SCEN,...] [-w DIR]
#                            [-r RESULTS] [--at SYSCALL:N] [--keep]
#   sh tests/torture/kill.sh --selftest [-w DIR] [-r RESULTS]
#
# Scenarios (SCENARIOS below), each small but real: a tree of ~350 files
# in nested directories (text and random, 0 to 9 KB, a 300 KB file, sparse
# and all-zero files, hardlinks, symlinks, a fifo, odd modes, owners and an
# xattr) in datasets of recordsize 4K, so there are many blocks:
#   capture-full      snapshot of a new dataset
#   capture-incr      snapshot after a day of changes in the source
#   recv-full         recv of a `send -p` full stream into a new dataset of
#                     a gzip-6 pool (every block recompressed on workers)
#   recv-incr         recv of a `send -c -p -i` stream (lz4 blocks re-encoded)
#   recv-resume       recv -s of the `send -t` stream of a full stream cut
#                     in half (the partial state of the first recv -s)
#   recv-resume-incr  the same with the incremental stream
#   gc                a destroyed snapshot's pack mostly garbage (rewritten),
#                     a destroyed dataset's pack all garbage (deleted), a
#                     bookmark, a pack left by a killed capture, compaction
#   destroy-r         a dataset with snapshots, a bookmark and a child
#   rollback-r        to the first of three snapshots, with bookmarks
#   scrub             a pool with garbage and a bookmark (what it writes is
#                     its state and error log; the retry continues it)
#   scrub-repair      scrub --repair-from a send -R | recv replica of a pool
#                     with 20 flipped blocks and a flipped node (damaged
#                     before: restore is checked after the retry only)
#   recover           pool recover of a healthy pool (snapshots, a bookmark,
#                     a hold, garbage): the catalogue rebuilt from the packs,
#                     its commit point and the swap (docs/ferry-nodes.md)
#
# For each, the operation first runs once under strace without injection:
# that run is the control (its pools, after gc, are what every killed run
# must end as) and its trace the profile. Every write-class call of the
# profile (write, pwrite64, fsync, fdatasync, rename, unlink, ftruncate,
# fallocate, mkdir, openat with O_CREAT, ...: WSET) is a kill point, named
# by the call and its ordinal in its thread, since strace counts so
# (`-e inject=CALL:signal=KILL:when=N`: "accounting ... is done per syscall
# and per tracee"; a point that two threads share kills at the first of
# them to reach it). At most POINTS of them (default 200), spread evenly
# over the whole profile, first and last included, are then each run on a
# fresh copy of the scenario's pools; the operation is killed as it enters
# that call, and then:
#   integrity  PRAGMA integrity_check and foreign_key_check are clean on a
#              copy of catalog.db and its WAL (no -shm; catalog.db.recover
#              when a recover was killed in its swap) taken before
#              anything opens the pool again: a copy, so the check neither
#              checkpoints nor deletes the WAL that ferry itself must then
#              recover from, and without the -shm it rebuilds the WAL index
#              from what is on disk, as after a reboot
#   packs      every pack the catalogue lists exists, is not shorter than
#              recorded, and every block row lies inside its pack
#   open       `ferry list -t all -r` opens every pool (ferry is the first
#              to open the pool itself after the kill)
#   names      the datasets, snapshots and bookmarks are those before or
#              those after the operation (destroy -r: after <= now <= before)
#   props      so are the properties that have a source (destroy -r: those
#              of what is left are unchanged)
#   figures    so are the space figures (atomic operations)
#   token      recv -s: the snapshot or a resume token exists, not both
#   restore    every snapshot restores identical to the tree it was taken
#              of (build/tools/treecmp: content, modes, owners, times,
#              links, xattrs, holes)
#   retry      the operation run again, if it had not completed, succeeds
#   gc         ferry gc succeeds; then integrity and packs again, and
#   orphans    every file under packs/ is a pack the catalogue lists
#   disk       the packs on disk are as many and as large as the control's
#   files      the pool holds the same other files as the control's
#   names, props, token as after the operation, and
#   figures    `ferry list -H -p -r -t all -o name,type,used,referenced,
#              logicalused,logicalreferenced,written` and
#   codecs     the codec table of `ferry pool status` equal the control's;
#   restore    every snapshot restores identical again.
# A point whose operation completed before its call came (the run took
# another path than the profile) is counted "not hit" and checked the same.
# The work runs in /dev/shm when there is one: a kill -9 leaves the page
# cache as it was, so nothing here depends on the disk, and tmpfs makes it
# 3 times faster with the same calls. (Power loss is another test.)
#
# At the end a table: per operation the write-class calls of the profile,
# the distinct points, those run, killed and not hit, the failed ones and
# the seconds. Exit status 0 when no point failed and at least MIN points
# (default 0) killed, 1 otherwise, 2 when the harness cannot run. Each
# failure is printed with the checks that failed, the calls before the kill
# and a command that reproduces it (-s SCEN --at CALL:N --keep -w DIR).
#
# --selftest breaks finished pools on purpose (a pack deleted, cut or
# grown, a block byte or row changed, a catalogue page overwritten, a
# dangling row, a stray file or pack, a leftover dataset, snapshot,
# property or resume token, a lost token, a pool that does not open, an
# operation that cannot be redone, a gc that cannot run) and checks that
# the check meant for each reports it; it exits 1 if one does not.
set -u
# LeakSanitizer cannot run under ptrace: an ASan build (make asan) traced by
# strace would fail every operation; leaks are the rest of the suite's job
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

FERRY_SRC=${FERRY_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FERRY=${FERRY:-$FERRY_SRC/build/ferry}
FERRY_TOOLS=${FERRY_TOOLS:-$FERRY_SRC/build/tools}
TREECMP=$FERRY_TOOLS/treecmp
PRNG=$FERRY_TOOLS/prng
SQLITE=${SQLITE:-sqlite3}

SCENARIOS="capture-full capture-incr recv-full recv-incr recv-resume recv-resume-incr gc destroy-r rollback-r scrub scrub-repair recover"
# The write-class calls: every call that can change a file's bytes, size,
# name or durability. openat/open count only with O_CREAT (see points()).
WSET=write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,sync_file_range,msync
WSET=$WSET,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat
WSET=$WSET,ftruncate,truncate,fallocate,mkdir,mkdirat,copy_file_range,openat,open,creat

POINTS=200 MIN=0 ONLY="" AT="" KEEP=0 SELFTEST=0 W="" RESULTS=""
while [ $# -gt 0 ]; do
	case $1 in
	-n) POINTS=$2; shift ;;
	-m) MIN=$2; shift ;;
	-s) ONLY=$(echo "$2" | tr ',' ' '); shift ;;
	-w) W=$2; shift ;;
	-r) RESULTS=$2; shift ;;
	--at) AT=$2; shift ;;
	--keep) KEEP=1 ;;
	--selftest) SELFTEST=1 ;;
	*) echo "usage: kill.sh [-n POINTS] [-m MIN] [-s SCEN,...] [-w DIR] [-r RESULTS] [--at SYSCALL:N] [--keep] | --selftest" >&2
	   exit 2 ;;
	esac
	shift
done
[ -n "$ONLY" ] && SCENARIOS=$ONLY

die() { echo "kill.sh: $*" >&2; exit 2; }
for x in "$FERRY" "$TREECMP" "$PRNG"; do [ -x "$x" ] || die "$x is missing: run make first"; done
command -v strace >/dev/null || die "strace is not installed (apt-get install strace)"
command -v "$SQLITE" >/dev/null || die "the sqlite3 command is not installed"
# /dev/shm when there is one (see the top)
if [ -z "$W" ]; then
	_tmp=${TMPDIR:-/tmp}
	[ -d /dev/shm ] && [ -w /dev/shm ] && _tmp=/dev/shm
	W=$(mktemp -d "$_tmp/ferry-torture.XXXXXX") || die "no temp dir"
	[ "$KEEP" = 1 ] || trap 'rm -rf "$W"' EXIT
else
	# -w DIR is emptied first: only a directory this script made, or an empty one
	if [ -d "$W" ] && [ ! -e "$W/.ferry-torture" ] && [ -n "$(ls -A "$W")" ]; then
		die "$W is not empty and not a directory of kill.sh: give another"
	fi
	rm -rf "$W" && mkdir -p "$W" || die "cannot make $W"
fi
: >"$W/.ferry-torture"
W=$(cd "$W" && pwd)
FAILLOG=$W/failures.log
: >"$FAILLOG"
[ -n "$RESULTS" ] && : >"$RESULTS"

# ---- the trees --------------------------------------------------------------
# mk_tree DIR SEED: a few hundred files in nested directories, of every kind
# capture handles: sizes from 0 to 9 KB (many records of 4 KiB, text and
# random), a 300 KB file, a sparse one, hardlinks, symlinks (one dangling),
# an empty directory, odd modes and owners, an xattr, a fifo.
mk_tree() {
	_d=$1 _s=$2 _i=0
	while [ $_i -lt 10 ]; do
		mkdir -p "$_d/d$_i/s0" "$_d/d$_i/s1" "$_d/d$_i/s2"
		_i=$((_i + 1))
	done
	_i=0
	while [ $_i -lt 300 ]; do
		_f=$_d/d$((_i % 10))/s$((_i % 3))/f$_i
		if [ $((_i % 4)) = 0 ]; then _k=bin; else _k=text; fi
		"$PRNG" $_k $((_s * 1000 + _i)) $(((_i * 7919) % 9000)) >"$_f"
		_i=$((_i + 1))
	done
	"$PRNG" bin "$_s" 150000 >"$_d/big"
	"$PRNG" text "$_s" 150000 >>"$_d/big"
	seq 1 20000 >"$_d/numbers"
	head -c 12288 /dev/zero >"$_d/zeros"
	truncate -s 200000 "$_d/sparse" && echo tail >>"$_d/sparse"
	ln "$_d/d0/s0/f0" "$_d/hardlink-empty"
	ln "$_d/d1/s1/f1" "$_d/d2/hardlink"
	ln "$_d/d1/s1/f1" "$_d/d3/s0/hardlink2"
	ln "$_d/big" "$_d/d4/big-link"
	ln -s d1/s1/f1 "$_d/symlink"
	ln -s ../../big "$_d/d5/s2/symlink-up"
	ln -s /nonexistent/target "$_d/dangling"
	mkdir "$_d/empty-dir"
	mkfifo "$_d/d6/fifo"
	chmod 600 "$_d/d2/s2/f2"
	chmod 4755 "$_d/d3/s0/f3"
	chmod 1777 "$_d/d9"
	chown 1000:1000 "$_d/d4/s1/f4" "$_d/d5"
	setfattr -n user.torture -v "seed $_s" "$_d/d5/s2/f5" 2>/dev/null || true
	touch -h -d '2001-02-03 04:05:06.123456789' "$_d/symlink" "$_d/d7/s1/f7"
}
# mutate DIR SEED: changes in place as a day of work would: files appended
# to, rewritten in the middle, deleted, added, a directory renamed, a
# hardlink added, a symlink retargeted, a mode and an xattr changed.
mutate() {
	_d=$1 _s=$2 _k=0
	while [ $_k -lt 20 ]; do
		_i=$(((_s * 37 + _k * 13) % 300))
		for _f in "$_d"/d*/s*/f$_i; do
			[ -f "$_f" ] && "$PRNG" text $((_s * 5000 + _k)) 3000 >>"$_f"
		done
		_k=$((_k + 1))
	done
	_k=0
	while [ $_k -lt 10 ]; do
		rm -f "$_d"/d*/s*/f$(((_s * 71 + _k * 29) % 300))
		_k=$((_k + 1))
	done
	mkdir -p "$_d/new$_s"
	_k=0
	while [ $_k -lt 15 ]; do
		"$PRNG" text $((_s * 7000 + _k)) $((_k * 1000 + 17)) >"$_d/new$_s/n$_k"
		_k=$((_k + 1))
	done
	"$PRNG" bin $((_s * 9000)) 4096 | dd of="$_d/big" bs=4096 seek=10 conv=notrunc status=none
	mv "$_d/d$((_s % 10))" "$_d/renamed$_s"
	ln "$_d/numbers" "$_d/new$_s/numbers-link"
	rm "$_d/symlink" && ln -s "new$_s/n1" "$_d/symlink"
	chmod 640 "$_d"/d*/s1/f*1 2>/dev/null || true
	setfattr -n user.torture -v "mutated $_s" "$_d/numbers" 2>/dev/null || true
}

# ---- helpers ----------------------------------------------------------------------
fo() { FERRY_HOME=$W/origin/home "$FERRY" "$@"; }  # the origin of the streams
fl() { FERRY_HOME=$L/home "$FERRY" "$@"; }         # the scenario's pools
now() { date +%s; }

# names POOL: every dataset, snapshot and bookmark, one a line, sorted.
names() { fl list -H -t all -r -o name "$1" 2>/dev/null | LC_ALL=C sort; }
# props POOL: every property that has a source (local, received, inherited,
# default), of every dataset, snapshot and bookmark, sorted.
props() {
	fl get -H -r -t all -o name,property,value,source all "$1" 2>/dev/null |
		awk -F '\t' '$4 != "-"' | LC_ALL=C sort
}
figures() { fl list -H -p -r -t all -o name,type,used,referenced,logicalused,logicalreferenced,written "$1"; }
codecs() { fl pool status "$1" | sed -n '/CODEC/,$p'; }
# files POOLDIR: the pool's files other than packs and the WAL's two.
# (not the old catalogues recover keeps aside, named by the time, one per
# run: a retried recover keeps one more than the control)
files() {
	(cd "$1" && find . -path './packs/*' -prune -o -print |
		grep -v -e '^./catalog.db-wal$' -e '^./catalog.db-shm$' -e '^./catalog.db.damaged-' |
		LC_ALL=C sort)
}
# packbytes POOLDIR: how many pack files, and their bytes.
packbytes() { find "$1/packs" -type f -printf '%s\n' | awk '{ n++; b += $1 } END { printf "%d packs, %d bytes\n", n, b }'; }
# catcopy POOLDIR: the catalogue as a reboot would find it, copied to $CAT.
catcopy() {
	rm -rf "$PT/cat" && mkdir -p "$PT/cat"
	CAT=$PT/cat/catalog.db
	if [ ! -e "$1/catalog.db" ] && [ -f "$1/catalog.db.recover" ]; then
		# pool recover killed between the two renames of its swap: past
		# its commit point, so the next open finishes the swap with this
		# file (docs/ferry-nodes.md, Recover); the old WAL is gone already
		cp "$1/catalog.db.recover" "$CAT" || return 1
		return 0
	fi
	cp "$1/catalog.db" "$CAT" 2>/dev/null || return 1
	[ -f "$1/catalog.db-wal" ] && cp "$1/catalog.db-wal" "$CAT-wal"
	return 0
}
sq() { "$SQLITE" -batch -noheader "$CAT" "$@"; }

# fail CHECK TEXT...: records a failed check of the current point.
fail() {
	_c=$1; shift
	NFAIL=$((NFAIL + 1))
	printf '  %-9s %s\n' "$_c" "$*" >>"$PT/fails"
}

# ---- the checks --------------------------------------------------------------
# chk_cat STAGE: integrity and packs on a copy of each pool's catalogue.
chk_cat() {
	for _p in $POOLS; do
		if ! catcopy "$L/$_p"; then fail integrity "$1: $_p/catalog.db is missing"; continue; fi
		_ic=$(sq 'PRAGMA integrity_check;' 2>&1)
		[ "$_ic" = ok ] || fail integrity "$1: $_p: integrity_check: $(echo "$_ic" | head -3 | tr '\n' ' ')"
		_fk=$(sq 'PRAGMA foreign_key_check;' 2>&1)
		[ -z "$_fk" ] || fail integrity "$1: $_p: foreign_key_check: $(echo "$_fk" | head -3 | tr '\n' ' ')"
		sq "SELECT name, size FROM packs;" >"$PT/packs" 2>&1 ||
			{ fail packs "$1: $_p: cannot read the packs table: $(head -1 "$PT/packs")"; continue; }
		while IFS='|' read -r _n _sz; do
			if [ ! -f "$L/$_p/packs/$_n" ]; then
				fail packs "$1: $_p: pack $_n is in the catalogue but missing"
			elif [ "$(stat -c %s "$L/$_p/packs/$_n")" -lt "$_sz" ]; then
				fail packs "$1: $_p: pack $_n is $(stat -c %s "$L/$_p/packs/$_n") bytes, the catalogue says $_sz"
			fi
		done <"$PT/packs"
		# a block header is 48 bytes (store/pack.c)
		_bad=$(sq "SELECT count(*) FROM blocks b LEFT JOIN packs k ON k.id = b.pack_id
			   WHERE k.id IS NULL OR b.offset + 48 + b.psize > k.size;" 2>&1)
		[ "$_bad" = 0 ] || fail packs "$1: $_p: $_bad block rows lie outside their pack"
	done
}
chk_open() {
	for _p in $POOLS; do
		fl list -t all -r "$_p" >/dev/null 2>"$PT/err" ||
			fail open "$1: ferry list -t all -r $_p: $(head -1 "$PT/err")"
	done
}
# chk_names STAGE: the catalogue shows the state before or after (or, for
# destroy -r, in between); sets NOW to it.
chk_names() {
	NOW=$(for _p in $POOLS; do names "$_p"; done)
	printf '%s\n' "$NOW" >"$PT/names"
	case $KIND in
	atomic)
		[ "$NOW" = "$BEFORE" ] || [ "$NOW" = "$AFTER" ] ||
			fail names "$1: neither the state before nor after the operation: $(diff_names)" ;;
	monotone)
		_extra=$(printf '%s\n' "$NOW" | LC_ALL=C comm -23 - "$SD/before")
		_gone=$(LC_ALL=C comm -13 "$PT/names" "$SD/after")
		[ -z "$_extra$_gone" ] ||
			fail names "$1: not between before and after: new: $(echo $_extra) gone too early: $(echo $_gone)" ;;
	esac
}
diff_names() {
	_a=$(printf '%s\n' "$NOW" | LC_ALL=C comm -23 - "$SD/before" | tr '\n' ' ')
	_b=$(printf '%s\n' "$NOW" | LC_ALL=C comm -13 - "$SD/before" | tr '\n' ' ')
	echo "has ${_a:-nothing more} and lacks ${_b:-nothing} of the state before"
}
# side FILE0 FILE1 GOT: the file GOT equals, on the side the names are on
# (before or after the operation; either when they are on neither).
side() {
	if [ "$NOW" = "$BEFORE" ] && [ "$NOW" != "$AFTER" ]; then cmp -s "$1" "$3"
	elif [ "$NOW" = "$AFTER" ] && [ "$NOW" != "$BEFORE" ]; then cmp -s "$2" "$3"
	else cmp -s "$1" "$3" || cmp -s "$2" "$3"; fi
}
side_name() {
	if [ "$NOW" = "$BEFORE" ] && [ "$NOW" != "$AFTER" ]; then echo "before"
	elif [ "$NOW" = "$AFTER" ] && [ "$NOW" != "$BEFORE" ]; then echo "after"
	else echo "before or after"; fi
}
# chk_props STAGE: the properties are those of the side the names are on
# (destroy -r: those of what is left are unchanged).
chk_props() {
	for _p in $POOLS; do props "$_p"; done >"$PT/props"
	case $KIND in
	atomic)
		side "$SD/props0" "$SD/props1" "$PT/props" ||
			fail props "$1: the properties are not those $(side_name) the operation (the names are): $(diff "$SD/props1" "$PT/props" | grep '^[<>]' | head -4 | tr '\n' ' ')" ;;
	monotone)
		_extra=$(LC_ALL=C comm -23 "$PT/props" "$SD/props0" | head -4)
		[ -z "$_extra" ] || fail props "$1: properties the state before did not have: $(echo $_extra)" ;;
	esac
}
# chk_figs STAGE: an atomic operation's space figures are those of the
# side the names are on (before gc: what a half-done commit gets wrong).
chk_figs() {
	[ "$KIND" = atomic ] || return 0
	for _p in $POOLS; do
		figures "$_p" >"$PT/figures" 2>&1
		side "$SD/figures0.$_p" "$SD/figures1.$_p" "$PT/figures" ||
			fail figures "$1: $_p: the figures are not those $(side_name) the operation (the names are): $(diff "$SD/figures1.$_p" "$PT/figures" | grep '^[<>]' | head -4 | tr '\n' ' ')"
	done
}
# chk_token STAGE: exactly one of the snapshot and a resume token.
chk_token() {
	[ -n "$TOKEN_DS" ] || return 0
	_tok=$(fl get -H -o value receive_resume_token "$TOKEN_DS" 2>/dev/null)
	_has=0
	printf '%s\n' "$NOW" | grep -qx "$TOKEN_SNAP" && _has=1
	if [ "$_has" = 1 ] && [ -n "$_tok" ] && [ "$_tok" != - ]; then
		fail token "$1: $TOKEN_SNAP is committed and $TOKEN_DS still has a resume token"
	elif [ "$_has" = 0 ] && { [ -z "$_tok" ] || [ "$_tok" = - ]; }; then
		fail token "$1: neither $TOKEN_SNAP nor a resume token on $TOKEN_DS"
	fi
}
# chk_restore STAGE: every snapshot restores identical to its tree.
chk_restore() {
	for _s in $(printf '%s\n' "$NOW" | grep @); do
		_want=$(grep "^$_s " "$SD/expect" | cut -d' ' -f2)
		if [ -z "$_want" ]; then fail restore "$1: unexpected snapshot $_s"; continue; fi
		rm -rf "$PT/r"
		if ! fl restore "$_s" "$PT/r" >/dev/null 2>"$PT/err"; then
			fail restore "$1: restore $_s: $(head -1 "$PT/err")"
		elif ! "$TREECMP" "$_want" "$PT/r" >"$PT/err" 2>&1; then
			fail restore "$1: $_s differs from its tree: $(head -1 "$PT/err")"
		fi
	done
	rm -rf "$PT/r"
}
chk_final() {
	chk_cat "after gc"
	for _p in $POOLS; do
		catcopy "$L/$_p" || continue
		sq "SELECT name FROM packs;" | LC_ALL=C sort >"$PT/known"
		ls "$L/$_p/packs" | LC_ALL=C sort | LC_ALL=C comm -23 - "$PT/known" >"$PT/orphans"
		[ -s "$PT/orphans" ] && fail orphans "after gc: $_p/packs has files the catalogue does not know: $(head -5 "$PT/orphans" | tr '\n' ' ')"
		packbytes "$L/$_p" >"$PT/disk"
		cmp -s "$PT/disk" "$SD/disk.$_p" ||
			fail disk "after gc: $_p: $(cat "$PT/disk") on disk, the control has $(cat "$SD/disk.$_p")"
		files "$L/$_p" >"$PT/files"
		cmp -s "$PT/files" "$SD/files.$_p" ||
			fail files "after gc: $_p: $(diff "$SD/files.$_p" "$PT/files" | grep '^[<>]' | head -4 | tr '\n' ' ')"
		figures "$_p" >"$PT/figures" 2>&1
		cmp -s "$PT/figures" "$SD/figures.$_p" ||
			fail figures "after gc: $_p: $(diff "$SD/figures.$_p" "$PT/figures" | grep '^[<>]' | head -4 | tr '\n' ' ')"
		codecs "$_p" >"$PT/codecs" 2>&1
		cmp -s "$PT/codecs" "$SD/codecs.$_p" ||
			fail codecs "after gc: $_p: $(diff "$SD/codecs.$_p" "$PT/codecs" | grep '^[<>]' | head -4 | tr '\n' ' ')"
	done
	NOW=$(for _p in $POOLS; do names "$_p"; done)
	[ "$NOW" = "$AFTER" ] || fail names "after retry and gc: not the state after the operation: $(echo $NOW)"
	for _p in $POOLS; do props "$_p"; done >"$PT/props"
	cmp -s "$PT/props" "$SD/props1" ||
		fail props "after retry and gc: not the properties after the operation: $(diff "$SD/props1" "$PT/props" | grep '^[<>]' | head -4 | tr '\n' ' ')"
	chk_token "after gc"
	chk_restore "after gc"
}
# after_kill: everything from the kill to the end of the point.
after_kill() {
	chk_cat "after the kill"
	chk_open "after the kill"
	chk_names "after the kill"
	chk_props "after the kill"
	chk_figs "after the kill"
	chk_token "after the kill"
	# a pool damaged before the operation (scrub-repair) restores once repaired
	[ "$DAMAGED" = 1 ] || chk_restore "after the kill"
	# an operation that changes no name (scrub) is always run again
	if [ "$NOW" != "$AFTER" ] || [ "$ALWAYS_RETRY" = 1 ]; then
		if ! retry_$SCN >"$PT/retry.out" 2>&1; then
			fail retry "the operation run again failed: $(tail -1 "$PT/retry.out")"
		fi
	fi
	for _p in $POOLS; do
		fl gc "$_p" >/dev/null 2>"$PT/err" || fail gc "ferry gc $_p: $(head -1 "$PT/err")"
	done
	chk_final
}

# ---- scenarios -----------------------------------------------------------------------
# Each defines prep_X (build the pools under $L, the static trees under $SD,
# and $SD/expect: "snapshot tree" lines), op_X (the operation, run as
# $WRAP ferry ...), retry_X, and sets POOLS, KIND, TOKEN_DS, TOKEN_SNAP.
# the pool the streams come from, and the streams: the full one sent before
# the properties change, so the incremental one changes them too
origin() {
	[ -f "$W/origin/incr" ] && return 0
	mkdir -p "$W/origin"
	fo pool create tank "$W/origin/tank" &&
		cp -a "$W/A" "$W/origin/src" &&
		fo create -o source="$W/origin/src" -o recordsize=4K tank/fs &&
		fo set compression=gzip-1 ferry:owner=alice tank/fs &&
		fo snapshot tank/fs@a &&
		fo send -p tank/fs@a >"$W/origin/full" &&
		mutate "$W/origin/src" 1 &&
		fo set ferry:stage=b compression=lz4 tank/fs && fo inherit ferry:owner tank/fs &&
		fo snapshot tank/fs@b &&
		fo send -c -p -i @a tank/fs@b >"$W/origin/incr" || die "cannot make the origin pool"
}
# cut_resume STREAM: recv -s of STREAM's first half into bk/fs, and the
# stream `send -t` makes from its token, in $SD/resume.
cut_resume() {
	head -c $(($(stat -c %s "$1") / 2)) "$1" >"$SD/cut"
	fl recv -s bk/fs <"$SD/cut" 2>/dev/null && die "a cut stream was accepted"
	_t=$(fl get -H -o value receive_resume_token bk/fs)
	[ -n "$_t" ] && [ "$_t" != - ] || die "no resume token after a cut recv -s"
	fo send -t "$_t" >"$SD/resume" || die "send -t failed"
}
retry_atomic() { op_$SCN; }
resume_retry() {
	_t=$(fl get -H -o value receive_resume_token bk/fs)
	[ -n "$_t" ] && [ "$_t" != - ] || { echo "no resume token to retry with"; return 1; }
	fo send -t "$_t" >"$PT/resume" && fl recv -s bk/fs <"$PT/resume"
}

setup_capture_full() { POOLS=tank KIND=atomic; }
prep_capture_full() {
	fl pool create tank "$L/tank" && fl create -o source="$W/A" -o recordsize=4K tank/fs &&
		echo "tank/fs@a $W/A" >"$SD/expect"
}
op_capture_full() { $WRAP "$FERRY" snapshot tank/fs@a; }
retry_capture_full() { retry_atomic; }

setup_capture_incr() { POOLS=tank KIND=atomic; }
prep_capture_incr() {
	cp -a "$W/A" "$SD/src" && fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K tank/fs && fl snapshot tank/fs@a &&
		mutate "$SD/src" 1 && printf '%s\n' "tank/fs@a $W/A" "tank/fs@b $SD/src" >"$SD/expect"
}
op_capture_incr() { $WRAP "$FERRY" snapshot tank/fs@b; }
retry_capture_incr() { retry_atomic; }

setup_recv_full() { POOLS=bk KIND=atomic; }
prep_recv_full() {
	origin && fl pool create -o compression=gzip-6 bk "$L/bk" && echo "bk/fs@a $W/A" >"$SD/expect"
}
op_recv_full() { $WRAP "$FERRY" recv bk/fs <"$W/origin/full"; }
retry_recv_full() { retry_atomic; }

setup_recv_incr() { POOLS=bk KIND=atomic; }
prep_recv_incr() {
	origin && fl pool create -o compression=gzip-6 bk "$L/bk" && fl recv bk/fs <"$W/origin/full" &&
		printf '%s\n' "bk/fs@a $W/A" "bk/fs@b $W/origin/src" >"$SD/expect"
}
op_recv_incr() { $WRAP "$FERRY" recv bk/fs <"$W/origin/incr"; }
retry_recv_incr() { retry_atomic; }

setup_recv_resume() { POOLS=bk KIND=atomic TOKEN_DS=bk/fs TOKEN_SNAP=bk/fs@a; }
prep_recv_resume() {
	origin && fl pool create -o compression=gzip-6 bk "$L/bk" && cut_resume "$W/origin/full" &&
		echo "bk/fs@a $W/A" >"$SD/expect"
}
op_recv_resume() { $WRAP "$FERRY" recv -s bk/fs <"$SD/resume"; }
retry_recv_resume() { resume_retry; }

setup_recv_resume_incr() { POOLS=bk KIND=atomic TOKEN_DS=bk/fs TOKEN_SNAP=bk/fs@b; }
prep_recv_resume_incr() {
	origin && fl pool create -o compression=gzip-6 bk "$L/bk" && fl recv bk/fs <"$W/origin/full" &&
		cut_resume "$W/origin/incr" &&
		printf '%s\n' "bk/fs@a $W/A" "bk/fs@b $W/origin/src" >"$SD/expect"
}
op_recv_resume_incr() { $WRAP "$FERRY" recv -s bk/fs <"$SD/resume"; }
retry_recv_resume_incr() { resume_retry; }

# gc with every kind of work: a destroyed snapshot whose pack is mostly
# garbage (rewritten), a destroyed dataset whose pack is all garbage
# (deleted), a bookmark (its nodes stay), a pack left by a killed capture
# (an orphan), and the catalogue to compact.
setup_gc() { POOLS=tank KIND=atomic; }
prep_gc() {
	cp -a "$W/A" "$SD/src" && "$PRNG" bin 77 1600000 >"$SD/src/blob" &&
		mkdir -p "$SD/x" && "$PRNG" bin 78 1200000 >"$SD/x/data" && seq 1 5000 >"$SD/x/numbers" &&
		fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K tank/fs && fl snapshot tank/fs@a &&
		rm "$SD/src/blob" && mutate "$SD/src" 2 && fl snapshot tank/fs@b &&
		fl bookmark tank/fs@a tank/fs#a &&
		fl create -o source="$SD/x" tank/other && fl snapshot tank/other@x &&
		cp -a "$SD/src" "$SD/src.b" &&
		fl destroy tank/fs@a && fl destroy -r tank/other || return 1
	echo "tank/fs@b $SD/src.b" >"$SD/expect"
	# new data, and a capture of it killed at its first fsync
	mkdir "$SD/src/late" && "$PRNG" bin 79 100000 >"$SD/src/late/f"
	strace -f -qq -o /dev/null -e inject=fsync:signal=KILL:when=1 \
		"$FERRY" snapshot tank/fs@killed >/dev/null 2>&1
	echo "packs after the killed capture: $(ls "$L/tank/packs" | tr '\n' ' ')"
}
op_gc() { $WRAP "$FERRY" gc -v tank; }
retry_gc() { retry_atomic; }

setup_destroy_r() { POOLS=tank KIND=monotone; }
prep_destroy_r() {
	cp -a "$W/A" "$SD/src" && mkdir -p "$SD/kid" "$SD/keep" &&
		"$PRNG" text 80 50000 >"$SD/kid/k1" && "$PRNG" bin 81 30000 >"$SD/kid/k2" &&
		"$PRNG" text 82 40000 >"$SD/keep/x" && ln -s x "$SD/keep/y" &&
		fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K tank/fs &&
		fl create -o source="$SD/kid" -o recordsize=4K tank/fs/kid &&
		fl snapshot -r tank/fs@a && mutate "$SD/src" 1 && fl snapshot tank/fs@b &&
		fl bookmark tank/fs@a tank/fs#a &&
		fl create -o source="$SD/keep" tank/keep && fl snapshot tank/keep@x &&
		printf '%s\n' "tank/fs@a $W/A" "tank/fs@b $SD/src" "tank/fs/kid@a $SD/kid" \
			"tank/keep@x $SD/keep" >"$SD/expect"
}
op_destroy_r() { $WRAP "$FERRY" destroy -r tank/fs; }
retry_destroy_r() { if fl list tank/fs >/dev/null 2>&1; then op_destroy_r; fi; }

setup_rollback_r() { POOLS=tank KIND=atomic; }
prep_rollback_r() {
	cp -a "$W/A" "$SD/src" && fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K tank/fs && fl snapshot tank/fs@a &&
		mutate "$SD/src" 1 && fl snapshot tank/fs@b && cp -a "$SD/src" "$SD/src.b" &&
		mutate "$SD/src" 2 && fl snapshot tank/fs@c &&
		fl bookmark tank/fs@a tank/fs#a && fl bookmark tank/fs@c tank/fs#c &&
		printf '%s\n' "tank/fs@a $W/A" "tank/fs@b $SD/src.b" "tank/fs@c $SD/src" >"$SD/expect"
}
op_rollback_r() { $WRAP "$FERRY" rollback -r tank/fs@a; }
retry_rollback_r() { retry_atomic; }

# scrub: the pool's data is untouched, its catalogue gets the scrub's rows
setup_scrub() { POOLS=tank KIND=atomic ALWAYS_RETRY=1; }
prep_scrub() {
	cp -a "$W/A" "$SD/src" && fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K tank/fs && fl snapshot tank/fs@a &&
		mutate "$SD/src" 1 && fl snapshot tank/fs@b && fl bookmark tank/fs@a tank/fs#a &&
		mutate "$SD/src" 2 && fl snapshot tank/fs@c &&
		fl destroy tank/fs@b &&
		printf '%s\n' "tank/fs@a $W/A" "tank/fs@c $SD/src" >"$SD/expect"
}
op_scrub() { $WRAP "$FERRY" scrub -q tank; }
retry_scrub() { fl scrub -q tank; }

# scrub --repair-from: a new pack of good copies, the index pointed at it
setup_scrub_repair() { POOLS=tank KIND=atomic ALWAYS_RETRY=1 DAMAGED=1; }
prep_scrub_repair() {
	cp -a "$W/A" "$SD/src" && fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K tank/fs && fl snapshot tank/fs@a &&
		mutate "$SD/src" 1 && fl snapshot tank/fs@b &&
		fl pool create bk "$L/bk" && fl send -R tank/fs@b >"$SD/rep" && fl recv bk/fs <"$SD/rep" &&
		python3 "$FERRY_SRC/tests/cli/scrub_lib.py" flip-blocks "$L/tank" 20 4242 &&
		python3 "$FERRY_SRC/tests/cli/scrub_lib.py" flip-nodes "$L/tank" 1 4243 &&
		printf '%s\n' "tank/fs@a $W/A" "tank/fs@b $SD/src" >"$SD/expect"
}
op_scrub_repair() { $WRAP "$FERRY" scrub -q --repair-from bk tank; }
retry_scrub_repair() { fl scrub -q --repair-from bk tank; }

# pool recover: a new catalogue built beside the old one, its commit point
# (catalog.db.recover), the swap; the state must be the same throughout
setup_recover() { POOLS=tank KIND=atomic ALWAYS_RETRY=1; }
prep_recover() {
	cp -a "$W/A" "$SD/src" && fl pool create tank "$L/tank" &&
		fl create -o source="$SD/src" -o recordsize=4K -o ferry:x=1 tank/fs &&
		fl snapshot tank/fs@a && mutate "$SD/src" 1 && fl snapshot tank/fs@b &&
		fl bookmark tank/fs@a tank/fs#a && fl hold keep tank/fs@a &&
		mutate "$SD/src" 2 && fl snapshot tank/fs@c && fl destroy tank/fs@b &&
		printf '%s\n' "tank/fs@a $W/A" "tank/fs@c $SD/src" >"$SD/expect"
}
op_recover() { $WRAP "$FERRY" pool recover tank; }
retry_recover() { fl pool recover tank; }

# ---- the profile and the points -----------------------------------------------------
# points TRACE: the kill points of a profile, in the order the calls came:
# "syscall:N" with N the call's ordinal in its thread, each once (a point
# two threads share kills at the first to reach it). The number of
# write-class calls goes to $SD/calls.
points() {
	awk -v out="$SD/calls" '
	{
		pid = $1; call = $2
		if (call !~ /^[a-z_0-9]+\(/) next
		sub(/\(.*/, "", call)
		n = ++count[pid, call]
		if ((call == "openat" || call == "open") && $0 !~ /O_CREAT/) next
		calls++
		key = call ":" n
		if (!(key in seen)) { seen[key] = 1; print key }
	}
	END { print calls + 0 >out }' "$1"
}
# spread M K: K indices from 1..M, evenly spread, first and last included.
spread() {
	awk -v m="$1" -v k="$2" 'BEGIN {
		if (k >= m) { for (i = 1; i <= m; i++) print i; exit }
		if (k == 1) { print int((m + 1) / 2); exit }
		last = 0
		for (j = 0; j < k; j++) { i = 1 + int(j * (m - 1) / (k - 1) + 0.5); if (i != last) print i; last = i }
	}'
}

reset_live() { rm -rf "$L" && cp -a "$SD/pristine" "$L"; }

# scenario NAME: prep, control, then the points.
scenario() {
	SCN=$(echo "$1" | tr - _) NAME=$1
	SD=$W/s/$NAME L=$W/s/$NAME/live PT=$W/s/$NAME/pt
	POOLS="" KIND=atomic TOKEN_DS="" TOKEN_SNAP=""
	ALWAYS_RETRY=0 DAMAGED=0
	command -v "setup_$SCN" >/dev/null 2>&1 || die "no scenario '$NAME' (one of: $SCENARIOS)"
	setup_$SCN
	export FERRY_HOME="$L/home"
	_t0=$(now)
	mkdir -p "$L/home" "$PT"
	prep_$SCN >"$SD/prep.log" 2>&1 || die "$NAME: the preparation failed: $(tail -3 "$SD/prep.log")"
	BEFORE=$(for _p in $POOLS; do names "$_p"; done)
	printf '%s\n' "$BEFORE" >"$SD/before"
	for _p in $POOLS; do figures "$_p" >"$SD/figures0.$_p" 2>&1; done
	for _p in $POOLS; do props "$_p"; done >"$SD/props0"
	cp -a "$L" "$SD/pristine" || die "cannot copy $L"
	# the control: the operation once, traced but not killed, then gc
	WRAP="strace -f -qq -o $SD/profile -e trace=$WSET"
	op_$SCN >"$SD/control.log" 2>&1 || die "$NAME: the operation failed without a kill: $(tail -3 "$SD/control.log")"
	WRAP=""
	AFTER=$(for _p in $POOLS; do names "$_p"; done)
	printf '%s\n' "$AFTER" >"$SD/after"
	for _p in $POOLS; do figures "$_p" >"$SD/figures1.$_p" 2>&1; done
	for _p in $POOLS; do props "$_p"; done >"$SD/props1"
	rm -rf "$SD/postop" && cp -a "$L" "$SD/postop"
	for _p in $POOLS; do
		fl gc -v "$_p" >>"$SD/control.log" 2>&1 || die "$NAME: gc of the control failed"
		figures "$_p" >"$SD/figures.$_p" 2>&1
		codecs "$_p" >"$SD/codecs.$_p" 2>&1
		files "$L/$_p" >"$SD/files.$_p"
		packbytes "$L/$_p" >"$SD/disk.$_p"
	done
	rm -rf "$SD/final" && cp -a "$L" "$SD/final"
	# the control must itself pass every check it is the reference of
	NFAIL=0 NOW=$AFTER
	rm -f "$PT/fails"
	chk_final
	[ "$NFAIL" = 0 ] || die "$NAME: the control fails its own checks:$(cat "$PT/fails")"
	points "$SD/profile" >"$SD/points"
	_m=$(wc -l <"$SD/points")
	[ "$_m" -gt 0 ] || die "$NAME: the profile has no write-class call"
	if [ -n "$AT" ]; then
		echo "$AT" >"$SD/chosen"
	else
		spread "$_m" "$POINTS" | while read -r _i; do sed -n "${_i}p" "$SD/points"; done >"$SD/chosen"
	fi
	_run=0 _killed=0 _missed=0 _failed=0 _idx=0
	while read -r _pt; do
		_idx=$((_idx + 1))
		_call=${_pt%:*} _n=${_pt#*:}
		_at=$(grep -n -x "$_pt" "$SD/points" | cut -d: -f1)
		reset_live || die "cannot reset $L"
		rm -rf "$PT" && mkdir -p "$PT"
		NFAIL=0
		WRAP="timeout 300 strace -f -qq -o $PT/trace -e trace=$WSET -e inject=$_call:signal=KILL:when=$_n"
		op_$SCN >"$PT/out" 2>&1
		_rc=$?
		WRAP=""
		_run=$((_run + 1))
		if [ "$_rc" = 137 ] && grep -q 'killed by SIGKILL' "$PT/trace"; then
			_killed=$((_killed + 1)) _how=killed
		elif [ "$_rc" = 0 ]; then
			_missed=$((_missed + 1)) _how="not hit (the operation completed)"
		else
			_how="exit $_rc"
			fail op "the operation under strace ended with status $_rc: $(tail -1 "$PT/out")"
		fi
		after_kill
		if [ "$NFAIL" -gt 0 ]; then
			_failed=$((_failed + 1))
			{
				echo "FAIL $NAME point $_pt (write-class call ${_at:-?} of $_m), $_how:"
				cat "$PT/fails"
				echo "  last calls before the kill:"
				grep -v -e '+++' -e '^[0-9]* ---' "$PT/trace" | tail -3 | cut -c1-150 | sed 's/^/    /'
				echo "  reproduce: FERRY=$FERRY sh $FERRY_SRC/tests/torture/kill.sh -s $NAME --at $_pt --keep -w /tmp/ferry-kill"
				echo
			} >>"$FAILLOG"
			echo "$NAME: point $_pt FAILED: $(head -1 "$PT/fails" | sed 's/^ *//')" >&2
		fi
	done <"$SD/chosen"
	_secs=$(($(now) - _t0))
	printf '%-17s %6s %6s %6s %6s %7s %6s %7s\n' "$NAME" "$(cat "$SD/calls")" "$_m" "$_run" "$_killed" "$_missed" "$_failed" "$_secs" >>"$W/table"
	[ -n "$RESULTS" ] && echo "$NAME $_m $_run $_killed $_missed $_failed $_secs" >>"$RESULTS"
	echo "$NAME: $_run points of $_m, $_killed killed, $_missed not hit, $_failed failed, ${_secs}s" >&2
	[ "$KEEP" = 1 ] || rm -rf "$SD/pristine" "$SD/postop" "$SD/final" "$L"
}

# ---- selftest: every check can fail ---------------------------------------------
# case NAME STAGE CHECK ACTION...: breaks a copy of the scenario's pools
# (STAGE postop: as the operation left them, then the whole sequence after a
# kill runs; final: after gc, then the final checks run) and wants CHECK
# among the failures.
st_case() {
	st_name=$1 st_stage=$2 st_want=$3; shift 3
	case $st_name in *${ST_ONLY:-}*) ;; *) return ;; esac
	rm -rf "$L" && cp -a "$SD/$st_stage" "$L"
	rm -rf "$PT" && mkdir -p "$PT"
	NFAIL=0
	"$@" >"$PT/break.log" 2>&1 || { echo "not ok - selftest $st_name: could not break the pool: $(tail -1 "$PT/break.log")"; ST_BAD=$((ST_BAD + 1)); return; }
	if [ "$st_stage" = final ]; then chk_final; else after_kill; fi
	exec 9<&-
	if [ -f "$PT/fails" ] && grep -q "^  $st_want " "$PT/fails"; then
		echo "ok - selftest $st_name: the $st_want check reports it"
		[ -n "$RESULTS" ] && echo "selftest $st_name ok" >>"$RESULTS"
	else
		ST_BAD=$((ST_BAD + 1))
		echo "not ok - selftest $st_name: the $st_want check did not report it; reports: $(cat "$PT/fails" 2>/dev/null | tr '\n' ' ')"
		[ -n "$RESULTS" ] && echo "selftest $st_name FAILED" >>"$RESULTS"
	fi
}
sqp() { "$SQLITE" -batch "$L/$1/catalog.db" "$2"; }
# a pack with blocks (not one of nodes or a checkpoint: docs/ferry-nodes.md)
onepack() { sqp "$1" "SELECT k.name FROM packs k WHERE EXISTS (SELECT 1 FROM blocks b WHERE b.pack_id = k.id) ORDER BY k.name LIMIT 1;"; }
br_rm_pack() { rm "$L/bk/packs/$(onepack bk)"; }
br_short_pack() { _f=$L/bk/packs/$(onepack bk); truncate -s $(($(stat -c %s "$_f") - 1)) "$_f"; }
br_grow_pack() { echo garbage >>"$L/bk/packs/$(onepack bk)"; }
br_block_offset() { sqp bk "UPDATE blocks SET offset = offset + 100000000 WHERE id = (SELECT max(id) FROM blocks);"; }
br_referenced() { sqp bk "UPDATE snapshots SET referenced = referenced + 4096 WHERE name = 'b';"; }
br_flip_block() { # one byte in the middle of a block's payload
	_f=$L/bk/packs/$(onepack bk)
	_o=$(sqp bk "SELECT b.offset + 48 + b.psize / 2 FROM blocks b JOIN packs k ON k.id = b.pack_id
		     WHERE k.name = '$(onepack bk)' ORDER BY b.psize DESC LIMIT 1;")
	printf '\377' | dd of="$_f" bs=1 seek="$_o" conv=notrunc status=none
}
br_page() { # a b-tree page of the catalogue overwritten
	sqp bk "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
	_ps=$(sqp bk "PRAGMA page_size;")
	_pg=$(sqp bk "SELECT rootpage FROM sqlite_master WHERE name = 'snapshots';")
	"$PRNG" bin 5 200 | dd of="$L/bk/catalog.db" bs=1 seek=$((_ps * (_pg - 1) + 8)) conv=notrunc status=none
}
br_dangling_row() { sqp bk "PRAGMA foreign_keys = OFF; INSERT INTO snapshots(ds_id, name, guid, createtxg, creation_ns, root)
	SELECT 999, name, guid, createtxg, creation_ns, root FROM snapshots LIMIT 1;"; }
br_lose_ref() { sqp bk "DELETE FROM ds_refs WHERE block_id = (SELECT max(block_id) FROM ds_refs);"; }
br_extra_ds() { fl create bk/left-behind; }
br_token() {
	sqp bk "INSERT INTO recv_partial(ds, token, to_guid, from_guid, pos, created)
		VALUES('$TOKEN_DS', '1-0123456789abcdef', 1, 0, 0, 0);"
}
br_prop() { fl set ferry:junk=1 bk/fs; }
br_tank_ds() { fl create tank/new; }
br_tank_lose_snap() { fl destroy tank/keep@x; }
br_tank_prop() { fl set ferry:junk=1 tank/keep; }
br_no_pool() { rm "$L/bk/ferry.pool"; }
br_no_base() { fl destroy bk/fs@a; }
br_gc_busy() { # this shell holds the pool's lock shared, as a restore would
	exec 9<"$L/bk/gc.lock" && flock -s 9
}
br_drop_token() { sqp bk "DELETE FROM recv_partial;"; }
br_swap_root() { sqp bk "UPDATE snapshots SET root = (SELECT root FROM snapshots WHERE name = 'a') WHERE name = 'b';"; }
br_orphan() { cp "$L/bk/packs/$(onepack bk)" "$L/bk/packs/0123456789abcdef.pack"; }
br_stray() { echo junk >"$L/bk/catalog.db.tmp"; }
br_written() { sqp bk "UPDATE snapshots SET written = written + 1 WHERE name = 'b';"; }
br_codec() { sqp bk "UPDATE blocks SET level = level - 1 WHERE id = (SELECT max(id) FROM blocks WHERE level > 1);"; }
br_extra_snap() { fl snapshot --from "$W/A" bk/fs@extra; }
selftest() {
	ST_BAD=0 POINTS=0
	scenario recv-incr
	SCN=recv_incr
	st_case "a pack deleted" postop packs br_rm_pack
	st_case "a pack cut short by one byte" postop packs br_short_pack
	st_case "a block row pointing past its pack's end" postop packs br_block_offset
	st_case "a byte of a block changed" postop restore br_flip_block
	st_case "a snapshot's referenced figure changed" postop figures br_referenced
	st_case "a catalogue page overwritten" postop integrity br_page
	st_case "a row naming a missing dataset" postop integrity br_dangling_row
	st_case "a snapshot's block reference deleted" postop restore br_lose_ref
	st_case "a dataset left behind" postop names br_extra_ds
	st_case "a property set behind the operation's back" postop props br_prop
	st_case "a pool that does not open" postop open br_no_pool
	st_case "an operation that cannot be redone" pristine retry br_no_base
	st_case "a gc that cannot run" postop gc br_gc_busy
	st_case "a snapshot that should not be there" final names br_extra_snap
	st_case "a snapshot with another's tree" final restore br_swap_root
	st_case "a pack the catalogue does not know" final orphans br_orphan
	st_case "a stray file in the pool" final files br_stray
	st_case "a space figure changed" final figures br_written
	st_case "garbage appended to a pack" final disk br_grow_pack
	st_case "a block's codec level changed" final codecs br_codec
	scenario recv-resume
	SCN=recv_resume
	st_case "a resume token left beside the snapshot" postop token br_token
	st_case "no resume token and no snapshot" pristine token br_drop_token
	scenario destroy-r
	SCN=destroy_r
	st_case "destroy -r: a dataset the state before did not have" postop names br_tank_ds
	st_case "destroy -r: a snapshot gone before its dataset is destroyed" pristine names br_tank_lose_snap
	st_case "destroy -r: a property of what is left changed" postop props br_tank_prop
}

# ---- main ------------------------------------------------------------------------------
T0=$(now)
mk_tree "$W/A" 1 || die "cannot build the tree"
: >"$W/table"
if [ "$SELFTEST" = 1 ]; then
	KEEP=1
	selftest
	[ "$ST_BAD" = 0 ] && exit 0 || exit 1
fi
for s in $SCENARIOS; do scenario "$s"; done
echo
# calls: write-class calls in the profile; distinct: kill points among them
# (call and ordinal in its thread); run: the points chosen; killed: those
# whose operation died at its call; not-hit: completed before it came
printf '%-17s %6s %6s %6s %6s %7s %6s %7s\n' operation calls distinct run killed not-hit failed seconds
cat "$W/table"
awk -v t=$(($(now) - T0)) '{ c += $2; d += $3; p += $4; k += $5; m += $6; f += $7 }
	END { printf "%-17s %6d %6d %6d %6d %7d %6d %7d\n", "total", c, d, p, k, m, f, t }' "$W/table"
TOTAL_KILLED=$(awk '{ k += $5 } END { print k + 0 }' "$W/table")
TOTAL_FAILED=$(awk '{ f += $7 } END { print f + 0 }' "$W/table")
if [ "$TOTAL_FAILED" -gt 0 ]; then
	echo
	echo "$TOTAL_FAILED points failed:"
	cat "$FAILLOG"
	[ -n "$RESULTS" ] && cp "$FAILLOG" "$RESULTS.failures"
	exit 1
fi
if [ "$TOTAL_KILLED" -lt "$MIN" ]; then
	echo "only $TOTAL_KILLED points killed, fewer than $MIN"
	exit 1
fi
exit 0
