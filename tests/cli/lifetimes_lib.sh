# tests/cli/lifetimes_lib.sh — sourced by tests/cli/142: the history that
# made tests/cli/pool-snapblocks.tar.gz (with ferry 13ee6f9, whose
# catalogue had snap_blocks), replayed by 142 into a control pool.
# history BIN POOL PATH SRC: BIN builds pool POOL at PATH from the
# trees it writes under SRC (deterministic: the same blocks every time).
# _still SRC: every time in the trees fixed, so two runs restore alike
_still() { find "$1" -exec touch -h -d @1700000000 {} +; }
history() {
	_b=$1 _p=$2 _s=$4
	mkdir -p "$_s/fs" "$_s/child" "$_s/other"
	"$_b" pool create "$_p" "$3" &&
	"$_b" create -o source="$_s/fs" -o compression=lz4 "$_p/fs" &&
	"$_b" create -o source="$_s/child" "$_p/fs/child" &&
	"$_b" create -o source="$_s/other" -o compression=gzip "$_p/other" || return 1
	seq 1 2000 >"$_s/fs/a"; seq 5 3000 >"$_s/fs/b"; seq 7 900 >"$_s/child/k"
	seq 3 4000 >"$_s/other/o"
	_still "$_s"; "$_b" snapshot "$_p/fs@s1" && "$_b" snapshot "$_p/fs/child@c1" && "$_b" snapshot "$_p/other@o1" || return 1
	# a file changed, one gone
	seq 1 2500 >"$_s/fs/a"; rm "$_s/fs/b"
	_still "$_s"; "$_b" snapshot "$_p/fs@s2" || return 1
	# the gone one back (its blocks leave and come back), a new one
	seq 5 3000 >"$_s/fs/b"; seq 100 900 >"$_s/fs/c"
	_still "$_s"; "$_b" snapshot "$_p/fs@s3" || return 1
	# a copy under another codec (a second copy of a's blocks), the
	# other dataset sharing blocks with fs
	"$_b" set compression=off "$_p/fs" && cp "$_s/fs/a" "$_s/fs/a2" && cp "$_s/fs/b" "$_s/other/b" || return 1
	_still "$_s"; "$_b" snapshot "$_p/fs@s4" && "$_b" snapshot "$_p/other@o2" || return 1
	seq 1 10 >"$_s/child/k"
	_still "$_s"; "$_b" snapshot "$_p/fs/child@c2" || return 1
	"$_b" hold keep "$_p/fs@s3" && "$_b" bookmark "$_p/fs@s1" "$_p/fs#m1" || return 1
	# the middle one of three
	"$_b" destroy "$_p/fs@s2" || return 1
	"$_b" send "$_p/fs@s4" | "$_b" recv "$_p/rcv" || return 1
	"$_b" gc "$_p" >/dev/null
}
