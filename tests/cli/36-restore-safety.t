#!/bin/sh
# Restore never follows a symlink out of the target: with --force over a
# directory an attacker prepared (symlinks where the snapshot has
# directories or files), nothing is written outside.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/outside"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir -p "$S/dir/sub"
echo secret-data >"$S/dir/sub/file"
echo top >"$S/file"
ln -s /nonexistent "$S/link"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@s

# the target: 'dir' is a symlink to outside, 'file' a symlink to an outside file
mkdir "$T/target"
ln -s "$T/outside" "$T/target/dir"
echo original >"$T/outside/victim"
ln -s "$T/outside/victim" "$T/target/file"
ln -s "$T/outside" "$T/target/link"
run ferry restore --force tank/fs@s "$T/target"
is "$rc" 0 "restore --force over planted symlinks"
[ -d "$T/target/dir" ] && [ ! -L "$T/target/dir" ] && ok "a planted symlink is replaced by the directory" ||
	not_ok "target/dir is still a symlink"
is "$(cat "$T/outside/victim")" original "a symlinked file outside is not written through"
[ ! -e "$T/outside/sub" ] && ok "nothing created in the outside directory" || not_ok "wrote outside"
is "$(readlink "$T/target/link")" /nonexistent "the snapshot's symlink replaces the planted one"
is "$(cat "$T/target/dir/sub/file")" secret-data "content lands inside the target"

# a directory in the way of a file is refused, not removed
mkdir -p "$T/t2/file/keep"
run ferry restore --force tank/fs@s "$T/t2"
is "$rc" 1 "a directory where the snapshot has a file is refused"
[ -d "$T/t2/file/keep" ] && ok "and left alone" || not_ok "directory removed"

# the target itself may be reached through a symlink the user names
ln -s "$T/t3real" "$T/t3"
mkdir "$T/t3real"
run ferry restore tank/fs@s "$T/t3"
is "$rc" 0 "restore into a target named through a symlink"
is "$(cat "$T/t3real/file")" top "restored into the symlink's directory"

# a flipped bit in a pack is caught by the hash check, not restored
head -c 300000 /dev/urandom >"$S/rand"
ferry snapshot tank/fs@r
pack=$(ls -S "$T/p/tank/packs" | head -1)
printf '\377' | dd of="$T/p/tank/packs/$pack" bs=1 seek=200000 conv=notrunc status=none
run ferry restore tank/fs@r "$T/t4"
is "$rc" 1 "restore of a corrupted block fails"
like "$(cat "$T/err")" \
	"^ferry: cannot restore 'tank/fs@r': restoring 'rand': block [0-9a-f]{16} in pack '[0-9a-f]+\\.pack' at offset [0-9]+ is damaged: its content does not match its hash$" \
	"and says the data is corrupt: the block, its pack and offset, the file"
done_testing
