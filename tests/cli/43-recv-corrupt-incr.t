#!/bin/sh
# Corruption of an incremental stream, as 42-recv-corrupt-full.t: 200
# random bit flips and 50 truncations refused, target unchanged. After gc,
# the pool equals one that got the full and the intact incremental only.
. "$(dirname "$0")/corrupt.sh"
corrupt_setup
ferry send tank/fs@a >"$T/base"
ferry recv bk/incr <"$T/base"
ferry send -i @a tank/fs@b >"$T/stream"
corrupt_run "$T/stream" bk/incr "incremental stream" 43
ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"
ferry recv ctl/incr <"$T/base"
ferry recv ctl/incr <"$T/stream"
after_check bk ctl "250 refused incremental streams, then the intact one"
done_testing
