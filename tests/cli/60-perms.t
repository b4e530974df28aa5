#!/bin/sh
# Pools are private, whatever the umask: every directory 0700 and every
# file 0600 under a pool (catalogue, -wal, -shm, packs, lock files, gc's
# rewritten packs) and under FERRY_HOME, at umask 022 and 000; a pool
# imported while open to other users gets a one-line warning.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
# modes DIR...: every entry that is not private, as "MODE PATH"
modes() { find "$@" \( -type d ! -perm 0700 \) -printf '%m %p\n' -o \( ! -type d ! -perm 0600 \) -printf '%m %p\n'; }

for u in 022 000; do
	export FERRY_HOME="$T/home-$u"
	S="$T/src-$u"
	mkdir -p "$S"
	chmod 755 "$T"
	(
	umask "$u"
	head -c 4000000 /dev/urandom >"$S/big"
	head -c 1000000 /dev/urandom >"$S/keep"
	ferry pool create "t$u" "$T/p/t$u"
	ferry create -o source="$S" "t$u/fs"
	ferry snapshot "t$u/fs@1"
	rm "$S/big"
	ferry snapshot "t$u/fs@2"
	ferry pool create "b$u" "$T/p/b$u"
	ferry send "t$u/fs@1" | ferry recv "b$u/fs"
	ferry send -i @1 "t$u/fs@2" | ferry recv "b$u/fs"
	ferry destroy "t$u/fs@1"
	ferry gc -v "t$u" >"$T/gc-$u"
	# the catalogue's -wal and -shm exist while a command has it open
	mkfifo "$T/fifo-$u"
	"$FERRY" recv "b$u/slow" <"$T/fifo-$u" 2>/dev/null &
	pid=$!
	exec 3>"$T/fifo-$u"
	ferry send "t$u/fs@2" 2>/dev/null | head -c 300000 >&3
	i=0
	while [ "$i" -lt 50 ] && ! [ -e "$T/p/b$u/catalog.db-shm" ]; do sleep 0.1; i=$((i + 1)); done
	ls -a "$T/p/b$u" >"$T/live-$u"
	modes "$T/p/b$u" >"$T/live-modes-$u"
	exec 3>&-
	wait "$pid"
	)
	like "$(cat "$T/gc-$u")" "1 rewritten" "umask $u: gc rewrote a pack"
	like "$(cat "$T/live-$u")" "catalog.db-wal" "umask $u: a live receive has the catalogue's -wal"
	like "$(cat "$T/live-$u")" "catalog.db-shm" "umask $u: and its -shm"
	is "$(cat "$T/live-modes-$u")" "" "umask $u: while a receive runs, everything in the pool is private"
	is "$(modes "$T/p/t$u" "$T/p/b$u")" "" "umask $u: after capture, receive, destroy and gc, every pool dir is 0700 and file 0600"
	is "$(modes "$FERRY_HOME")" "" "umask $u: FERRY_HOME and the registry are private too"
	like "$(find "$T/p/t$u/packs" -type f | wc -l)" "^[1-9]" "umask $u: (the pool has packs)"
done

export FERRY_HOME="$T/home-022"
ferry pool export b022
chmod -R go+rX "$T/p/b022"
run ferry pool import "$T/p/b022"
is "$rc" 0 "importing a pool open to other users succeeds"
is "$(wc -l <"$T/err")" 1 "with one line on stderr"
like "$(cat "$T/err")" "^ferry: warning: pool 'b022' is open to other users \('.*' has mode 07[0-7]{2}\).*chmod -R go=" \
	"naming the pool, what is open and the fix"
ferry pool export b022
chmod -R go= "$T/p/b022"
run ferry pool import "$T/p/b022"
is "$rc:$(cat "$T/err")" "0:" "a private pool imports without a word"
run ferry list -H -o name b022/fs
is "$rc:$(cat "$T/out")" "0:b022/fs" "and is usable"
done_testing
