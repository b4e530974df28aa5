#!/bin/sh
# Issue 11, item 1: arguments as on Linux zfs. Options may follow operands
# (GNU permutation), "--" ends them, an unknown or malformed option is
# named as typed, every command has -h/--help (rc 0, its usage on stdout,
# the same as `ferry help CMD`), `ferry --version` and `ferry version`;
# each command's options in --help are those of docs/ferry.8's SYNOPSIS.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/src/d"
echo one >"$T/src/f"
ferry pool create tank "$T/tank"
ferry pool create bk "$T/bk"
ferry create -o source="$T/src" tank/a
ferry create tank/a/b
ferry snapshot tank/a@s1

# ---- options after operands ---------------------------------------------------
run ferry get all tank --json
is "$rc:$(python3 -c 'import json,sys; print(sorted(json.load(sys.stdin)["datasets"]))' <"$T/out")" \
	"0:['tank']" "get all tank --json: JSON, rc 0"
run ferry list tank/a -r -o name
is "$rc:$(cat "$T/out")" "0:NAME
tank/a
tank/a/b" "list tank/a -r -o name"
run ferry get compression tank/a -H
is "$rc:$(cat "$T/out")" "0:tank/a	compression	on	default" "get compression tank/a -H"
run ferry list tank/a -H -o name -t snapshot
is "$rc:$(cat "$T/out")" "0:tank/a@s1" "list DATASET -H -o name -t snapshot"
run ferry pool list tank -H
like "$rc:$(cat "$T/out")" "^0:tank	" "pool list NAME -H"
run sh -c "'$FERRY' send tank/a@s1 -v -P >'$T/stream'"
like "$rc:$(sed -n 1p "$T/err")" "^0:full	tank/a@s1	[0-9]+$" "send SNAP -v -P"
run sh -c "'$FERRY' recv bk/a -v <'$T/stream'"
like "$rc:$(sed -n 1p "$T/out")" "^0:receiving full stream of tank/a@s1 into bk/a@s1$" "recv TARGET -v"
run ferry snapshot tank/a@s2 -v
is "$rc:$(ferry list -H -o name -t snap tank/a | tail -1)" "0:tank/a@s2" "snapshot DS@S -v"
run ferry destroy tank/a@s2 -n -v
like "$rc:$(cat "$T/out")" "^0:would destroy tank/a@s2" "destroy SNAP -n -v"
run ferry hold keep tank/a@s1 -r
is "$rc:$(ferry holds -H tank/a@s1 | cut -f2)" "0:keep" "hold TAG SNAP -r"
run ferry release keep tank/a@s1 -r
is "$rc" 0 "release TAG SNAP -r"
run ferry inherit compression tank/a -r
is "$rc" 0 "inherit PROP DS -r"
run ferry diff tank/a@s1 tank/a -H
is "$rc" 0 "diff SNAP DS -H"
run ferry gc tank -v
like "$rc:$(cat "$T/out")" "^0:freed " "gc POOL -v"
run ferry rollback tank/a@s1 -r
is "$rc" 0 "rollback SNAP -r"
ferry restore tank/a@s1 "$TS/r1" -v >"$T/out" 2>&1
like "$(cat "$T/out")" "^restored tank/a@s1: " "restore SNAP DIR -v"
diff -r "$T/src" "$TS/r1" >/dev/null && ok "which restored the tree" || not_ok "restore differs"
run ferry dump "$T/stream" -v
is "$rc" 0 "dump FILE -v"
run ferry create tank/v -V 1M -b 4K
is "$rc:$(ferry get -H -o value volblocksize tank/v)" "0:4K" "create DS -V SIZE -b SIZE"
run ferry sync-state tank/a -r
is "$rc" 0 "sync-state DS -r"
run ferry rename tank/a/b tank/n/b -p
is "$rc:$(ferry list -H -o name tank/n/b)" "0:tank/n/b" "rename DS NEWDS -p"
run ferry rename tank/a@s1 @s9 -r
is "$rc:$(ferry list -H -o name -t snap tank/a)" "0:tank/a@s9" "rename SNAP @NEW -r"
run ferry rename -- tank/a@s9 @s1
is "$rc:$(ferry list -H -o name -t snap tank/a)" "0:tank/a@s1" "rename -- SNAP @NEW"
run ferry pool create p2 "$T/p2" -o compression=gzip
is "$rc:$(ferry get -H -o value compression p2)" "0:gzip" "pool create NAME PATH -o PROP=VAL"
run ferry prune tank/a --keep-last 5 -n -v
is "$rc" 0 "prune DS --keep-last N -n -v"
run ferry sync tank/a bk/sy -n
is "$rc:$(ferry list -H -o name bk/sy 2>/dev/null)" "0:" "sync SRC DST -n (sends nothing)"
run ferry pool status tank --json
is "$rc" 0 "pool status NAME --json"
run ferry holds tank/a@s1 -H
is "$rc" 0 "holds SNAP -H"

# ---- -- ends options ------------------------------------------------------------
refused 1 "cannot list '-r'" "after --, -r is a dataset name" ferry list -- -r
run ferry list -H -o name -- tank/a
is "$rc:$(cat "$T/out")" "0:tank/a" "list -- DATASET"

# ---- errors name the option as typed ---------------------------------------------
refused 2 "list: option '--json' takes no value \(got '--json=x'\); usage: ferry list " \
	"list --json=x blames --json, not -j" ferry list --json=x
refused 2 "list: invalid option '--jsn'; usage: ferry list " "an unknown long option" ferry list --jsn
refused 2 "list: invalid option '-Z'; usage: ferry list " "an unknown short option" ferry list -Z
refused 2 "list: option '-d' needs a value" "a missing short value" ferry list -d
refused 2 "send: option '--compress' needs a value" "a missing long value" ferry send --compress
refused 2 "recv: invalid option '--bogus'" "recv names it too" ferry recv --bogus bk/x
refused 2 "pool create: invalid option '-Q'" "so does pool create" ferry pool create -Q x "$T/x"
refused 2 "rename: invalid option '-f'; usage: ferry rename " "so does rename" ferry rename -f tank/a tank/z

# ---- help ----------------------------------------------------------------------
cmds="pool create|pool import|pool export|pool list|pool status|create|destroy|list|get|set|inherit|rename|snapshot|bookmark|restore|hold|release|holds|rollback|diff|gc|scrub|dump|send|recv|sync|prune|shell|sync-state"
IFS='|'
for c in $cmds; do
	IFS=' '
	# shellcheck disable=SC2086
	run ferry $c --help
	h_rc=$rc; cp "$T/out" "$T/help.long"; h_err=$(cat "$T/err")
	# shellcheck disable=SC2086
	run ferry $c -h
	cmp -s "$T/out" "$T/help.long" && same=1 || same=0
	# diff's -h is zfs diff's (names not escaped: 108-diff-format.t), so
	# only --help is its help; with no operands -h is then a usage error
	[ "$c" = diff ] && [ "$rc" = 2 ] && [ ! -s "$T/out" ] && same=1
	# shellcheck disable=SC2086
	run ferry help $c
	cmp -s "$T/out" "$T/help.long" && same2=1 || same2=0
	is "$h_rc:$h_err:$same:$same2:$(grep -c "^usage: ferry $c" "$T/help.long")" "0::1:1:1" \
		"ferry $c --help: rc 0, usage on stdout, the same as -h and as 'ferry help $c'"
	IFS='|'
done
IFS=' '
run ferry receive --help
is "$rc:$(sed -n 1p "$T/out")" "0:$(ferry recv --help | sed -n 1p)" "receive --help is recv's"
run ferry --help
like "$rc:$(sed -n 1p "$T/out")" "^0:usage: ferry COMMAND" "ferry --help"
run ferry help
like "$rc:$(sed -n 1p "$T/out")" "^0:usage: ferry COMMAND" "ferry help"
refused 2 "unknown command 'nosuch'" "ferry help nosuch" ferry help nosuch
run ferry --version
like "$rc:$(cat "$T/out")" "^0:ferry [0-9]+\.[0-9]+\.[0-9]+$" "ferry --version"
is "$(ferry version)" "$(cat "$T/out")" "ferry version says the same"

# ---- --help, ferry.8 and the code agree -------------------------------------
# Each command's options in ferry.8's SYNOPSIS and in its --help usage:
# the same sets. (The code's own option strings are what --help and
# errors come from, and the permutation tests above run them.)
IFS='|'
for c in $cmds; do
	IFS=' '
	# shellcheck disable=SC2086
	ferry $c --help | grep -E '^(usage: |       )ferry ' >"$T/h"
	python3 - "$FERRY_SRC/docs/ferry.8" "$c" "$T/h" >"$T/cmp" <<'EOF'
import re, sys
man, cmd, helpf = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(man).read().split('\n')
syn = lines[lines.index('.SH SYNOPSIS') + 1:]
syn = syn[:next(i for i, l in enumerate(syn) if l.startswith('.SH'))]
blocks, cur = [], None
for l in syn:
    m = re.match(r'\.BR? "?ferry ([a-z-]+(?: (?:create|import|export|list|status))?)', l)
    if m:
        cur = [m.group(1), l]
        blocks.append(cur)
    elif l == '.br':
        cur = None
    elif cur is not None:
        cur.append(l)
def opts(text):
    text = text.replace('\\-', '-').replace('\\fR', ' ').replace('\\fI', ' ').replace('\\fB', ' ')
    return set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*|-[A-Za-z])(?![a-z])', text))
man_opts = set()
for b in blocks:
    if b[0] == cmd:
        man_opts |= opts(' '.join(b[1:]))
help_opts = opts(open(helpf).read())
print(' '.join(sorted(man_opts ^ help_opts)) or 'same')
EOF
	is "$(cat "$T/cmp")" same "ferry $c: --help and ferry(8) list the same options"
	IFS='|'
done
IFS=' '

done_testing
