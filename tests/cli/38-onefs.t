#!/bin/sh
# Capture stays on one filesystem (a mount point is recorded as an empty
# directory, as tar --one-file-system does) unless --cross-filesystems.
# After gc, the pool equals a control that captured copies of both trees.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/mnt"
echo top > "$T/src/top"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs ferry-test "$T/src/mnt" 2>/dev/null; then
	echo "1..0 # SKIP needs root and a tmpfs mount"
	exit 0
fi
trap 'umount "$T/src/mnt" 2>/dev/null; lib_cleanup' EXIT
echo inner > "$T/src/mnt/inner"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" tank/fs

run ferry snapshot tank/fs@one
is "$rc" 0 "snapshot of a tree with a mount point"
cp -ax "$T/src" "$T/copy-one"   # the mount point as an empty directory
ferry restore tank/fs@one "$T/r1"
[ -d "$T/r1/mnt" ] && [ -z "$(ls -A "$T/r1/mnt")" ] && ok "the mount point is an empty directory" ||
	not_ok "the mount point is an empty directory"
is "$(cat "$T/r1/top")" "top" "the rest of the tree is there"

run ferry snapshot --cross-filesystems tank/fs@two
is "$rc" 0 "snapshot --cross-filesystems"
cp -a "$T/src" "$T/copy-two"
ferry restore tank/fs@two "$T/r2"
is "$(cat "$T/r2/mnt/inner" 2>/dev/null)" "inner" "--cross-filesystems descends into the mount"
umount "$T/src/mnt"

# The control: the two trees as copies on one filesystem, captured whole
ferry pool create ctl "$T/p/ctl"
ferry create ctl/fs
ferry snapshot --from "$T/copy-one" ctl/fs@one
ferry snapshot --from "$T/copy-two" ctl/fs@two
after_check -e "/fs@one=$T/copy-one" -e "/fs@two=$T/copy-two" tank ctl "captures across a mount point"
done_testing
