#!/bin/sh
# Files that change while they are read are warned about by path, and the
# snapshot holds a consistent version of what was read; the next capture
# reads them again. After gc, the pool equals a control that captured what
# each snapshot holds with no writer running.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" -o compression=gzip-9 tank/fs
head -c 60000000 /dev/urandom >"$T/src/growing"
echo still >"$T/src/still"
# append to the file for as long as the snapshot runs
( while [ ! -e "$T/stop" ]; do echo appended >>"$T/src/growing"; done ) &
writer=$!
run ferry snapshot tank/fs@a
touch "$T/stop"
wait "$writer"
is "$rc" 0 "a changing file does not fail the snapshot"
like "$(cat "$T/err")" "growing: file changed as it was read" "the changing file is warned about by path"
run ferry restore tank/fs@a "$T/r"
is "$rc" 0 "restore @a"
size=$(stat -c %s "$T/r/growing")
[ "$size" -ge 60000000 ] && ok "the snapshot holds what was read ($size bytes)" || not_ok "size $size"
cmp -s -n "$size" "$T/r/growing" "$T/src/growing" && ok "which is a consistent prefix of the file" ||
	not_ok "restored content is not a prefix"
is "$(cat "$T/r/still")" still "the other files are captured"
run ferry snapshot -v tank/fs@b
like "$rc:$(cat "$T/out")" "^0:.*files read 1, files reused 1," "the next capture reads the changed file again"
run ferry restore tank/fs@b "$T/r2"
is "$rc" 0 "restore @b"
cmp -s "$T/r2/growing" "$T/src/growing" && ok "and then holds it whole" || not_ok "second capture differs"

# The control: @a captured from @a's restored tree (the consistent prefix
# checked above, with the attributes @a recorded), @b from the source, now
# still: each read whole once, with nothing changing under it.
ferry pool create ctl "$T/p/ctl"
ferry create -o compression=gzip-9 ctl/fs
ferry snapshot --from "$T/r" ctl/fs@a
ferry snapshot --from "$T/src" ctl/fs@b
after_check -e "/fs@a=$T/r" -e "/fs@b=$T/src" tank ctl "captures of a changing file"
done_testing
