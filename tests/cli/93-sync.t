#!/bin/sh
# ferry sync to a local pool (send and recv in one process): a full send
# of the whole history when there is no common snapshot, then -I of
# everything since the newest common one (found by guid; a bookmark counts
# on the source), --no-intermediate, -r with new children created, a
# destination with unrelated snapshots refused unless -F, a diverged one
# refused unless -F rolls it back, a partial receive resumed, a stale one
# (its source snapshot destroyed) discarded and the send restarted from
# the common base, the hold and bookmark moved to the new base after each
# success (destroy of the base refused, destroy -d deferred to the move),
# --compress=auto, -o/-x and the retention properties never received, -n,
# --json, one line per dataset and the exit codes.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/sync_lib.sh"
mkdir -p "$T/p" "$T/src/sub"
ferry pool create tank "$T/p/tank"
ferry pool create -o compression=gzip-7 bk "$T/p/bk"
ferry create bk/host1
head -c 300000 /dev/urandom >"$T/src/big"
seq 1 20000 >"$T/src/n"
echo s >"$T/src/sub/f"
ferry create -o source="$T/src" tank/home
ferry create -o source="$T/src/sub" tank/home/sub
ferry set ferry:keep-daily=3 tank/home
ferry set user:note=hello tank/home
ferry set user:secret=x tank/home
snap() { # NAME: change a file, snapshot the tree, keep a copy of it
	echo "$1" >>"$T/src/n"; echo "$1" >"$T/src/sub/f"
	ferry snapshot -r "tank/home@$1"
	mkdir -p "$TS/want/$1"; cp -a "$T/src/." "$TS/want/$1/"
}
snap a; snap b; snap c

# ---- full, then incremental -------------------------------------------------------------
syncj -r -x user:secret tank/home bk/host1/home
is "$(cat "$T/sum")" \
	"tank/home full 3 resumed=0 aborted=0 - @c
tank/home/sub full 3 resumed=0 aborted=0 - @c" "no common snapshot: the whole history, oldest first (-r: the child created)"
is "$rc" 0 "exit 0"
is "$(ferry list -H -r -t snapshot -o name bk/host1 | tr '\n' ' ')" \
	"bk/host1/home@a bk/host1/home@b bk/host1/home@c bk/host1/home/sub@a bk/host1/home/sub@b bk/host1/home/sub@c " \
	"every snapshot arrived"
is "$(ferry holds -H tank/home@c | cut -f1,2)" "$(printf 'tank/home@c\tferry-sync:bk/host1/home')" \
	"the base is held, the tag naming the destination"
is "$(ferry list -H -t bookmark -o name tank/home/sub)" "tank/home/sub#ferry-sync_bk_host1_home_sub_$(ferry list -H -t bookmark -o name tank/home/sub | sed 's/.*_//')" \
	"and bookmarked"
is "$(ferry get -H -o value,source user:note bk/host1/home | tr '\t' ' ')" "hello received" "properties are received"
is "$(ferry get -H -o value user:secret bk/host1/home) $(ferry get -H -o value ferry:keep-daily bk/host1/home)" "- -" \
	"but not -x ones, nor the retention policy"
refused 1 "tank/home@c' is held \(tag 'ferry-sync:bk/host1/home'\): dataset is busy" \
	"the base cannot be destroyed" ferry destroy tank/home@c
run ferry destroy -d tank/home@c
is "$rc:$(ferry get -H -o value defer_destroy tank/home@c)" "0:on" "destroy -d marks it"
snap d; snap e; snap f
run ferry sync -r tank/home bk/host1/home
like "$(sed -n 1p "$T/out")" "^tank/home -> bk/host1/home: sent 3 snapshots incremental from @c to @f, [0-9.]+[KM]? in [0-9.]+s \([^)]*/s\); blocks: [0-9]+ kept, [0-9]+ recompressed, [0-9]+ compressed, [0-9]+ already there$" \
	"one line per dataset: snapshots, bytes, rate, kept and recompressed"
is "$(wc -l <"$T/out")" 2 "two lines for two datasets"
is "$(ferry list -H -t snapshot -o name tank/home | tr '\n' ' ')" "tank/home@a tank/home@b tank/home@d tank/home@e tank/home@f " \
	"the move of the hold let the deferred destroy go"
is "$(ferry holds -H tank/home@f | cut -f2)" "ferry-sync:bk/host1/home" "the hold moved to the new base"
syncj -r tank/home bk/host1/home
is "$(cat "$T/sum")" "tank/home up-to-date 0 resumed=0 aborted=0 @f @f
tank/home/sub up-to-date 0 resumed=0 aborted=0 @f @f" "nothing new: up to date"

# ---- --no-intermediate, -n, a new child --------------------------------------------------
snap g; snap h
mkdir -p "$T/src/new"; echo n >"$T/src/new/f"
ferry create -o source="$T/src/new" tank/home/new
ferry snapshot tank/home/new@n1
mkdir -p "$TS/want/n1/new"; cp -a "$T/src/new/." "$TS/want/n1/new/"
before=$(ferry list -H -p -r -t all -o name,guid bk)
syncj -r -n tank/home bk/host1/home
is "$(cut -d' ' -f1-3 "$T/sum")" "tank/home incremental 2
tank/home/new full 1
tank/home/sub incremental 2" "-n says what would go"
is "$(ferry list -H -p -r -t all -o name,guid bk)" "$before" "and sends nothing"
syncj -r --no-intermediate tank/home bk/host1/home
is "$(cut -d' ' -f1-3 "$T/sum")" "tank/home incremental 1
tank/home/new full 1
tank/home/sub incremental 1" "--no-intermediate: only the newest (a new child is created)"
is "$(ferry list -H -t snapshot -o name bk/host1/home | tail -2 | tr '\n' ' ')" "bk/host1/home@f bk/host1/home@h " \
	"@g was skipped"

# ---- a bookmark as the common base ---------------------------------------------------------
snap i
ferry release ferry-sync:bk/host1/home tank/home@h
ferry destroy tank/home@h
syncj tank/home bk/host1/home
is "$(cat "$T/sum")" "tank/home incremental 1 resumed=0 aborted=0 #$(ferry list -H -t bookmark -o name tank/home | sed 's/.*#//') @i" \
	"the base snapshot destroyed: incremental from its bookmark"
is "$(ferry holds -H tank/home@i | cut -f2)" "ferry-sync:bk/host1/home" "and the hold is on the new base"

# ---- a partial receive: resumed, or discarded when stale ----------------------------------------
head -c 2000000 /dev/urandom >"$T/src/big2"
snap j
ferry send -c -p -i @i tank/home@j 2>/dev/null | head -c 1000000 | ferry recv -s bk/host1/home 2>/dev/null
like "$(ferry get -H -o value receive_resume_token bk/host1/home)" "^1-" "(a partial receive is left)"
syncj tank/home bk/host1/home
is "$(cat "$T/sum")" "tank/home incremental 1 resumed=1 aborted=0 @i @j" "it is resumed"
is "$(ferry get -H -o value receive_resume_token bk/host1/home)" "-" "and done"
head -c 1000000 /dev/urandom >"$T/src/big3"
snap k; snap l
ferry send -c -p -i @j tank/home@k 2>/dev/null | head -c 300000 | ferry recv -s bk/host1/home 2>/dev/null
like "$(ferry get -H -o value receive_resume_token bk/host1/home)" "^1-" "(a partial receive of @k is left)"
ferry destroy tank/home@k
syncj -v tank/home bk/host1/home
is "$(cat "$T/sum")" "tank/home incremental 1 resumed=0 aborted=1 @j @l" \
	"its snapshot destroyed on the source: discarded, and sent again from the common base"
like "$(cat "$T/err")" "discarding the partial receive into bk/host1/home \(its source snapshot is gone\)" "-v says why"

# ---- unrelated and diverged destinations ---------------------------------------------------------
mkdir -p "$T/other"; echo other >"$T/other/x"
ferry create -o source="$T/other" bk/host1/other
ferry snapshot bk/host1/other@mine
refused 1 "^ferry: sync tank/home -> bk/host1/other: bk/host1/other has snapshots \(bk/host1/other@mine\) but none that tank/home has; -F replaces them$" \
	"a destination with unrelated snapshots is refused" ferry sync tank/home bk/host1/other
is "$(ferry list -H -t snapshot -o name bk/host1/other)" "bk/host1/other@mine" "and left alone"
ferry inherit source bk/host1/other
syncj -F tank/home bk/host1/other
is "$(cut -d' ' -f1-3 "$T/sum")" "tank/home full 9" "-F replaces them"
is "$(ferry list -H -t snapshot -o name bk/host1/other | head -1)" "bk/host1/other@a" "(they are gone)"
ferry set source="$T/other" bk/host1/home
ferry snapshot bk/host1/home@local
ferry inherit source bk/host1/home
snap m
refused 1 "bk/host1/home has 1 snapshot\(s\) after the common base @l \(bk/host1/home@local\); -F rolls them back" \
	"a diverged destination is refused" ferry sync tank/home bk/host1/home
syncj -F tank/home bk/host1/home
is "$(cut -d' ' -f1-3 "$T/sum")" "tank/home incremental 1" "-F rolls it back"
refused 1 "does not exist" "bk/host1/home@local is gone" ferry list bk/host1/home@local

# ---- --compress=auto, -o, a dry run of resumes, errors --------------------------------------------
snap n
ferry create -o compression=gzip-3 bk/host2
run ferry sync -o user:where=bk2 --compress=auto tank/home bk/host2/home
like "$(cat "$T/out")" "blocks: [1-9][0-9]* kept, 0 recompressed" \
	"--compress=auto: recompressed on the sender, kept as they come"
is "$(ferry get -H -o value,source user:where bk/host2/home | tr '\t' ' ')" "bk2 local" "-o sets a property"
refused 1 "'https://127.0.0.1:1': http\[s\]://HOST\[:PORT\]/POOL/DATASET" \
	"an https:// destination without a dataset is refused (tests/cli/88 syncs over https)" \
	ferry sync tank/home https://127.0.0.1:1
refused 1 "^ferry: cannot sync 'tank/home' to 'https://127.0.0.1:1/bk/x': GET /v1/receive: " \
	"a server that is not there: one line" ferry sync tank/home https://127.0.0.1:1/bk/x
refused 1 "^ferry: cannot sync 'tank/nope' to 'bk/x': .*does not exist$" "a missing source" \
	ferry sync tank/nope bk/x
refused 1 "the destination 'tank/home/sub/x' is inside the tree of the source 'tank/home'" \
	"-r into the source's own tree is refused" ferry sync -r tank/home tank/home/sub/x
refused 1 "the destination 'tank/home' is the source" "so is a sync onto itself" ferry sync tank/home tank/home
refused 2 "usage" "one operand" ferry sync tank/home
refused 2 "compress" "a bad codec" ferry sync --compress=zip tank/home bk/x
refused 1 "bad port" "a bad ssh URL" ferry sync tank/home ssh://h:0/bk/x
# one dataset fails, the other does not: exit 3
ferry create bk/host3
mkdir -p "$T/o3"; echo 3 >"$T/o3/f"
ferry create -o source="$T/o3" bk/host3/home
ferry create bk/host3/home/sub
ferry snapshot bk/host3/home@x
ferry inherit source bk/host3/home
run ferry sync -r tank/home bk/host3/home
is "$rc:$(grep -c . "$T/out"):$(grep -c . "$T/err")" "3:2:1" "some datasets failed: exit 3, a line each"

# ---- what is there restores as it was taken ---------------------------------------------------------
ferry destroy -r bk/host3
ferry destroy -r bk/host1/other
SAS_WANT=$TS/want same_as_source tank/home bk/host1/home "the replicated tree"
done_testing
