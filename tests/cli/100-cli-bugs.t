#!/bin/sh
# Issue 11, item 2: command-line bugs found side by side with zfs.
#  - list -d N with no dataset named counts depth from each pool root, and
#    a dataset's snapshots are one level below it (list and get);
#  - send -v/-vP print the estimate (and its size line) before sending,
#    then zfs's TIME SENT SNAPSHOT progress;
#  - a missing pool or dataset is an error (rc 1, one line) for every
#    command, pool list included;
#  - restore --format tar|pax writes pax keywords GNU tar, bsdtar and
#    Python's tarfile all know (no hdrcharset on a UTF-8 tree, xattrs as
#    SCHILY.xattr only), and names that are not UTF-8 still survive;
#  - a failed restore leaves no directory it created behind;
#  - recv -v says what it receives, and where, before it starts.
. "$(dirname "$0")/lib.sh"

S="$T/src"
mkdir -p "$S/d" "$S/é/ü"
echo a >"$S/d/f"
echo b >"$S/é/ü/g"
ln "$S/d/f" "$S/d/hl"
ln -s f "$S/d/sl"
truncate -s 1M "$S/sparse"
echo z >>"$S/sparse"
touch -d '2020-01-01 00:00:00.123456789' "$S/d/f"
mkdir -p "$S/$(printf 'L%.0s' $(seq 1 120))/x"
xattrs=0
if command -v setfattr >/dev/null && setfattr -n user.k -v v "$S/d/f" 2>/dev/null; then xattrs=1; fi

ferry pool create tank "$T/tank"
ferry pool create bk "$T/bk"
ferry create -o source="$S" tank/a
ferry create tank/a/b
ferry create -o source="$S/d" tank/a/b/c
ferry snapshot tank/a@s1
ferry snapshot tank/a/b/c@c1

# ---- list -d / get -d --------------------------------------------------------
is "$(ferry list -H -o name -d 1)" "bk
tank
tank/a" "list -d 1 with no dataset: each pool root and its children"
is "$(ferry list -H -o name -d 0)" "bk
tank" "list -d 0 with no dataset: the pool roots"
is "$(ferry list -H -o name -t snapshot -d 1 tank/a)" "tank/a@s1" \
	"list -t snapshot -d 1: the dataset's snapshots, not its children's"
is "$(ferry list -H -o name -t snapshot -d 2 tank/a)" "tank/a@s1" \
	"list -t snapshot -d 2: tank/a/b/c@c1 is at depth 3 from tank/a"
is "$(ferry list -H -o name -t snapshot -d 3 tank/a)" "tank/a@s1
tank/a/b/c@c1" "and -d 3 reaches it"
is "$(ferry list -H -o name -t snapshot -d 3 tank)" "tank/a@s1" "from tank, c1 is at depth 4"
is "$(ferry list -H -o name -t snapshot -d 4 tank)" "tank/a@s1
tank/a/b/c@c1" "and -d 4 reaches it"
is "$(ferry list -H -o name -t snapshot -r tank/a/b)" "tank/a/b/c@c1" "list -r: every depth"
is "$(ferry get -H -o name -d 1 guid tank/a)" "tank/a
tank/a@s1
tank/a/b" "get -d 1: the dataset, its snapshots, its children"

# ---- send -v / -vP ---------------------------------------------------------
ferry send -nvP tank/a@s1 >"$T/est"
size=$(sed -n 's/^size\t//p' "$T/est")
run sh -c "'$FERRY' send -vP tank/a@s1 >'$T/stream'"
bytes=$(wc -c <"$T/stream")
is "$(sed -n 1,2p "$T/err")" "full	tank/a@s1	$bytes
size	$bytes" "send -vP: the estimate line and size line first, exact"
is "$size" "$bytes" "the same as send -nvP's"
like "$(sed -n '$p' "$T/err")" "^[0-9]{2}:[0-9]{2}:[0-9]{2}	$bytes	tank/a@s1$" \
	"then TIME<tab>BYTES<tab>SNAPSHOT lines"
run sh -c "'$FERRY' send -v tank/a@s1 >/dev/null"
like "$(sed -n 1p "$T/err")" "^full send of tank/a@s1 estimated size is [0-9.]+[BKMG]$" "send -v: the estimate"
like "$(sed -n 2p "$T/err")" "^total estimated size is [0-9.]+[BKMG]$" "the total"
is "$(sed -n 3p "$T/err")" "TIME        SENT   SNAPSHOT tank/a@s1" "zfs's progress header"
like "$(sed -n '$p' "$T/err")" "^[0-9]{2}:[0-9]{2}:[0-9]{2}   [ 0-9.]{4}[BKMG]   tank/a@s1$" \
	"padded progress lines"

# ---- missing names ---------------------------------------------------------
refused 1 "nosuch" "pool list of a missing pool fails" ferry pool list nosuch
is "$(cat "$T/out")" "" "and prints no header"
run ferry pool list nosuch tank
is "$rc:$(sed -n 2p "$T/out" | cut -f1 -d' ')" "1:tank" "a missing one among others: the others listed, rc 1"
refused 1 "nosuch" "pool list --json of a missing pool fails" ferry pool list --json nosuch
for c in "pool status nosuch" "list tank/nosuch" "get all tank/nosuch" "snapshot tank/nosuch@x" \
	"destroy tank/nosuch" "rollback tank/a@nosuch" "send tank/a@nosuch" "diff tank/a@nosuch" \
	"gc nosuch" "set compression=lz4 tank/nosuch" "inherit compression tank/nosuch" \
	"bookmark tank/a@nosuch tank/a#b" "hold t tank/a@nosuch" "release t tank/a@nosuch" \
	"restore tank/a@nosuch $T/r0" "prune --keep-last 1 tank/nosuch" "diff tank/a@s1 tank/nosuch"; do
	# shellcheck disable=SC2086
	refused 1 "nosuch" "'$c' fails with one line" ferry $c
done

# ---- restore --format tar --------------------------------------------------
ferry restore --format tar tank/a@s1 >"$T/a.tar"
mkdir "$TS/gnu"
tar -C "$TS/gnu" -xf "$T/a.tar" 2>"$T/tarerr"
is "$(cat "$T/tarerr")" "" "GNU tar extracts the archive of a UTF-8 tree with no warning"
diff -r "$S" "$TS/gnu" >/dev/null && ok "and the tree is the snapshot's" || not_ok "GNU tar's tree differs"
if [ "$xattrs" = 1 ]; then
	mkdir "$TS/gnux"
	tar --xattrs --xattrs-include='*' -C "$TS/gnux" -xf "$T/a.tar" 2>"$T/tarerr"
	is "$(getfattr --only-values -n user.k "$TS/gnux/d/f" 2>/dev/null):$(cat "$T/tarerr")" "v:" \
		"GNU tar --xattrs restores the xattr (SCHILY.xattr)"
fi
run grep -ac 'hdrcharset\|LIBARCHIVE\.' "$T/a.tar"
is "$(cat "$T/out")" 0 "no hdrcharset and no LIBARCHIVE.* keyword in it"
mkdir "$TS/py"
run python3 -W error -c 'import sys, tarfile
with tarfile.open(sys.argv[1]) as t: t.extractall(sys.argv[2])' "$T/a.tar" "$TS/py"
is "$rc:$(cat "$T/err")" "0:" "Python's tarfile extracts it with no warning"
diff -r "$S" "$TS/py" >/dev/null && ok "to the same tree" || not_ok "tarfile's tree differs"
if command -v bsdtar >/dev/null; then
	mkdir "$TS/bsd"
	run bsdtar -C "$TS/bsd" -xf "$T/a.tar"
	is "$rc:$(cat "$T/err")" "0:" "bsdtar extracts it with no warning"
	diff -r "$S" "$TS/bsd" >/dev/null && ok "to the same tree" || not_ok "bsdtar's tree differs"
else
	ok "# SKIP bsdtar not installed"
	ok "# SKIP bsdtar not installed"
fi
# a name that is not UTF-8 still goes as its bytes (hdrcharset=BINARY on
# that entry only)
mkdir "$T/bin"
printf x >"$T/bin/$(printf 'bad\377')"
echo y >"$T/bin/fine"
ferry snapshot --from "$T/bin" tank/a@bin
ferry restore --format pax tank/a@bin >"$T/b.tar"
run grep -ac 'hdrcharset' "$T/b.tar"
is "$(cat "$T/out")" 1 "a non-UTF-8 name: hdrcharset on its entry only"
mkdir "$TS/bin"
tar -C "$TS/bin" -xf "$T/b.tar" 2>/dev/null
diff -r "$T/bin" "$TS/bin" >/dev/null && ok "and its name survives byte for byte" || not_ok "name lost"

# ---- a failed restore leaves nothing ---------------------------------------
refused 1 "nosuch" "restore --file of a missing path fails" \
	ferry restore --file nosuch tank/a@s1 "$T/r1"
[ ! -e "$T/r1" ] && ok "and leaves no directory behind" || not_ok "left $(ls -la "$T/r1")"
refused 1 "nosuch" "with a present path too" ferry restore --file d --file nosuch tank/a@s1 "$T/r2"
[ ! -e "$T/r2" ] && ok "and leaves nothing of it behind" || not_ok "left $(ls -R "$T/r2")"
mkdir "$T/r3"
refused 1 "nosuch" "into an existing empty directory" ferry restore --file nosuch tank/a@s1 "$T/r3"
[ -d "$T/r3" ] && ok "which stays" || not_ok "removed a directory it did not make"

# ---- recv -v ------------------------------------------------------------------
ferry snapshot tank/a@s2
run sh -c "'$FERRY' send tank/a@s1 | '$FERRY' recv -v bk/x"
is "$(sed -n 1p "$T/out")" "receiving full stream of tank/a@s1 into bk/x@s1" "recv -v: the first line says what and where"
run sh -c "'$FERRY' send -i @s1 tank/a@s2 | '$FERRY' recv -n -v bk/x"
is "$(sed -n 1p "$T/out")" "would receive incremental stream of tank/a@s2 into bk/x@s2" "recv -n -v: an incremental"
ferry create bk/d
run sh -c "'$FERRY' send -R tank/a/b/c@c1 | '$FERRY' recv -v -d bk/d"
is "$(grep '^receiving' "$T/out")" "receiving full stream of tank/a/b/c@c1 into bk/d/a/b/c@c1" "recv -d names the landing snapshot"
ferry gc bk >/dev/null
ferry restore bk/x@s1 "$TS/bkx"
diff -r "$S" "$TS/bkx" >/dev/null && ok "the received snapshot restores to its tree" || not_ok "bk/x@s1 differs"

done_testing
