#!/bin/sh
# Restoring someone else's snapshot as root: --no-same-owner (no chown),
# --no-same-permissions (modes masked by the umask), --no-devices (device
# nodes skipped, warned, exit 3), --no-setuid (set-id bits cleared, no file
# capabilities) and --untrusted (all four), for trees, --file and, but for
# the umask, --format archives. Without them the restore stays exact.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (setuid-root files, device nodes, other owners)"
	exit 0
fi
umask 022
S="$T/src"
mkdir -p "$T/p" "$S/d"
echo suid >"$S/suid" && chmod 4755 "$S/suid"
echo sgid >"$S/sgid" && chmod 2755 "$S/sgid"
echo other >"$S/other" && chown 1234:5678 "$S/other" && chmod 0640 "$S/other"
echo ww >"$S/ww" && chmod 0777 "$S/ww"
echo f >"$S/d/f" && chown 1234:1234 "$S/d/f" && chmod 0666 "$S/d/f"
chown 4321:4321 "$S/d" && chmod 2775 "$S/d"
mknod -m 0666 "$S/null" c 1 3
mknod -m 0660 "$S/blk" b 7 0
mkfifo -m 0644 "$S/pipe"
ln -s suid "$S/ln" && chown -h 1234:1234 "$S/ln"
echo cap >"$S/cap" && chmod 0755 "$S/cap"
# a file capability (cap_net_raw, effective): as much a privilege as setuid
python3 -c '
import os, struct, sys
os.setxattr(sys.argv[1], "security.capability", struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0))
' "$S/cap"
touch -h -d @1700000000 "$S/ln"
touch -d @1700000000 "$S"/* "$S/d/f"
touch -d @1700000000 "$S/d" "$S"

ferry pool create tank "$T/p/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@s

# st DIR: "name type uid:gid mode" for every entry, sorted
st() {
	(cd "$1" && find . -mindepth 1 | sort | while read -r f; do
		stat -c '%n %F %u:%g %a' "$f"
	done) | sed 's|^\./||; s/character special file/chr/; s/block special file/blk/;
		s/regular file/file/; s/regular empty file/file/; s/symbolic link/link/; s/fifo/fifo/'
}
caps() { getfattr -h --absolute-names -n security.capability "$1" >/dev/null 2>&1 && echo yes || echo no; }

run ferry restore tank/fs@s "$T/r0"
is "$rc" 0 "without options: exit 0"
run "$FERRY_TOOLS/treecmp" "$S" "$T/r0"
is "$rc" 0 "without options the restore is exact (owners, set-id modes, devices, capabilities)"

run ferry restore --no-same-owner tank/fs@s "$T/r1"
is "$rc" 0 "--no-same-owner: exit 0"
is "$(st "$T/r1")" "blk blk 0:0 660
cap file 0:0 755
d directory 0:0 2775
d/f file 0:0 666
ln link 0:0 777
null chr 0:0 666
other file 0:0 640
pipe fifo 0:0 644
sgid file 0:0 2755
suid file 0:0 4755
ww file 0:0 777" "--no-same-owner: everything is root's, modes as they were"

run ferry restore --no-same-permissions tank/fs@s "$T/r2"
is "$rc" 0 "--no-same-permissions: exit 0"
is "$(st "$T/r2")" "blk blk 0:0 640
cap file 0:0 755
d directory 4321:4321 2755
d/f file 1234:1234 644
ln link 1234:1234 777
null chr 0:0 644
other file 1234:5678 640
pipe fifo 0:0 644
sgid file 0:0 2755
suid file 0:0 4755
ww file 0:0 755" "--no-same-permissions: modes masked by the umask (022), owners kept"

run ferry restore --no-devices tank/fs@s "$T/r3"
is "$rc" 3 "--no-devices: exit 3"
is "$(grep -c 'device node not restored' "$T/err")" 2 "--no-devices: one warning per device node"
like "$(cat "$T/err")" "warning: (null|blk): device node not restored" "naming it"
is "$(st "$T/r3" | grep -c 'chr\|blk')" 0 "--no-devices: no device node made"
is "$(st "$T/r3" | grep pipe)" "pipe fifo 0:0 644" "--no-devices: a fifo is not a device"
is "$(st "$T/r3" | grep suid)" "suid file 0:0 4755" "--no-devices: the rest as it was"

run ferry restore --no-setuid tank/fs@s "$T/r4"
is "$rc" 0 "--no-setuid: exit 0"
is "$(st "$T/r4")" "blk blk 0:0 660
cap file 0:0 755
d directory 4321:4321 775
d/f file 1234:1234 666
ln link 1234:1234 777
null chr 0:0 666
other file 1234:5678 640
pipe fifo 0:0 644
sgid file 0:0 755
suid file 0:0 755
ww file 0:0 777" "--no-setuid: setuid and setgid cleared, owners kept"
is "$(caps "$T/r0/cap") $(caps "$T/r4/cap")" "yes no" "--no-setuid: the file capability is not restored"

run ferry restore --untrusted tank/fs@s "$T/r5"
is "$rc" 3 "--untrusted: exit 3 (devices skipped)"
is "$(grep -c 'device node not restored' "$T/err")" 2 "--untrusted: warned"
is "$(st "$T/r5")" "cap file 0:0 755
d directory 0:0 755
d/f file 0:0 644
ln link 0:0 777
other file 0:0 640
pipe fifo 0:0 644
sgid file 0:0 755
suid file 0:0 755
ww file 0:0 755" "--untrusted: root's, umask, no set-id bits, no devices"
is "$(caps "$T/r5/cap")" no "--untrusted: no file capability"
is "$(cat "$T/r5/d/f")" f "--untrusted: contents restored"

run ferry restore --untrusted --file suid --file null tank/fs@s "$T/r6"
is "$rc" 3 "--untrusted --file: exit 3"
is "$(st "$T/r6")" "suid file 0:0 755" "--untrusted --file: the file shaped the same way, the device skipped"

# archives: owners, set-id bits and devices as a tree restore makes them;
# the mode bits the umask would clear stay for the extractor's umask
tarls() {
	python3 -c '
import sys, tarfile
for m in sorted(tarfile.open(sys.argv[1]).getmembers(), key=lambda m: m.name):
    print(m.name, m.type.decode() if m.type else "0", "%d:%d" % (m.uid, m.gid), "%o" % m.mode,
          "cap" if "SCHILY.xattr.security.capability" in m.pax_headers or
                   "LIBARCHIVE.xattr.security.capability" in m.pax_headers else "-")
' "$1"
}
ferry restore --format tar tank/fs@s >"$T/plain.tar"
is "$?" 0 "--format tar without options"
is "$(tarls "$T/plain.tar")" "blk 4 0:0 660 -
cap 0 0:0 755 cap
d 5 4321:4321 2775 -
d/f 0 1234:1234 666 -
ln 2 1234:1234 777 -
null 3 0:0 666 -
other 0 1234:5678 640 -
pipe 6 0:0 644 -
sgid 0 0:0 2755 -
suid 0 0:0 4755 -
ww 0 0:0 777 -" "an archive holds owners, set-id modes, devices and capabilities as they are"
ferry restore --untrusted --format tar tank/fs@s >"$T/u.tar" 2>"$T/err"
is "$?" 3 "--untrusted --format tar: exit 3"
is "$(grep -c 'device node not restored' "$T/err")" 2 "--untrusted --format tar: devices warned"
is "$(tarls "$T/u.tar")" "cap 0 0:0 755 -
d 5 0:0 775 -
d/f 0 0:0 666 -
ln 2 0:0 777 -
other 0 0:0 640 -
pipe 6 0:0 644 -
sgid 0 0:0 755 -
suid 0 0:0 755 -
ww 0 0:0 777 -" "--untrusted --format tar: the restoring user's, no set-id bits, no devices, no capability"
ferry restore --no-same-owner --format pax tank/fs@s >"$T/o.tar" 2>"$T/err"
is "$?" 0 "--no-same-owner --format pax: exit 0"
is "$(tarls "$T/o.tar" | grep -c ' 0:0 ')" 11 "--no-same-owner --format pax: every entry root's"

# the end of every restore test: gc, then every snapshot restores exactly
run ferry gc tank
is "$rc" 0 "gc"
rm -rf "$T/rc"
run ferry restore tank/fs@s "$T/rc"
is "$rc" 0 "the snapshot restores after gc"
run "$FERRY_TOOLS/treecmp" "$S" "$T/rc"
is "$rc" 0 "identical to its source"
done_testing
