# bench/corpus.sh — sourced by bench/capture and bench/serve: the one
# definition of their ~1 GiB mixed corpus (text, binaries, already
# compressed files, a sparse VM-like disk image) and of its 1 % change,
# so both benches measure the same bytes.

# corpus_build DIR: builds the corpus in DIR (which must not hold one)
corpus_build() {
	_c=$1
	mkdir -p "$_c/text" "$_c/bin" "$_c/compressed"
	cp -a /usr/include "$_c/text/include"
	cp -a /usr/lib/python3.11 "$_c/text/python" 2>/dev/null || cp -a /usr/lib/python3 "$_c/text/python"
	cp -a /usr/share/doc/libc6 /usr/share/doc/sqlite3 "$_c/text/" 2>/dev/null || true
	cp -a /usr/bin "$_c/bin/bin"
	find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name '*.so*' -size +100k | sort | head -60 |
		while IFS= read -r f; do cp -p "$f" "$_c/bin/"; done
	cp -a /usr/share/man "$_c/compressed/man"
	head -c 60000000 /dev/urandom >"$_c/compressed/random.bin"
	find /usr/include -name '*.h' | head -2000 | xargs cat | gzip -6 >"$_c/compressed/headers.gz"
	# a VM-like disk image: 256 MiB, sparse, with regions of binaries, text,
	# zeros and holes at 4K-aligned offsets
	_img="$_c/disk.img"
	truncate -s 256M "$_img"
	_i=0
	for f in $(find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name '*.so*' -size +1M | sort | head -25); do
		dd if="$f" of="$_img" bs=4096 seek=$((_i * 1800)) conv=notrunc,sparse status=none
		_i=$((_i + 1))
	done
	find /usr/include -name '*.h' | sort | tail -3000 | xargs cat |
		dd of="$_img" bs=4096 seek=50000 conv=notrunc status=none
	dd if=/dev/zero of="$_img" bs=4096 seek=46000 count=3000 conv=notrunc status=none
}

# corpus_change DIR: changes 1 % of it: a line appended to every 100th
# file, 1 % of the disk image rewritten with random bytes
corpus_change() {
	_c=$1
	_nfiles=$(find "$_c" -type f | wc -l)
	find "$_c" -type f | sort | awk -v n="$_nfiles" 'NR % 100 == 0' | while IFS= read -r f; do
		printf 'changed\n' >>"$f"
	done
	[ ! -f "$_c/disk.img" ] || dd if=/dev/urandom of="$_c/disk.img" bs=4096 seek=1000 \
		count=$((256 * 256 / 100)) conv=notrunc status=none
}
