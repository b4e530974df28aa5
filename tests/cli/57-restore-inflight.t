#!/bin/sh
# A restore that fails midway (a damaged pool) closes no fd while a job
# that uses it can still run: neither a file whose blocks are still being
# written (the write would fail, or land in another file that got the fd
# number) nor a directory in which small files are still being created.
# The first failure is the one reported, not a "Bad file descriptor" that
# followed from it; under strace no write, open or close sees EBADF.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/big" "$T/many/sub/many"
# a file of 128 records, several of them damaged below
head -c 16777216 /dev/urandom >"$T/big/big"
# many one-record files, created on the workers, several of them damaged
i=100
while [ $i -lt 400 ]; do head -c 8192 /dev/urandom >"$T/many/sub/many/f$i"; i=$((i + 1)); done
echo after >"$T/many/zz"

for p in tank good; do
	ferry pool create $p "$T/p/$p"
	for d in big many; do
		ferry create -o source="$T/$d" $p/$d
		ferry snapshot $p/$d@a
	done
done
# flip a byte every 1.5 MB of big's pack, every 150 kB of many's: several
# damaged blocks among the jobs in flight
for pack in "$T/p/tank/packs/"*; do
	size=$(stat -c %s "$pack")
	step=150000
	[ "$size" -gt 8000000 ] && step=1500000
	off=$step
	while [ $off -lt "$size" ]; do
		printf '\377' | dd of="$pack" bs=1 seek=$off conv=notrunc status=none
		off=$((off + step))
	done
done

have_strace=0
command -v strace >/dev/null 2>&1 && have_strace=1
for d in big many; do
for try in 1 2; do
	rm -rf "$T/r"
	# run 1 into an empty directory that exists (a failed restore leaves
	# it, with what it made, for the stray check below); run 2 lets
	# restore create it, and a failed restore takes it away again
	[ $try = 1 ] && mkdir "$T/r"
	if [ $have_strace = 1 ]; then
		strace -f -qq -o "$T/trace" -e trace=openat,pwrite64,write,close,ftruncate,fchmod,fchown,utimensat,fsetxattr \
			"$FERRY" restore tank/$d@a "$T/r" 2>"$T/err"
	else
		"$FERRY" restore tank/$d@a "$T/r" 2>"$T/err"
	fi
	rc=$?
	is "$rc" 1 "$d, run $try: restore from a damaged pool fails"
	like "$(cat "$T/err")" \
		"^ferry: cannot restore 'tank/$d@a': restoring '[^']+': block [0-9a-f]{16} in pack '[0-9a-f]+\\.pack' at offset [0-9]+ is damaged: its content does not match its hash$" \
		"$d, run $try: and says the data is corrupt"
	if grep -q "Bad file descriptor" "$T/err"; then
		not_ok "$d, run $try: the error is not a write to a closed fd"; diag "$(cat "$T/err")"
	else
		ok "$d, run $try: the error is not a write to a closed fd"
	fi
	if [ $have_strace = 1 ]; then
		n=$(grep -c EBADF "$T/trace")
		is "$n" 0 "$d, run $try: no write, open or close on a closed fd (strace)"
		[ "$n" = 0 ] || diag "$(grep EBADF "$T/trace" | head -3)"
	else
		ok "# SKIP strace is not installed"
	fi
	if [ $try = 1 ]; then
		stray=$(find "$T/r" -mindepth 1 ! -path "$T/r/big" ! -path "$T/r/sub" ! -path "$T/r/zz" \
			! -path "$T/r/sub/many" ! -path "$T/r/sub/many/f*" 2>&1)
		is "$stray" "" "$d, run $try: nothing created outside its directory"
	else
		[ ! -e "$T/r" ] && ok "$d, run $try: the directory it created is gone" ||
			not_ok "$d, run $try: left $(find "$T/r" | head -5)"
	fi
done
done

# the pool without damage restores whole, after gc
run ferry gc good
is "$rc" 0 "gc of the intact pool"
for d in big many; do
	rm -rf "$T/r"
	run ferry restore good/$d@a "$T/r"
	is "$rc" 0 "the intact pool's $d restores"
	run "$FERRY_TOOLS/treecmp" "$T/$d" "$T/r"
	is "$rc" 0 "identical to its source"
done
done_testing
