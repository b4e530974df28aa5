#!/bin/sh
# A quota is checked while a receive arrives, not only at its commit
# (issue 12; ferry(8) quota; ferry-http(7) 507): a 50 MiB stream into a
# dataset under a 5 MiB quota stops once the blocks it stored pass the
# room the quota leaves, reading and writing about the quota, not the
# stream. Locally without -s: exit 1, one line, nothing kept, and after
# gc the pool is as before. With -s (and over HTTP, where every receive
# is resumable) what arrived stays a partial receive, as zfs recv -s
# keeps it after EDQUOT: its resumption is refused at once while the
# quota stays, and completes once it is raised. What the early check
# cannot see (blocks the pool holds already, stored by nobody) is still
# refused at the commit, with the exact figure; what a -F rollback or
# destruction frees is room the receive gets. Ends with after_check
# against a pool that got the same snapshots without quotas.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
MB=1048576
S=$T/src
mkdir -p "$S"
"$PRNG" bin 1 $((50 * MB)) >"$S/big"
"$PRNG" bin 2 100000 >"$S/small"
ferry pool create -o compression=off tank "$T/tank"
ferry create -o source="$S" tank/h
ferry snapshot tank/h@one
ferry send tank/h@one >"$T/one.s"
# over HTTP another 50 MiB: blocks the pool has already would store nothing
mkdir "$T/g"
"$PRNG" bin 3 $((50 * MB)) >"$T/g/big"
ferry create -o source="$T/g" tank/g
ferry snapshot tank/g@one
ferry send tank/g@one >"$T/g.s"
ferry pool create -o compression=off bk "$T/bk"
ferry create -o quota=5M bk/c
ferry create -o quota=5M bk/d
token d bk/d append
packs() { du -sb "$T/bk/packs" | cut -f1; }
# io CMD...: runs it (stdout and stderr in $T/out, $T/err, status in $rc)
# and puts the bytes it read and wrote, by the kernel's count, in $rchar
# and $wchar (a shell's counters take in its children once reaped)
io() {
	sh -c '"$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; cat /proc/$$/io >"$T/io"' \
		io "$@"
	rc=$(cat "$T/rc")
	rchar=$(awk '$1 == "rchar:" { print $2 }' "$T/io")
	wchar=$(awk '$1 == "wchar:" { print $2 }' "$T/io")
}
export T
before_fig=$(figures bk)
before_packs=$(ls "$T/bk/packs")

# ---- locally, without -s ----
io "$FERRY" recv bk/c/h <"$T/one.s"
is "$rc:$(wc -l <"$T/err")" "1:1" "a receive over the quota fails with exit 1 and one line"
like "$(cat "$T/err")" "^ferry: cannot receive into 'bk/c/h': quota exceeded: 'bk/c' would use more than its quota of 5M$" \
	"naming the dataset and its quota"
if [ "$rchar" -lt $((12 * MB)) ]; then ok "it stopped early: read $rchar bytes of a $(wc -c <"$T/one.s")-byte stream"
else not_ok "it stopped early"; diag "read $rchar bytes"; fi
if [ "$wchar" -lt $((12 * MB)) ]; then ok "and wrote $wchar bytes (packs and catalogue) for a 5M quota"
else not_ok "it wrote little"; diag "wrote $wchar bytes"; fi
is "$(ferry list -H -r -o name bk | tr '\n' ' ')" "bk bk/c bk/d " \
	"nothing is committed, not even the dataset"
is "$(ls "$T/bk/packs")" "$before_packs" "the packs it wrote are gone at once"
ferry gc bk >/dev/null
is "$(figures bk)" "$before_fig" "after gc the space figures are those of a pool that never got it"

# ---- locally, with -s: what arrived stays resumable ----
p0=$(packs)
io "$FERRY" recv -s bk/c/h <"$T/one.s"
is "$rc:$(wc -l <"$T/err")" "1:1" "with -s too: exit 1, one line"
like "$(cat "$T/err")" "quota exceeded: 'bk/c' would use more than its quota of 5M; the [0-9]+ records received are kept: resume with 'ferry send -t TOKEN'" \
	"saying what is kept"
grown=$(($(packs) - p0))
if [ "$grown" -ge $((5 * MB)) ] && [ "$grown" -lt $((10 * MB)) ]; then
	ok "the pack directory grew by $grown bytes: the quota and the blocks in flight"
else not_ok "the pack directory grew by about the quota"; diag "grew by $grown bytes"; fi
if [ "$rchar" -lt $((12 * MB)) ]; then ok "and the stream was read only so far"
else not_ok "and the stream was read only so far"; diag "read $rchar bytes"; fi
tok=$(ferry get -H -o value receive_resume_token bk/c/h)
like "$tok" '^1-' "a partial receive with a resume token"
is "$(ferry list -H -r -t snapshot -o name bk)" "" "and no snapshot"
ferry send -t "$tok" >"$T/rest.s"
st=$(ferry list -H -p -r -t all -o name,used,referenced,receive_resume_token bk)
refused 1 "^ferry: cannot receive into 'bk/c/h': quota exceeded: 'bk/c' would use more than its quota of 5M$" \
	"its resumption is refused before a block is stored: the partial's blocks count" \
	"$FERRY" recv -s bk/c/h <"$T/rest.s"
is "$(ferry list -H -p -r -t all -o name,used,referenced,receive_resume_token bk)" "$st" \
	"the partial receive stays as it was"
ferry set quota=60M bk/c
run ferry recv -s bk/c/h <"$T/rest.s"
is "$rc:$(ferry get -H -o value receive_resume_token bk/c/h)" "0:-" \
	"the quota raised, the same resumption completes"

# ---- over HTTP ----
serve_start bk
p0=$(packs)
run "$FERRY" send tank/g@one --to "$URL/bk/d/h" --token-file "$T/tok.d"
is "$rc:$(wc -l <"$T/err")" "1:1" "over HTTP: exit 1, one line"
like "$(cat "$T/err")" "^ferry: cannot send 'tank/g@one' to 'bk/d/h': the server answered 507: cannot receive into 'bk/d/h': quota exceeded: 'bk/d' would use more than its quota of 5M" \
	"the server's 507 and its message"
grown=$(($(packs) - p0))
if [ "$grown" -ge $((5 * MB)) ] && [ "$grown" -lt $((10 * MB)) ]; then
	ok "the server's pack directory grew by $grown bytes, not by the stream's size"
else not_ok "the server's pack directory grew by about the quota"; diag "grew by $grown bytes"; fi
req "$(tok d)" GET /v1/receive/bk/d/h
like "$(json_get receive_resume_token):$(json_get receiving)" '^1-.*:false$' \
	"the server keeps it as a partial receive"
is "$(ferry list -H -r -t snapshot -o name bk/d)" "" "and commits no snapshot"
refused 1 "507.*quota exceeded: 'bk/d' would use more than its quota of 5M" \
	"the automatic resumption is refused while the quota stays" \
	"$FERRY" send tank/g@one --to "$URL/bk/d/h" --token-file "$T/tok.d"
ferry set quota=60M bk/d
run "$FERRY" send -v tank/g@one --to "$URL/bk/d/h" --token-file "$T/tok.d"
is "$rc" 0 "the quota raised, the same send completes"
like "$(cat "$T/err")" "resuming tank/g@one after record [1-9]" "by resuming the partial receive"
sent=$(sed -n 's/.*(\([0-9]*\) stream bytes in all).*/\1/p' "$T/err")
if [ -n "$sent" ] && [ "$sent" -lt $((47 * MB)) ]; then ok "sending only what the server lacked ($sent bytes)"
else not_ok "sending only what the server lacked"; diag "sent ${sent:-?} bytes" "$(cat "$T/err")"; fi
serve_stop
is "$serve_rc" 0 "the server stops cleanly"

# ---- what only the commit can see: blocks the pool has already ----
ferry create -o quota=1M bk/e
io "$FERRY" recv bk/e/h <"$T/one.s"
like "$rc:$(cat "$T/err")" "^1:ferry: cannot receive into 'bk/e/h': quota exceeded: 'bk/e' would use 50\.[0-9]M, over its quota of 1M$" \
	"a stream of blocks the pool holds stores nothing: refused at the commit, with the figure"
ferry destroy bk/e

# ---- -F: the room counts what the rollback or destruction frees ----
mkdir "$T/f"
"$PRNG" bin 11 $((1 * MB)) >"$T/f/p1"
ferry create -o source="$T/f" tank/f
ferry snapshot tank/f@1
"$PRNG" bin 12 $((2 * MB)) >"$T/f/p2"
ferry snapshot tank/f@2
rm "$T/f/p2"
"$PRNG" bin 13 $((3 * MB)) >"$T/f/p3"
ferry snapshot tank/f@3
ferry send tank/f@1 >"$T/f1.s"
ferry send -i @1 tank/f@2 >"$T/f2.s"
ferry send -i @1 tank/f@3 >"$T/f3.s"
rm "$T/f/p1" "$T/f/p3"
"$PRNG" bin 14 $((4 * MB)) >"$T/f/p4"
ferry snapshot tank/f@4
ferry send tank/f@4 >"$T/f4.s"
ferry create -o quota=4608K bk/f
ferry recv bk/f/h <"$T/f1.s"
ferry recv bk/f/h <"$T/f2.s"
# 3M used, 1.5M left; rolled back to @1 only 1M stays
run ferry recv -F bk/f/h <"$T/f3.s"
is "$rc:$(ferry list -H -t snapshot -o name bk/f/h | tr '\n' ' ')" "0:bk/f/h@1 bk/f/h@3 " \
	"an incremental that rolls back first (-F) gets the room the rollback frees"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"
# 4M used by @1 and @3, destroyed by a full stream with -F
run ferry recv -F bk/f/h <"$T/f4.s"
is "$rc:$(ferry list -H -t snapshot -o name bk/f/h | tr '\n' ' ')" "0:bk/f/h@4 " \
	"a full stream that replaces every snapshot (-F) gets the room of all of them"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"

ferry pool create -o compression=off ctl "$T/ctl"
ferry create ctl/c
ferry create ctl/d
ferry recv ctl/c/h <"$T/one.s"
ferry recv ctl/d/h <"$T/g.s"
ferry create ctl/f
ferry recv ctl/f/h <"$T/f4.s"
after_check bk ctl "receives stopped by a quota, then completed"
done_testing
