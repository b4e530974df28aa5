#!/bin/sh
# The good stream vectors (versions 1 and 2) are not only dumped (50-dump.t): each one is
# received as a user would (an incremental after its base, a package with
# -d, the resumed stream after the part its token says was received) and
# every snapshot it brings restores to exactly the tree (or the volume's
# image) that tests/vectors/good/NAME.tree lists: each entry's path, type,
# mode, size, mtime and BLAKE2b-256, written by mkvectors from the content
# it encoded.
. "$(dirname "$0")/lib.sh"
V=$FERRY_SRC/tests/vectors/good
mkdir -p "$T/p"
ferry pool create bk "$T/p/bk"

# listing ROOT: the restored tree ROOT as .tree lists it (without the
# snapshot column), or, for a volume's image file, its one "v" line
listing() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys
root = sys.argv[1]
def h(path):
    d = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            d.update(chunk)
    return d.hexdigest()
if os.path.isfile(root):
    print("-\tv\t-\t%d\t-\t%s" % (os.path.getsize(root), h(root)))
    sys.exit(0)
rows = []
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        p = os.path.join(d, n)
        st = os.lstat(p)
        rel = os.path.relpath(p, root)
        if stat.S_ISDIR(st.st_mode):
            rows.append((rel, "d", st.st_mode & 0o7777, 0, st.st_mtime_ns // 10**9, "-"))
        elif stat.S_ISREG(st.st_mode):
            rows.append((rel, "f", st.st_mode & 0o7777, st.st_size, st.st_mtime_ns // 10**9, h(p)))
        else:
            rows.append((rel, "?", st.st_mode & 0o7777, st.st_size, st.st_mtime_ns // 10**9, "-"))
for r in sorted(rows):
    print("%s\t%s\t%o\t%d\t%d\t%s" % r)
EOF
}
# check NAME TARGET [TREE]: every snapshot TREE.tree (default NAME.tree)
# lists, TARGET + its name, restores to the entries listed for it; a
# version 2 vector carries the same records as the version 1 vector of its
# name (their .dump files differ in the version and the chain only), so
# it is checked against that one's .tree
check() {
	_v=$1 _t=$2 _tree=$V/${3:-$1}.tree
	if [ ! -s "$_tree" ]; then
		not_ok "$_v: $_tree lists the vector's snapshots"; return
	fi
	for _s in $(cut -f1 "$_tree" | uniq); do
		rm -rf "$TS/r"
		run ferry restore "$_t$_s" "$TS/r"
		if [ "$rc" != 0 ]; then
			not_ok "$_v: $_t$_s restores"; diag "$(cat "$T/err")"; continue
		fi
		is "$(listing "$TS/r")" "$(awk -F'\t' -v s="$_s" '$1 == s' "$_tree" | cut -f2-)" \
			"$_v: $_t$_s restores to what the vector holds"
	done
}
# recv_ok DESC ARGS... < STREAM: a receive that must succeed silently
recv_ok() {
	_d=$1; shift
	run "$FERRY" recv "$@"
	is "$rc:$(cat "$T/err")" "0:" "$_d"
}

for v in full compressed volume-props optional-feature skippable hint v2-full v2-compressed; do
	recv_ok "$v: received" "bk/$v" <"$V/$v.stream"
	check "$v" "bk/$v" "${v#v2-}"
done

ferry recv bk/inc <"$V/full.stream"
recv_ok "incremental: received onto full's @mon" bk/inc <"$V/incremental.stream"
check incremental bk/inc
recv_ok "empty-incremental: received onto incremental's @tue" bk/inc <"$V/empty-incremental.stream"
check empty-incremental bk/inc
check full bk/inc

# version 2 (the chain takes WRITE and NODE data by CRC-32C): an
# incremental onto its full, and a package
ferry recv bk/inc2 <"$V/v2-full.stream"
recv_ok "v2-incremental: received onto v2-full's @mon" bk/inc2 <"$V/v2-incremental.stream"
check v2-incremental bk/inc2 incremental
ferry create bk/pkg2
recv_ok "v2-package: received with -d" -d bk/pkg2 <"$V/v2-package.stream"
check v2-package bk/pkg2 package

ferry create bk/pkg
recv_ok "package: received with -d" -d bk/pkg <"$V/package.stream"
check package bk/pkg
ferry create bk/pkgh
recv_ok "package-hint: received with -d" -d bk/pkgh <"$V/package-hint.stream"
check package-hint bk/pkgh
is "$(ferry list -H -t snapshot -o name -r bk/pkg | tr '\n' ' ')" \
	"bk/pkg/home@mon bk/pkg/home@tue bk/pkg/home/sub@tue " "package: exactly the snapshots it carries"

# resumed: the base is what an interrupted receive kept; its token is
# the vector's, and the resumed stream completes it
run "$FERRY" recv -s bk/res <"$V/resumed.base"
like "$rc:$(cat "$T/err")" "^1:ferry: cannot receive into 'bk/res': stream truncated after record 3 \(NODE\): END missing; the 3 records received are kept" \
	"resumed: the interrupted part fails, keeping a partial state"
is "$(ferry get -H -o value receive_resume_token bk/res)" "$(cat "$V/resumed.token")" \
	"resumed: its resume token is good/resumed.token"
recv_ok "resumed: the resumed stream completes it" -s bk/res <"$V/resumed.stream"
check resumed bk/res

# after gc (which must keep all of it), every snapshot still restores so
run ferry gc bk
is "$rc:$(cat "$T/err")" "0:" "gc after the receives"
for v in full compressed volume-props optional-feature skippable hint v2-full v2-compressed; do
	check "$v" "bk/$v" "${v#v2-}"
done
check v2-incremental bk/inc2 incremental
check v2-package bk/pkg2 package
check empty-incremental bk/inc
check package bk/pkg
check package-hint bk/pkgh
check resumed bk/res

# the volume is a volume of the image's size
is "$(ferry list -H -p -o type,volsize bk/volume-props)" "$(printf 'volume\t1048576')" \
	"volume-props: a volume of volsize 1M"
done_testing
