#!/bin/sh
# restore --force of a volume onto an existing image file writes a
# temporary file beside it and renames it over the image only when it is
# whole and durable: a restore that fails midway (here: a damaged block
# in the middle of the volume), or is killed, leaves the old image byte
# for byte as it was and no temporary file behind (the code before issue
# 10 opened the image with O_TRUNC and wrote in place). A symlink to the
# image stays a link, to the new image. A good restore then replaces it,
# and every snapshot of the undamaged pool restores as captured.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/img"
# 8 MiB of random data: 512 blocks of 16K, compressed by nothing
truncate -s 8M "$T/new.img"
head -c 8388608 /dev/urandom | dd of="$T/new.img" conv=notrunc status=none
for p in tank good; do
	ferry pool create -o compression=off $p "$T/p/$p"
	ferry create -V 8M $p/vol
	ferry snapshot --from "$T/new.img" $p/vol@a
done
# damage one block in the middle of tank's pack
for pack in "$T/p/tank/packs/"*; do
	size=$(stat -c %s "$pack")
	[ "$size" -gt 4000000 ] || continue
	printf '\377\377\377\377' | dd of="$pack" bs=1 seek=$((size / 2)) conv=notrunc status=none
done
# the old image: other content, other size, own mode
head -c 3000000 /dev/urandom >"$T/img/disk.img"
chmod 640 "$T/img/disk.img"
cp "$T/img/disk.img" "$T/old.img"
ino=$(stat -c %i "$T/img/disk.img")

run ferry restore --force tank/vol@a "$T/img/disk.img"
is "$rc" 1 "a restore from a damaged pool fails"
like "$(cat "$T/err")" "is damaged: its content does not match its hash" "and says the data is corrupt"
cmp -s "$T/old.img" "$T/img/disk.img" && ok "the old image is intact" || not_ok "the old image was changed"
is "$(stat -c %a:%i "$T/img/disk.img")" "640:$ino" "the very same file, its mode unchanged"
is "$(ls -A "$T/img")" "disk.img" "no temporary file is left behind"

# killed at spread points: the image is always the old one or the new
# one, whole (a kill -9 leaves its temporary file, which is removed here)
bad=0
for delay in 0.01 0.03 0.06 0.1; do
	"$FERRY" restore --force good/vol@a "$T/img/disk.img" 2>/dev/null &
	pid=$!
	sleep $delay
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	cmp -s "$T/old.img" "$T/img/disk.img" || cmp -s "$T/new.img" "$T/img/disk.img" || bad=1
	cp "$T/old.img" "$T/img/disk.img"
done
is "$bad" 0 "a restore killed midway leaves the old image or the new, whole"
rm -f "$T/img/disk.img".ferry-*

ln -s disk.img "$T/img/link.img"
run ferry restore --force good/vol@a "$T/img/link.img"
is "$rc" 0 "restore --force through a symlink to the image"
cmp -s "$T/new.img" "$T/img/disk.img" && ok "the image it names is the volume" || not_ok "image differs"
[ -L "$T/img/link.img" ] && ok "the link is still a link" || not_ok "the link was replaced"
is "$(ls -A "$T/img" | tr '\n' ' ')" "disk.img link.img " "no temporary file is left behind"
run ferry restore good/vol@a "$T/img/fresh.img"
is "$rc" 0 "restore to a new image file"
cmp -s "$T/new.img" "$T/img/fresh.img" && ok "it is the volume" || not_ok "image differs"
ferry gc good >/dev/null
run ferry restore --force good/vol@a "$T/img/fresh.img"
cmp -s "$T/new.img" "$T/img/fresh.img" && is "$rc" 0 "after gc the snapshot restores as captured" ||
	not_ok "after gc the restored image differs"
done_testing
