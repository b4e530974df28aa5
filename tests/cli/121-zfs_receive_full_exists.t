#!/bin/sh
# A full stream into an existing dataset, as OpenZFS refuses it
# (lib/libzfs/libzfs_sendrecv.c, zfs_receive_one: "destination 'X' exists,
# must specify -F to overwrite it"; the case zfs_receive_004_neg's bad
# targets and rsend's -F tests assume): without -F nothing changes, -F
# overwrites; the dataset made by recv -s for the stream it resumes is not
# an existing destination. A package (-R) creating a dataset that exists
# is refused the same way. After gc the pool equals a control that only
# ever got what was accepted.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/s"
for i in 1 2 3; do seq 1 $((i * 5000)) >"$T/s/f$i"; done
ferry pool create tank "$T/p/tank"
ferry pool create bk "$T/p/bk"
ferry pool create ctl "$T/p/ctl"
ferry create -o source="$T/s" tank/fs
ferry snapshot tank/fs@a
ferry send tank/fs@a >"$T/full"
ferry send -R tank/fs@a >"$T/pkg"
state() { ferry list -t all -r -H -p -o name,guid,used bk; }

ferry create bk/empty
state >"$T/before"
refused 1 "destination 'bk/empty' exists: a full stream needs a new dataset \(or -F to overwrite it\)" \
	"a full stream into an existing dataset without snapshots is refused" \
	sh -c "'$FERRY' recv bk/empty <'$T/full'"
refused 1 "destination 'bk/empty' exists" "and so is a full stream into DATASET@SNAP" \
	sh -c "'$FERRY' recv bk/empty@x <'$T/full'"
refused 1 "destination 'bk/empty' exists" "and a -R package whose top exists" \
	sh -c "'$FERRY' recv bk/empty <'$T/pkg'"
ferry create bk/fs
refused 1 "destination 'bk/fs' exists" "and a -d receive whose dataset exists" \
	sh -c "'$FERRY' recv -d bk <'$T/full'"
ferry destroy bk/fs
state >"$T/after"
is "$(cmp -s "$T/before" "$T/after"; echo $?)" 0 "nothing changed"
run sh -c "'$FERRY' recv -F bk/empty <'$T/full'"
is "$rc:$(cat "$T/err")" "0:" "-F overwrites it"
is "$(ferry get -H -o value guid bk/empty@a)" "$(ferry get -H -o value guid tank/fs@a)" \
	"the dataset now has the sent snapshot"
ferry snapshot tank/fs@b
ferry send tank/fs@b >"$T/full-b"
refused 1 "exists and has snapshots" "a full stream into a dataset with snapshots, without -F" \
	sh -c "'$FERRY' recv bk/empty <'$T/full-b'"

# recv -s: the dataset made for an interrupted full receive takes the
# resumed stream without -F
head -c 30000 "$T/full" >"$T/cut"
run sh -c "'$FERRY' recv -s bk/new <'$T/cut'"
is "$rc" 1 "an interrupted full receive (-s)"
tok=$(ferry get -H -o value receive_resume_token bk/new)
run sh -c "'$FERRY' send -t '$tok' | '$FERRY' recv -s bk/new"
is "$rc:$(cat "$T/err")" "0:" "resumes into the dataset it made, without -F"
is "$(ferry list -H -t snapshot -o name bk/new)" "bk/new@a" "and commits the snapshot"

# the control: bk/empty and bk/new got the stream once each
ferry create ctl/empty
ferry recv -F ctl/empty <"$T/full"
ferry recv ctl/new <"$T/full"
after_check bk ctl "full stream into an existing dataset"
done_testing
