#!/bin/sh
# Accounting: compressratio of a gzip-7 dataset of text equals gzip -7 on
# the same 128K records (computed here independently, within 1 %); used,
# referenced, written, usedbysnapshots; dedup; per-codec pool figures.
# After gc every figure equals that of a control pool that captured copies
# of the same trees, each whole.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
S="$T/src"
mkdir "$S"
# text: C headers, in three files of different sizes
find /usr/include -name '*.h' | sort | head -120 | xargs cat >"$S/a.txt"
find /usr/include -name '*.h' | sort | sed -n 121,200p | xargs cat >"$S/b.txt"
find /usr/include -name '*.h' | sort | sed -n 201,230p | xargs cat >"$S/c.txt"
ferry create -o compression=gzip-7 -o source="$S" tank/text
run ferry snapshot tank/text@one
is "$rc" 0 "snapshot of a text tree with gzip-7"
cp -a "$S" "$T/copy-one"

# the same records through gzip -7: zlib's stream is gzip's minus 12 bytes
# of header and trailer; a record is kept compressed only if that saves
# 12.5 % (else it is stored raw), as ZFS does.
mkdir "$T/rec"
L=0 P=0
for f in "$S"/*.txt; do
	rm -f "$T/rec/"*
	split -b 131072 -a 4 "$f" "$T/rec/r."
	for r in "$T/rec/"r.*; do
		l=$(wc -c <"$r")
		g=$(gzip -7 -n -c <"$r" | wc -c)
		z=$((g - 12))
		[ "$z" -gt $((l - l / 8)) ] && z=$l
		L=$((L + l)) P=$((P + z))
	done
done
lu=$(ferry get -H -p -o value logicalused tank/text)
u=$(ferry get -H -p -o value used tank/text)
is "$lu" "$L" "logicalused is the logical size of the records"
ok_ratio=$(awk -v a="$lu" -v b="$u" -v c="$L" -v d="$P" 'BEGIN { x = a / b; y = c / d;
	e = (x > y ? x - y : y - x) / y; printf "%s", (e < 0.01 ? "yes" : "no") }')
diag "ferry: $lu/$u  gzip -7: $L/$P"
is "$ok_ratio" yes "compressratio within 1% of gzip -7 per record"
cr=$(ferry get -H -o value compressratio tank/text)
want=$(awk -v a="$lu" -v b="$u" 'BEGIN { printf "%.2fx", int(a * 100 / b) / 100 }')
is "$cr" "$want" "compressratio printed like zfs"

# referenced/used/written/usedbysnapshots
ref1=$(ferry get -H -p -o value referenced tank/text@one)
is "$ref1" "$u" "a single snapshot references all the dataset uses"
is "$(ferry get -H -p -o value written tank/text@one)" "$ref1" "first snapshot: written = referenced"
is "$(ferry get -H -p -o value usedbysnapshots tank/text)" 0 "one snapshot: usedbysnapshots 0"
cp "$S/a.txt" "$S/a-copy.txt"
run ferry snapshot tank/text@two
is "$rc" 0 "snapshot @two"
cp -a "$S" "$T/copy-two"
is "$(ferry get -H -p -o value used tank/text)" "$u" "a copy of a file is deduplicated (used unchanged)"
is "$(ferry get -H -p -o value written tank/text@two)" 0 "nothing new written by the copy"
rm "$S/c.txt"
run ferry snapshot tank/text@three
is "$rc" 0 "snapshot @three"
cp -a "$S" "$T/copy-three"
ref3=$(ferry get -H -p -o value referenced tank/text@three)
[ "$ref3" -lt "$ref1" ] && ok "removing a file lowers referenced" || not_ok "referenced $ref3 vs $ref1"
ubs=$(ferry get -H -p -o value usedbysnapshots tank/text)
is "$ubs" $((u - ref3)) "usedbysnapshots = used - referenced of the newest"
is "$(ferry get -H -p -o value used tank/text@three)" 0 "newest snapshot holds nothing unique"
is "$(ferry get -H -p -o value used tank/text@two)" 0 "blocks two snapshots share are unique to neither"
run ferry destroy -n -v tank/text@two
like "$rc:$(cat "$T/out")" "^0:would destroy tank/text@two" "destroy -n -v names the snapshot"
run ferry destroy -n -p -v tank/text@one%two
like "$rc $(tr '\n' ' ' <"$T/out")" "^0 .*(^| )reclaim	$ubs( |$)" "destroy -n of a range reclaims what only it holds"

# parent's used includes the child's
ferry create -o compression=lz4 -o source="$S" tank/text/lz
run ferry snapshot tank/text/lz@x
is "$rc" 0 "snapshot the lz4 child"
lzu=$(ferry get -H -p -o value used tank/text/lz)
is "$(ferry get -H -p -o value used tank/text)" $((u + lzu)) "used of a parent counts its children"
# the same data under two codecs is stored once per codec
run ferry pool status tank
like "$rc $(tr '\n' ' ' <"$T/out")" "^0 .*gzip-7" "pool status shows gzip-7 blocks"
like "$(cat "$T/out")" "lz4" "pool status shows lz4 blocks"
# zfs: a snapshot's compressratio is its refcompressratio (not logical over
# its unique bytes, which a snapshot sharing everything would make huge)
for sn in tank/text@one tank/text@two tank/text/lz@x; do
	is "$(ferry get -H -p -o value compressratio $sn)" \
		"$(ferry get -H -p -o value refcompressratio $sn)" \
		"$sn: a snapshot's compressratio is its refcompressratio"
done
is "$(ferry get -H -p -o value compressratio tank/text/lz@x)" \
	"$(ferry get -H -p -o value refcompressratio tank/text/lz)" \
	"and equals the dataset's refcompressratio when nothing changed since"

# The control: the same trees, each captured whole from a copy (tank's
# captures reused unchanged files; a copy shares no inode), with the same
# codecs; lz@x holds what @three holds.
ferry pool create ctl "$T/p/ctl"
ferry create -o compression=gzip-7 ctl/text
for sn in one two three; do ferry snapshot --from "$T/copy-$sn" ctl/text@$sn; done
ferry create -o compression=lz4 ctl/text/lz
ferry snapshot --from "$T/copy-three" ctl/text/lz@x
after_check -e "/text@one=$T/copy-one" -e "/text@two=$T/copy-two" \
	-e "/text@three=$T/copy-three" -e "/text/lz@x=$T/copy-three" tank ctl "captures"
done_testing
