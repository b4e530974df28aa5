#!/bin/sh
# recv -o on a dataset the receive creates: every -o reaches the new
# dataset, not the first six of them (the code before issue 10 copied at
# most six into a fixed array and dropped the rest without a word). A full
# stream into a new dataset, and a -R package whose child datasets are all
# created, each get all eight; the received trees restore as sent.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/a"
printf 'one\n' >"$T/src/a/f"
head -c 70000 /dev/urandom >"$T/src/r"
ferry pool create src "$T/p/src"
ferry pool create dst "$T/p/dst"
ferry create -o source="$T/src" src/fs
ferry snapshot src/fs@s1
ferry create -o source="$T/src" src/fs/kid
ferry snapshot -r src/fs@s2
O=''
i=1
while [ $i -le 8 ]; do
	O="$O -o user:p$i=v$i"
	i=$((i + 1))
done
# shellcheck disable=SC2086
run sh -c "'$FERRY' send src/fs@s1 | '$FERRY' recv $O dst/full"
is "$rc" 0 "recv with eight -o into a new dataset"
want=$(i=1; while [ $i -le 8 ]; do printf 'user:p%s\tv%s\tlocal\n' $i $i; i=$((i + 1)); done)
props() { ferry get -H -o property,value,source all "$1" | grep '^user:p' | sort; }
is "$(props dst/full)" "$want" "all eight -o properties set on the created dataset"
# shellcheck disable=SC2086
run sh -c "'$FERRY' send -R src/fs@s2 | '$FERRY' recv $O dst/pkg"
is "$rc" 0 "recv -R with eight -o creates the package's datasets"
is "$(props dst/pkg)" "$want" "all eight on the package's top dataset"
# as zfs (receive-o-x_props_override): on a package, -o sets the top
# dataset's properties and the datasets below inherit them
want_kid=$(i=1; while [ $i -le 8 ]; do printf 'user:p%s\tv%s\tinherited from dst/pkg\n' $i $i; i=$((i + 1)); done)
is "$(props dst/pkg/kid)" "$want_kid" "all eight reach a child it creates, inherited from the top"
mkdir "$TS/r1" "$TS/r2"
run ferry restore dst/full@s1 "$TS/r1/t"
is "$rc" 0 "the received snapshot restores"
run "$FERRY_TOOLS/treecmp" "$T/src" "$TS/r1/t"
is "$rc:$(cat "$T/out" "$T/err")" "0:" "it is the tree sent"
ferry gc dst >/dev/null
run ferry restore dst/pkg/kid@s2 "$TS/r2/t"
is "$rc" 0 "the package's child restores after gc"
run "$FERRY_TOOLS/treecmp" "$T/src" "$TS/r2/t"
is "$rc:$(cat "$T/out" "$T/err")" "0:" "it is the tree sent"
done_testing
