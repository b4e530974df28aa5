#!/bin/sh
# Volumes from images (sparse-aware, restored to an image) and archives
# (tar.gz, tar.xz, zip, cpio) through libarchive; hostile member names.
# After gc the pool equals a control that captured the same images (from
# files where tank read a block device) and archives afresh.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"

# ---- volumes ---------------------------------------------------------------------
truncate -s 64M "$T/disk.img"
head -c 1000000 /dev/urandom | dd of="$T/disk.img" bs=4096 seek=100 conv=notrunc status=none
seq 1 100000 | dd of="$T/disk.img" bs=4096 seek=9000 conv=notrunc status=none
ferry create -V 64M -b 8K tank/vol
refused 1 "needs --from" "a volume snapshot needs --from" ferry snapshot tank/vol@none
run ferry snapshot -v --from "$T/disk.img" tank/vol@one
is "$rc" 0 "snapshot a volume from a sparse image"
cp --sparse=always "$T/disk.img" "$T/disk-one.img"
like "$(cat "$T/out")" "blocks [0-9]+," "volume capture counts its blocks"
blocks=$(sed -n 's/.*, blocks \([0-9]*\),.*/\1/p' "$T/out")
[ "$blocks" -lt 200 ] && ok "holes are not stored ($blocks blocks of 8K for ~1.6 MB of data)" ||
	not_ok "$blocks blocks stored"
run ferry restore tank/vol@one "$T/restored.img"
is "$rc" 0 "restore a volume to an image file"
cmp -s "$T/disk.img" "$T/restored.img" && ok "restored image is identical" || not_ok "image differs"
alloc=$(du -k "$T/restored.img" | cut -f1)
[ "$alloc" -lt 4096 ] && ok "restored image is sparse (${alloc}K)" || not_ok "image allocates ${alloc}K"
refused 1 "exists" "restore does not overwrite an image without --force" \
	ferry restore tank/vol@one "$T/restored.img"
printf 'CHANGED' | dd of="$T/disk.img" bs=1 seek=5000000 conv=notrunc status=none
run ferry snapshot -v --from "$T/disk.img" tank/vol@two
cp --sparse=always "$T/disk.img" "$T/disk-two.img"
like "$rc:$(cat "$T/out")" "^0:.*blocks written 1," "a changed volume block is the only one written"
run ferry restore --force tank/vol@two "$T/restored.img"
is "$rc" 0 "restore --force onto the image"
cmp -s "$T/disk.img" "$T/restored.img" && ok "restore --force overwrites the image" || not_ok "image differs"

# ---- volumes on block devices (loop devices: root only) ----------------------------
L1= L2= L3=
trap 'for l in $L1 $L2 $L3; do losetup -d "$l"; done; lib_cleanup' EXIT
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null 2>&1 &&
	cp --sparse=always "$T/disk.img" "$T/src.img" &&
	L1=$(losetup -f --show "$T/src.img" 2>/dev/null) && truncate -s 64M "$T/dst.img" &&
	L2=$(losetup -f --show "$T/dst.img" 2>/dev/null) && truncate -s 32M "$T/small.img" &&
	L3=$(losetup -f --show "$T/small.img" 2>/dev/null); then
	ferry create -V 64M -b 8K tank/bvol
	run ferry snapshot -v --from "$L1" tank/bvol@one
	is "$rc" 0 "snapshot a volume from a block device"
	blocks=$(sed -n 's/.*, blocks \([0-9]*\),.*/\1/p' "$T/out")
	[ "${blocks:-999}" -lt 200 ] && ok "a block device's zero records are not stored ($blocks blocks)" ||
		not_ok "$blocks blocks stored"
	# the device to restore onto holds other data, which must all go
	dd if=/dev/urandom of="$L2" bs=1M count=64 conv=fsync status=none
	cp "$T/dst.img" "$T/dst.before"
	refused 1 "is a block device.*--force" "restore does not overwrite a block device without --force" \
		ferry restore tank/bvol@one "$L2"
	cmp -s "$T/dst.img" "$T/dst.before" && ok "the device is untouched" || not_ok "the device changed"
	refused 1 "holds 33554432 bytes; the volume needs 67108864" \
		"a device smaller than the volume is refused" ferry restore --force tank/bvol@one "$L3"
	cmp -s -n 33554432 "$L3" /dev/zero && ok "the small device is untouched" ||
		not_ok "the small device was written"
	run ferry restore --force tank/bvol@one "$L2"
	is "$rc" 0 "restore --force writes a volume onto a block device"
	cmp -s "$L1" "$L2" && ok "the device holds the volume exactly, holes written as zeros" ||
		not_ok "the device differs from the source"
	run ferry restore tank/bvol@one "$T/bvol.img"
	is "$rc" 0 "restore the device's snapshot to an image"
	cmp -s "$T/src.img" "$T/bvol.img" && ok "the device's snapshot restores to an identical image" ||
		not_ok "image differs"
else
	ok "# SKIP block devices need root and loop devices"
fi

# ---- archives ----------------------------------------------------------------------
S="$T/src"
mkdir -p "$S/d/e"
seq 1 30000 >"$S/d/numbers"
echo hi >"$S/d/e/hi"
ln -s numbers "$S/d/link"
ln "$S/d/numbers" "$S/hard"
head -c 200000 /dev/urandom >"$S/rand"
touch -d "2005-05-05 05:05:05" "$S/d/e/hi"
for fmt in tar.gz tar.xz; do
	case $fmt in
	tar.gz) tar --format=posix -czf "$T/x.$fmt" -C "$S" . ;;
	tar.xz) tar --format=posix -cJf "$T/x.$fmt" -C "$S" . ;;
	esac
	ds=tank/arch-$(echo "$fmt" | tr . -)
	ferry create "$ds"
	run ferry snapshot --from "$T/x.$fmt" "$ds@a"
	is "$rc" 0 "snapshot --from x.$fmt"
	run ferry restore "$ds@a" "$T/from-$fmt"
	is "$rc" 0 "restore x.$fmt's snapshot"
	run "$TREECMP" --no-root --no-alloc "$S" "$T/from-$fmt"
	is "$rc" 0 "x.$fmt round trip identical"
	[ "$rc" = 0 ] || diag "$(cat "$T/out")"
done
(cd "$S" && zip -qry "$T/x.zip" .)
ferry create tank/zip
run ferry snapshot --from "$T/x.zip" tank/zip@a
is "$rc" 0 "snapshot --from x.zip"
run ferry restore tank/zip@a "$T/from-zip"
is "$rc" 0 "restore x.zip's snapshot"
cmp -s "$S/d/numbers" "$T/from-zip/d/numbers" && cmp -s "$S/rand" "$T/from-zip/rand" &&
	ok "zip content restored" || not_ok "zip content"
is "$(readlink "$T/from-zip/d/link")" numbers "zip symlink restored"
# a newc cpio archive, written here so the test needs no cpio binary
python3 - "$S" "$T/x.cpio" <<'EOF'
import os, sys
root, out = sys.argv[1], sys.argv[2]
def hdr(name, st, size):
    f = [st.st_ino & 0xffffffff, st.st_mode, st.st_uid, st.st_gid, st.st_nlink,
         int(st.st_mtime), size, 0, 0, 0, 0, len(name) + 1, 0]
    h = b"070701" + b"".join(b"%08X" % v for v in f) + name + b"\0"
    return h + b"\0" * (-len(h) % 4)
with open(out, "wb") as o:
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for n in [d] + [os.path.join(d, f) for f in sorted(files)]:
            st = os.lstat(n)
            rel = b"." + os.fsencode(n[len(root):])
            if os.path.islink(n):
                data = os.fsencode(os.readlink(n))
            elif os.path.isfile(n):
                data = open(n, "rb").read()
            else:
                data = b""
            o.write(hdr(rel, st, len(data)) + data + b"\0" * (-len(data) % 4))
    o.write(hdr(b"TRAILER!!!", os.lstat(root), 0))
EOF
ferry create tank/cpio
run ferry snapshot --from "$T/x.cpio" tank/cpio@a
is "$rc" 0 "snapshot --from x.cpio"
run ferry restore tank/cpio@a "$T/from-cpio"
is "$rc" 0 "restore x.cpio's snapshot"
# cpio keeps whole seconds only: the tree must equal the source with its
# times cut to the second, in everything else treecmp compares
cp -a "$S" "$TS/src-sec"
python3 - "$TS/src-sec" <<'EOF'
import os, sys
for d, dirs, files in os.walk(sys.argv[1]):
    for n in [d] + [os.path.join(d, f) for f in files + dirs]:
        st = os.lstat(n)
        os.utime(n, ns=(st.st_atime_ns, st.st_mtime_ns // 10**9 * 10**9), follow_symlinks=False)
EOF
run "$TREECMP" --no-root --no-alloc "$TS/src-sec" "$T/from-cpio"
is "$rc:$(cat "$T/out")" "0:" "cpio round trip identical but for sub-second times"
cmp -s "$S/hard" "$T/from-cpio/hard" && ok "cpio content restored" || not_ok "cpio content"

# hostile member names: ../ and absolute paths are not written outside
python3 - "$T/evil.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name in ["../escape", "ok/../../escape2", "/abs/file", "good"]:
        data = b"x\n"
        i = tarfile.TarInfo(name); i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    i = tarfile.TarInfo("lnk"); i.type = tarfile.SYMTYPE; i.linkname = "/etc"
    t.addfile(i)
    i = tarfile.TarInfo("lnk/passwd-x"); i.size = 2
    t.addfile(i, io.BytesIO(b"x\n"))
EOF
ferry create tank/evil
run ferry snapshot --from "$T/evil.tar" tank/evil@a
is "$rc" 3 "an archive with unsafe names is captured partially (exit 3)"
like "$(cat "$T/err")" "unsafe" "unsafe member names warned about"
mkdir "$T/evil-out"
run ferry restore tank/evil@a "$T/evil-out/r"
is "$rc" 0 "restore of the partial archive snapshot"
[ ! -e "$T/evil-out/escape" ] && [ ! -e "$T/escape" ] && [ ! -e "$T/escape2" ] && [ ! -e /etc/passwd-x ] &&
	ok "nothing written outside the target" || not_ok "something escaped"
is "$(cat "$T/evil-out/r/abs/file")" x "an absolute name is made relative"
is "$(readlink "$T/evil-out/r/lnk")" /etc "the symlink is restored as a symlink"

# The control: each image captured once from a copy of it (bvol from the
# image file behind the loop device tank read), each archive captured once
# more; tank's volumes are compared with those images themselves.
ferry pool create ctl "$T/p/ctl"
ferry create -V 64M -b 8K ctl/vol
ferry snapshot --from "$T/disk-one.img" ctl/vol@one
ferry snapshot --from "$T/disk-two.img" ctl/vol@two
set -- -e "/vol@one=$T/disk-one.img" -e "/vol@two=$T/disk-two.img"
if [ -n "$L1" ]; then
	ferry create -V 64M -b 8K ctl/bvol
	ferry snapshot --from "$T/src.img" ctl/bvol@one
	set -- "$@" -e "/bvol@one=$T/src.img"
fi
# (evil.tar is captured partially again: its warnings are tank's)
for a in x.tar.gz:arch-tar-gz x.tar.xz:arch-tar-xz x.zip:zip x.cpio:cpio evil.tar:evil; do
	ferry create "ctl/${a#*:}"
	ferry snapshot --from "$T/${a%%:*}" "ctl/${a#*:}@a" 2>/dev/null
done
after_check "$@" tank ctl "volume and archive captures"
done_testing
