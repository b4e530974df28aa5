#!/bin/sh
# send -R | recv -F replicates a tree as zfs does: datasets and snapshots
# the sender no longer has are destroyed below the receive target, and only
# there; without -F nothing is destroyed; an -I package (no TREE flag)
# never destroys a dataset; a truncated, bit-flipped or overlong -R stream
# leaves the backup exactly as it was (the -F package is all or nothing).
# After gc, every backup equals a control that got what it holds in one go
# and never had what -F destroyed.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
mk() { # mk DIR SEED: a few small files
	mkdir -p "$1/sub"
	awk -v s="$2" 'BEGIN { srand(s); for (f = 0; f < 12; f++) {
		fn = sprintf("%s/%s/f%02d", "'"$1"'", f % 3 ? "." : "sub", f);
		n = 20 + int(rand() * 200); for (i = 0; i < n; i++) print s, f, int(rand() * 1e9) > fn;
		close(fn) } }'
}
for d in a b c d; do mk "$T/src/$d" "$(printf '%d' "'$d")"; done
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src/a" tank/a
ferry create -o source="$T/src/b" tank/a/b
ferry create -o source="$T/src/c" tank/a/c
ferry snapshot -r tank/a@1
ferry send -R tank/a@1 >"$T/r1"
# for the controls: each @1 alone, and the trees of @1 that change
for d in b c; do ferry send "tank/a/$d@1" >"$T/$d.1"; done
ferry send tank/a@1 >"$T/a.1"
cp -a "$T/src/a" "$T/tree-a1"
cp -a "$T/src/b" "$T/tree-b1"
like "$(ferry dump <"$T/r1" | sed -n 3p)" "flags = props,replicate,tree \(0x16\)" \
	"send -R writes a PACKAGE with the TREE flag"

# the sender changes: c goes, d comes, a and b change
ferry destroy -r tank/a/c
ferry create -o source="$T/src/d" tank/a/d
echo changed >>"$T/src/a/f01"; rm "$T/src/b/f02"; echo new >"$T/src/b/sub/new"
ferry snapshot -r tank/a@2
ferry send -R -I @1 tank/a@2 >"$T/r12"
ferry send -I @1 tank/a@2 >"$T/i12"
like "$(ferry dump <"$T/i12" | sed -n 3p)" "flags = props,replicate \(0x6\)" \
	"send -I writes a PACKAGE without TREE"
is "$(ferry dump <"$T/r12" | grep -c 'flags = .*tree')" 1 "only the PACKAGE carries TREE, no BEGIN"

# a backup pool: the @1 tree, a local child below the target, and datasets
# outside it (one whose name starts like the target's)
backup() { # backup POOL
	ferry pool create "$1" "$T/p/$1"
	ferry recv "$1/a" <"$T/r1" || echo "recv into $1 failed"
	ferry create "$1/a/x"
	ferry create -o source="$T/src/c" "$1/other"
	ferry snapshot "$1/other@keep"
	ferry create -o source="$T/src/c" "$1/ab"
	ferry snapshot "$1/ab@keep"
}
state() { # state POOL: everything list and get show ('available' follows
	# the host filesystem's free space, which other tests change)
	ferry list -t all -r -H -o name,used,refer "$1"
	ferry get -r -H -p all "$1" | awk -F'\t' '$2 != "available"'
}
names() { ferry list -t all -r -H -o name "$1" | tr '\n' ' '; }

backup bk1
is "$(names bk1)" "bk1 bk1/a bk1/a@1 bk1/a/b bk1/a/b@1 bk1/a/c bk1/a/c@1 bk1/a/x bk1/ab bk1/ab@keep bk1/other bk1/other@keep " \
	"the backup holds the @1 tree"

# -n -v -F: the plan names what would go, and nothing changes
backup bk2
state bk2 >"$T/bk2.before"
run sh -c "'$FERRY' recv -n -v -F bk2/a <'$T/r12'"
is "$rc" 0 "recv -n -v -F of the -R package: a dry run"
is "$(grep '^would destroy' "$T/out" | tr '\n' ' ')" \
	"would destroy bk2/a/c would destroy bk2/a/x " "-n -v -F reports the datasets that would be destroyed"
like "$(cat "$T/out")" "would receive bk2/a/d@2" "-n -v reports what it would receive"
state bk2 >"$T/bk2.after"
is "$(cmp "$T/bk2.before" "$T/bk2.after" >/dev/null 2>&1; echo $?)" 0 "-n changed nothing"

# -F: the tree becomes the sender's
run sh -c "'$FERRY' recv -v -F bk2/a <'$T/r12'"
is "$rc" 0 "recv -F of the -R -I package"
like "$(cat "$T/out")" "destroying bk2/a/c" "-v says what -F destroys"
is "$(names bk2)" "bk2 bk2/a bk2/a@1 bk2/a@2 bk2/a/b bk2/a/b@1 bk2/a/b@2 bk2/a/d bk2/a/d@2 bk2/ab bk2/ab@keep bk2/other bk2/other@keep " \
	"-F: c (gone on the sender) and the local x are destroyed, d arrived, outside untouched"
for d in a a/b a/d; do
	rm -rf "$T/r"
	ferry restore "bk2/$d@2" "$T/r"
	run "$TREECMP" "$T/src/${d#a/}" "$T/r"
	is "$rc" 0 "bk2/$d@2 restores identical to its source"
done
is "$(ferry get -H -o value guid bk2/a/d@2)" "$(ferry get -H -o value guid tank/a/d@2)" \
	"the new child keeps the sender's guid"

# without -F nothing is destroyed (as zfs): c and x stay, the rest arrives
run sh -c "'$FERRY' recv bk1/a <'$T/r12'"
is "$rc" 0 "recv without -F of the -R package"
is "$(names bk1)" "bk1 bk1/a bk1/a@1 bk1/a@2 bk1/a/b bk1/a/b@1 bk1/a/b@2 bk1/a/c bk1/a/c@1 bk1/a/d bk1/a/d@2 bk1/a/x bk1/ab bk1/ab@keep bk1/other bk1/other@keep " \
	"without -F: c and x stay, d and @2 arrive"

# an -I package (no TREE) with -F never destroys a dataset
backup bk3
run sh -c "'$FERRY' recv -v -F bk3/a <'$T/i12'"
is "$rc" 0 "recv -F of an -I package"
is "$(names bk3)" "bk3 bk3/a bk3/a@1 bk3/a@2 bk3/a/b bk3/a/b@1 bk3/a/c bk3/a/c@1 bk3/a/x bk3/ab bk3/ab@keep bk3/other bk3/other@keep " \
	"-I -F: the children are untouched"
is "$(grep -c destroying "$T/out")" 0 "-I -F destroys nothing here"

# damaged -R streams with -F: refused, and the backup exactly as before
backup bk4
ferry snapshot --from "$T/src/c" bk4/a/x@local
state bk4 >"$T/bk4.before"
size=$(stat -c %s "$T/r12")
for cut in $((size / 3)) $((size * 2 / 3)) $((size - 72)) $((size - 1)); do
	head -c "$cut" "$T/r12" >"$T/cut"
	run sh -c "'$FERRY' recv -F bk4/a <'$T/cut'"
	state bk4 >"$T/bk4.after"
	if [ "$rc" = 1 ] && cmp -s "$T/bk4.before" "$T/bk4.after"; then
		ok "cut at $cut of $size: refused, backup unchanged"
	else
		not_ok "cut at $cut of $size: rc=$rc"; diag "$(cat "$T/err")" "$(diff "$T/bk4.before" "$T/bk4.after")"
	fi
done
for at in $((size / 2)) $((size * 3 / 4)) $((size - 40)); do
	cp "$T/r12" "$T/flip"
	b=$(od -An -tu1 -j "$at" -N1 "$T/flip" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 4)))" | dd of="$T/flip" bs=1 seek="$at" conv=notrunc 2>/dev/null
	run sh -c "'$FERRY' recv -F bk4/a <'$T/flip'"
	state bk4 >"$T/bk4.after"
	if [ "$rc" = 1 ] && cmp -s "$T/bk4.before" "$T/bk4.after"; then
		ok "bit flipped at $at of $size: refused, backup unchanged"
	else
		not_ok "bit flipped at $at of $size: rc=$rc"; diag "$(cat "$T/err")" "$(diff "$T/bk4.before" "$T/bk4.after")"
	fi
done
{ cat "$T/r12"; echo junk; } >"$T/long"
run sh -c "'$FERRY' recv -F bk4/a <'$T/long'"
state bk4 >"$T/bk4.after"
if [ "$rc" = 1 ] && cmp -s "$T/bk4.before" "$T/bk4.after"; then
	ok "bytes after PACKAGE_END: refused, backup unchanged"
else
	not_ok "bytes after PACKAGE_END: rc=$rc"; diag "$(cat "$T/err")"
fi
# and the whole stream still goes in afterwards
run sh -c "'$FERRY' recv -F bk4/a <'$T/r12'"
is "$rc" 0 "the intact stream is received after the refusals"
is "$(names bk4)" "bk4 bk4/a bk4/a@1 bk4/a@2 bk4/a/b bk4/a/b@1 bk4/a/b@2 bk4/a/d bk4/a/d@2 bk4/ab bk4/ab@keep bk4/other bk4/other@keep " \
	"then -F destroys c and x (with its snapshot)"

# -R -F into a target below which the sender's tree is received with -d
ferry pool create bk5 "$T/p/bk5"
ferry create bk5/h
ferry recv -d bk5/h <"$T/r1"
ferry create bk5/h/sibling
run sh -c "'$FERRY' recv -d -F bk5/h <'$T/r12'"
is "$rc" 0 "-R -d -F received"
is "$(ferry list -r -H -o name bk5 | tr '\n' ' ')" "bk5 bk5/h bk5/h/a bk5/h/a/b bk5/h/a/d bk5/h/sibling " \
	"-d -F: destroys below the received top only (the sibling stays)"

# The controls: what each backup holds, in one go (the -R package of @2
# where a backup has the sender's whole tree, single streams of @1 where it
# kept what the sender no longer has), never what -F destroyed.
extras() { # extras POOL: the datasets outside the receive target
	ferry create -o source="$T/src/c" "$1/other"
	ferry snapshot "$1/other@keep"
	ferry create -o source="$T/src/c" "$1/ab"
	ferry snapshot "$1/ab@keep"
}
ferry pool create ctl1 "$T/p/ctl1"   # without -F: c and x stay
ferry send -R tank/a@2 | ferry recv ctl1/a
ferry recv ctl1/a/c <"$T/c.1"
ferry create ctl1/a/x
extras ctl1
ferry pool create ctl2 "$T/p/ctl2"   # -F: the sender's tree
ferry send -R tank/a@2 | ferry recv ctl2/a
extras ctl2
ferry pool create ctl3 "$T/p/ctl3"   # -I -F: a alone moves to @2
ferry recv ctl3/a <"$T/a.1"
ferry send -i @1 tank/a@2 | ferry recv ctl3/a
ferry recv ctl3/a/b <"$T/b.1"
ferry recv ctl3/a/c <"$T/c.1"
ferry create ctl3/a/x
extras ctl3
ferry pool create ctl5 "$T/p/ctl5"   # -d -F below h, the sibling stays
ferry create ctl5/h
ferry send -R tank/a@2 | ferry recv -d ctl5/h
ferry create ctl5/h/sibling
# every snapshot compared with its tree (the sources of @2 and c have not
# changed since)
set -- -e "*/a@1=$T/tree-a1" -e "*/b@1=$T/tree-b1" -e "*/c@1=$T/src/c" \
	-e "*/a@2=$T/src/a" -e "*/b@2=$T/src/b" -e "*/d@2=$T/src/d" -e "*@keep=$T/src/c"
after_check "$@" bk1 ctl1 "recv of an -R package without -F"
after_check "$@" bk2 ctl2 "recv -F of an -R package"
after_check "$@" bk3 ctl3 "recv -F of an -I package"
after_check "$@" bk4 ctl2 "damaged -R -F streams refused, then the intact one"
after_check "$@" bk5 ctl5 "recv -d -F of an -R package"
# the sender without c: a, b and d captured whole from their trees
ferry pool create ctl-tank "$T/p/ctl-tank"
ferry create ctl-tank/a
ferry snapshot --from "$T/tree-a1" ctl-tank/a@1
ferry snapshot --from "$T/src/a" ctl-tank/a@2
ferry create ctl-tank/a/b
ferry snapshot --from "$T/tree-b1" ctl-tank/a/b@1
ferry snapshot --from "$T/src/b" ctl-tank/a/b@2
ferry create ctl-tank/a/d
ferry snapshot --from "$T/src/d" ctl-tank/a/d@2
after_check "$@" tank ctl-tank "the sender, after destroy -r of a child"
done_testing
