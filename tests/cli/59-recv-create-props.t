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

# -o volblocksize on a volume the receive creates is a creation property
# (zfs receive takes it): the code before this test refused the receive,
# setting it again after the creation ("can be set only at creation")
truncate -s 1M "$T/disk.img"
head -c 100000 /dev/urandom | dd of="$T/disk.img" bs=4096 seek=10 conv=notrunc status=none
ferry create -V 1M -b 4K src/vol
ferry snapshot --from "$T/disk.img" src/vol@v
run sh -c "'$FERRY' send src/vol@v | '$FERRY' recv -o volblocksize=8K -o user:v=1 dst/vol"
is "$rc:$(cat "$T/err")" "0:" "recv -o volblocksize=8K into a new volume"
is "$(ferry get -H -o value volblocksize,user:v,volsize dst/vol | tr '\n' ' ')" "8K 1 1M " \
	"the new volume has the -o volblocksize and the other -o"
run sh -c "'$FERRY' send src/vol@v | '$FERRY' recv -o volblocksize=3K dst/vol2"
like "$rc:$(cat "$T/err")" "^1:.*volblocksize.*power of 2" "a bad -o volblocksize is refused"
is "$(ferry list -H -o name dst/vol2 2>&1)" "ferry: cannot list 'dst/vol2': dataset does not exist" \
	"and creates nothing"
ferry snapshot --from "$T/disk.img" src/vol@w
run sh -c "'$FERRY' send -i @v src/vol@w | '$FERRY' recv -o volblocksize=8K dst/vol"
like "$rc:$(cat "$T/err")" "^1:.*volblocksize.*only at creation" \
	"-o volblocksize into an existing volume is still refused"
is "$(ferry list -H -t snapshot -o name -r dst/vol)" "dst/vol@v" "and receives nothing"
rm -f "$TS/vol.img"
run ferry restore dst/vol@v "$TS/vol.img"
is "$rc" 0 "the received volume restores"
cmp -s "$T/disk.img" "$TS/vol.img" && ok "it is the image sent" || not_ok "restored image differs"
ferry gc dst >/dev/null
rm -f "$TS/vol.img"
ferry restore dst/vol@v "$TS/vol.img" && cmp -s "$T/disk.img" "$TS/vol.img" &&
	ok "and still is after gc" || not_ok "restored image differs after gc"
# against a pool that got the same snapshots in one go, without the
# refused receives: same datasets, figures and blocks
ferry pool create ctl "$T/p/ctl"
ferry send src/fs@s1 | ferry recv ctl/full
ferry send -R src/fs@s2 | ferry recv ctl/pkg
ferry send src/vol@v | ferry recv -o volblocksize=8K ctl/vol
after_check dst ctl "after recv -o and the refused receives"
done_testing
