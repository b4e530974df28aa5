#!/bin/sh
# Capture stays on one filesystem (a mount point is recorded as an empty
# directory, as tar --one-file-system does) unless --cross-filesystems.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/mnt"
echo top > "$T/src/top"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs ferry-test "$T/src/mnt" 2>/dev/null; then
	echo "1..0 # SKIP needs root and a tmpfs mount"
	exit 0
fi
trap 'umount "$T/src/mnt" 2>/dev/null; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
echo inner > "$T/src/mnt/inner"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" tank/fs

run ferry snapshot tank/fs@one
is "$rc" 0 "snapshot of a tree with a mount point"
ferry restore tank/fs@one "$T/r1"
[ -d "$T/r1/mnt" ] && [ -z "$(ls -A "$T/r1/mnt")" ] && ok "the mount point is an empty directory" ||
	not_ok "the mount point is an empty directory"
is "$(cat "$T/r1/top")" "top" "the rest of the tree is there"

run ferry snapshot --cross-filesystems tank/fs@two
is "$rc" 0 "snapshot --cross-filesystems"
ferry restore tank/fs@two "$T/r2"
is "$(cat "$T/r2/mnt/inner" 2>/dev/null)" "inner" "--cross-filesystems descends into the mount"
umount "$T/src/mnt"
done_testing
