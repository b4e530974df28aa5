#!/bin/sh
# gc merges small packs (store/gc.c, GC_SMALL_MERGE): every commit writes a
# pack of its blocks and one of its nodes, a few KiB each for an hourly
# incremental. Once a pool holds 64 or more packs under 1 MiB with something
# live in them, gc copies what is live in each into packs of up to 64 MiB:
# copied and fsynced, then the catalogue pointed at the copy, then the old
# files unlinked, up to 64 packs at a time. Fewer stay as they are. A cron-style pool of 34
# incrementals (70 such packs) is merged by its first gc and left alone by
# its second, its figures unchanged and every snapshot restoring identical to
# a control's; a captured pool likewise; a pool of 10 incrementals is not
# touched. Then the merging gc under injected faults (the fault build): each
# run fails with one line or succeeds silently, and leaves a pool whose
# figures, catalogue and packs agree and whose snapshots restore identical;
# the next gc succeeds and leaves no more packs than it found.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
FB=${FERRY_FAULT_BIN:-$FERRY_SRC/build-fault/ferry}
POINTS=${FAULT_POINTS:-4}
W="$T/w"
export FERRY_HOME="$W/home"
N=34
S="$T/s"
mkdir -p "$S" "$W"
for i in 1 2 3 4 5 6 7 8; do seq "$i" 2000 >"$S/f$i"; done
ferry pool create -o compression=lz4 src "$W/src"
ferry pool create -o compression=gzip-7 bk "$W/bk"
ferry pool create -o compression=gzip-7 few "$W/few"
ferry create -o source="$S" src/d
ferry snapshot src/d@0
ferry send src/d@0 | ferry recv bk/d
ferry send src/d@0 | ferry recv few/d
prev=0
for i in $(seq 1 $N); do
	echo "line $i" >>"$S/f$((i % 8 + 1))"
	ferry snapshot "src/d@$i"
	ferry send -i "@$prev" "src/d@$i" | ferry recv bk/d
	[ "$i" -le 10 ] && ferry send -i "@$prev" "src/d@$i" | ferry recv few/d
	[ "$i" = 17 ] && cp -a "$S" "$TS/at17"
	prev=$i
done
cp -a "$S" "$TS/atN"
cp -a "$W" "$T/w0"
rm -f "$T/w0"/*/reserve # remade by every command that writes
reset() { rm -rf "$W"; cp -a "$T/w0" "$W"; }

# packs POOL: its data and node packs (not the records' checkpoints, r*)
packs() { ls "$W/$1/packs" | grep -vc '^r'; }
# state POOL: figures, codec table, integrity, packs against the catalogue
state() {
	figures "$1"
	codecs "$1"
	echo "integrity: $(sqlite3 "$W/$1/catalog.db" "PRAGMA integrity_check" 2>&1)"
	ls "$W/$1/packs" | sort >"$T/files"
	sqlite3 "$W/$1/catalog.db" "SELECT name FROM packs ORDER BY name" >"$T/known" 2>&1
	comm -13 "$T/files" "$T/known" | sed 's/^/missing pack: /'
}
# same_restores POOL: its @17 and @N restore as the source was then, and
# scrub reads every block of the pool whole
same_restores() {
	for _p in "17 at17" "$N atN"; do
		rm -rf "$TS/r"
		"$FERRY" restore "$1/d@${_p% *}" "$TS/r" 2>&1 || return 1
		"$TREECMP" --no-root "$TS/${_p#* }" "$TS/r" 2>&1 || return 1
	done
	rm -rf "$TS/r"
	"$FERRY" scrub "$1" >/dev/null 2>&1 || { echo "scrub $1 fails"; return 1; }
}

# ---- the clean runs ---------------------------------------------------------------------
n0=$(packs bk)
[ "$n0" -ge 70 ] && ok "34 received incrementals left $n0 data and node packs" ||
	not_ok "34 received incrementals left only $n0 data and node packs"
state bk >"$T/before"
run ferry gc -v bk
like "$rc:$(cat "$T/out" "$T/err")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, [0-9]+ rewritten, 0 orphans removed$" \
	"gc of the cron-style pool exits 0 and says what it rewrote"
m=$(sed -n 's/.*deleted, \([0-9]*\) rewritten.*/\1/p' "$T/out")
is "$m" "$n0" "every small pack was merged ($n0)"
like "$(packs bk)" "^[12]$" "one or two packs are left"
is "$(state bk)" "$(cat "$T/before")" "the figures, codecs and catalogue are as before the merge"
same_restores bk >"$T/why" 2>&1
is "$?:$(head -3 "$T/why")" "0:" "@17 and @$N restore as their sources were; scrub finds every block whole"
run ferry gc -v bk
like "$rc:$(cat "$T/out")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, 0 rewritten, 0 orphans removed$" \
	"a second gc has nothing to merge"

n1=$(packs few)
run ferry gc -v few
like "$rc:$(cat "$T/out")" "^0:.* 0 rewritten" "a pool of 10 incrementals: its small packs stay ($n1)"
is "$(packs few)" "$n1" "... all of them"

n2=$(packs src)
run ferry gc -v src
like "$rc:$(cat "$T/out")" "^0:.* [1-9][0-9]* rewritten" "the captured pool's $n2 small packs are merged"
like "$(packs src)" "^[12]$" "... into one or two"
same_restores src >"$T/why" 2>&1
is "$?:$(head -3 "$T/why")" "0:" "the captured pool's @17 and @$N restore as their sources were"

ferry pool create -o compression=gzip-7 ctl "$W/ctl"
ferry send -R "src/d@$N" | ferry recv ctl/d
# a replication stream commits snapshot by snapshot: the control has as
# many small packs, which its first gc merges (then it has nothing to do)
run ferry gc -v ctl
like "$rc:$(cat "$T/out")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, 70 rewritten, 0 orphans removed$" \
	"the control, received from one send -R, gets as many small packs, merged alike"
after_check bk ctl "34 incrementals, merged by gc"
# the captured pool against an lz4 control of the same snapshots
ferry pool create -o compression=lz4 ctl-src "$W/ctl-src"
ferry send -R "src/d@$N" | ferry recv ctl-src/d
ferry gc ctl-src >/dev/null
after_check src/d ctl-src/d "34 captured snapshots, merged by gc"

# ---- a damaged small pack stays, for scrub; the others are merged ----------------------
reset
dmg=$(sqlite3 "$W/bk/catalog.db" "SELECT k.name || ' ' || (b.offset + 48 + b.psize / 2) FROM blocks b
	JOIN packs k ON k.id = b.pack_id ORDER BY b.id DESC LIMIT 1")
python3 -c 'import sys
f = open(sys.argv[1], "r+b"); o = int(sys.argv[2]); f.seek(o); b = f.read(1); f.seek(o)
f.write(bytes([b[0] ^ 0x40]))' "$W/bk/packs/${dmg% *}" "${dmg#* }"
run ferry gc -v bk
like "$rc:$(cat "$T/out" "$T/err")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, 69 rewritten, 0 orphans removed$" \
	"a block flipped in one small pack: gc merges the 69 others and exits 0"
like "$([ -f "$W/bk/packs/${dmg% *}" ] && echo kept):$(packs bk)" "^kept:[23]$" "the damaged pack is left as it was"
is "$(state bk)" "$(cat "$T/before")" "the figures, codecs and catalogue are as before"
run ferry scrub bk
is "$rc:$(grep -c 'Permanent errors' "$T/out"):$(grep -c "^ *bk/d@$N:/f" "$T/out")" "5:1:1" \
	"scrub reports the damaged file (exit 5)"

# ---- the merging gc under faults ----------------------------------------------------------
# points C K: up to K hook points spread over 1..C
points() {
	if [ "$1" -le "$2" ]; then seq 1 "$1"; return; fi
	awk -v c="$1" -v k="$2" 'BEGIN { for (i = 0; i < k; i++) print 1 + int(i * (c - 1) / (k - 1)) }' | uniq
}
if [ ! -x "$FB" ]; then
	_n=$((_n + 1)); echo "ok $_n # skip no fault build at $FB (make BUILD=build-fault FAULT=1)"
	done_testing; exit $?
fi
reset
rm -f "$T/count"
FERRY_FAULT=count FERRY_FAULT_COUNT="$T/count" "$FB" gc bk >/dev/null 2>"$T/err"
like "$?:$(packs bk)" "^0:[12]$" "the fault build's clean gc merges ($(cat "$T/count"))"
# batched: one fsync of the output, one transaction and one of the
# directory for up to 64 packs, dead packs likewise (a pack at a time
# took 355 fsyncs here)
f=$(sed -n 's/.*\bfsync=\([0-9]*\).*/\1/p' "$T/count")
[ "${f:-0}" -gt 0 ] && [ "$f" -lt $((n0 / 2)) ] && ok "the merge of $n0 packs is batched: $f fsyncs" ||
	not_ok "the merge of $n0 packs took ${f:-no} fsyncs (fewer than $((n0 / 2)) wanted)"
runs=0 bad=0 fails=0
for kind in write fsync rename unlink create alloc; do
	c=$(sed -n "s/.*\\b$kind=\\([0-9]*\\).*/\\1/p" "$T/count")
	[ "${c:-0}" -gt 0 ] || continue
	i=0
	for n in $(points "$c" "$POINTS"); do
		i=$((i + 1))
		case $kind in
		write | create) [ $((i % 2)) = 1 ] && err=ENOSPC || err=EIO ;;
		alloc) err=ENOMEM ;;
		*) err=EIO ;;
		esac
		what="gc $kind:$n:$err"
		reset
		FERRY_FAULT="$kind:$n:$err" "$FB" gc bk >/dev/null 2>"$T/err"
		rc=$?
		runs=$((runs + 1))
		lines=$(wc -l <"$T/err")
		if [ "$rc" -ge 128 ]; then
			bad=$((bad + 1)); diag "$what: crashed (status $rc): $(head -c 300 "$T/err")"; continue
		fi
		if [ "$rc" = 1 ]; then
			fails=$((fails + 1))
			{ [ "$lines" = 1 ] && grep -q '^ferry: ' "$T/err"; } ||
				{ bad=$((bad + 1)); diag "$what: failed with $lines lines: $(head -c 300 "$T/err")"; }
		elif [ "$rc" != 0 ] || [ "$lines" != 0 ]; then
			bad=$((bad + 1)); diag "$what: exit $rc with: $(head -c 300 "$T/err")"
		fi
		if ! state bk | cmp -s - "$T/before"; then
			bad=$((bad + 1)); diag "$what: the pool's state changed:" "$(state bk | diff "$T/before" - | head -6)"
			continue
		fi
		same_restores bk >"$T/why" 2>&1 ||
			{ bad=$((bad + 1)); diag "$what: $(head -3 "$T/why")"; continue; }
		left=$(packs bk)
		"$FERRY" gc bk >/dev/null 2>"$T/err" ||
			{ bad=$((bad + 1)); diag "$what: the next gc fails: $(cat "$T/err")"; continue; }
		[ "$(packs bk)" -le "$left" ] ||
			{ bad=$((bad + 1)); diag "$what: the next gc left $(packs bk) packs of $left"; }
		state bk | cmp -s - "$T/before" && same_restores bk >"$T/why" 2>&1 ||
			{ bad=$((bad + 1)); diag "$what: after the next gc: $(head -3 "$T/why")"; }
	done
done
is "$bad" 0 "$runs runs of the merging gc with a fault ($fails failed): one line or none, no crash, the pool intact, the next gc fine"
# the last run's pool, after its next gc, against a control: every
# snapshot, the figures and the blocks
ferry pool create -o compression=gzip-7 ctl2 "$W/ctl2"
ferry send -R "src/d@$N" | ferry recv ctl2/d
ferry gc ctl2 >/dev/null
after_check bk ctl2 "after the last run with a fault and the next gc"
done_testing
