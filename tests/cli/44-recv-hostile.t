#!/bin/sh
# Hostile streams built with the stream encoder (tests/tools/mkhostile):
# '..', '.', '/', NUL and empty names, duplicate and unsorted names,
# entries under non-directories, dangling and duplicate objects, orphans,
# wrong sizes, absurd counts, a root inside the tree, a NODE over the
# maximum, an unknown required feature: each is refused with one line, for
# its own reason (mkhostile's CASE.expect: the error class, which
# tests/tools/recvclass shows, and the text of the detail, naming the
# object that is wrong), by a dry run too; the pool is unchanged and
# nothing is written outside it. A valid stream with symlinks pointing out
# restores inside its target only. After gc, the pool equals one that only
# ever got the two valid streams.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/h" "$T/outside"
"$FERRY_TOOLS/mkhostile" "$T/h" || { not_ok "mkhostile"; done_testing; exit 1; }
ferry pool create -o compression=gzip-7 bk "$T/p/bk"
state() { ferry list -H -p -t all -o name,guid,used -r bk; ferry pool status bk | sed -n '/CODEC/,$p'; }
before=$(state)
snapshot_tree() { # everything outside the pool, but the test's own out/err files
	(cd "$T" && find . -path ./p -prune -o -path ./h -prune -o ! -name out ! -name err -print | sort)
}
tree_before=$(snapshot_tree)
# refused_for NAME DESC CMD...: exit 1 and one line, "ferry: cannot receive
# into 'bk/NAME': " and a detail that holds the case's expected text
refused_for() {
	_name=$1 _desc=$2; shift 2
	run "$@"
	_line=$(cat "$T/err")
	case $_line in
	"ferry: cannot receive into 'bk/$_name': "*"$why"*)
		[ "$rc:$(wc -l <"$T/err")" = 1:1 ] && ok "$_desc" ||
			{ not_ok "$_desc"; diag "rc=$rc, stderr:" "$_line"; } ;;
	*) not_ok "$_desc"; diag "rc=$rc, want: ...: ...$why..." "got: $_line" ;;
	esac
}
n=0
for f in "$T"/h/*.stream; do
	name=$(basename "$f" .stream)
	case $name in ok|escape) continue ;; esac
	n=$((n + 1))
	if [ ! -s "$T/h/$name.expect" ]; then
		not_ok "hostile '$name' has no expected refusal"
		continue
	fi
	cls=$(cut -f1 "$T/h/$name.expect")
	why=$(cut -f2- "$T/h/$name.expect")
	refused_for "$name" "hostile '$name' is refused: $why" "$FERRY" recv "bk/$name" <"$f"
	refused_for "$name" "hostile '$name' is refused by a dry run too, for the same reason" \
		"$FERRY" recv -n "bk/$name" <"$f"
	run "$FERRY_TOOLS/recvclass" "bk/$name" <"$f"
	got=$(cut -f1 "$T/out")
	case $(cut -f2- "$T/out") in
	*"$why"*) is "$rc:$got" "1:$cls" "hostile '$name': a refusal of class $cls" ;;
	*) not_ok "hostile '$name': a refusal of class $cls"; diag "got: $(cat "$T/out" "$T/err")" ;;
	esac
done
[ "$n" -ge 20 ] && ok "$n hostile cases" || not_ok "only $n hostile cases"
is "$(state)" "$before" "the pool is unchanged after every hostile stream"
is "$(snapshot_tree)" "$tree_before" "nothing was written outside the pool"

run "$FERRY" recv bk/ok <"$T/h/ok.stream"
is "$rc" 0 "the valid stream built the same way is received"
ferry restore bk/ok@s "$T/restored-ok"
is "$(cat "$T/restored-ok/a")" "hello" "and restores"

run "$FERRY" recv bk/escape <"$T/h/escape.stream"
is "$rc" 0 "a stream with symlinks pointing out of the tree is received"
ferry restore bk/escape@s "$T/outside/r"
is "$(readlink "$T/outside/r/abs")" "/tmp" "the absolute symlink is restored as a symlink"
is "$(readlink "$T/outside/r/up")" "../../../../../../.." "the upward symlink is restored as a symlink"
is "$(ls "$T/outside")" "r" "restore wrote nothing beside its target"
is "$(cat "$T/outside/r/file")" "hello" "the file beside them is intact"
ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"
ferry recv ctl/ok <"$T/h/ok.stream"
ferry recv ctl/escape <"$T/h/escape.stream"
after_check bk ctl "hostile streams refused, then two valid ones"
done_testing
