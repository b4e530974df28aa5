#!/bin/sh
# Resumable receive of an incremental stream: 50 random truncations with
# recv -s, each completed with send -t, identical to the source. After gc,
# the pool equals one whose datasets got the two streams in one go each.
. "$(dirname "$0")/corrupt.sh"
corrupt_setup
ferry send tank/fs@a >"$T/base"
ferry send -i @a tank/fs@b >"$T/stream"
corrupt_resume "$T/stream" "incremental stream" 46 tank/fs@b "$T/base"
ferry restore tank/fs@a "$T/want-a"
after_check -e "/s46-*@b=$T/want" -e "/s46-*@a=$T/want-a" bk ctl "50 resumed incremental receives"
done_testing
