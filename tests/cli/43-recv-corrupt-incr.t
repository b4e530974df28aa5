#!/bin/sh
# Corruption of an incremental stream, as 42-recv-corrupt-full.t: 200
# random bit flips and 50 truncations refused, target unchanged.
. "$(dirname "$0")/corrupt.sh"
corrupt_setup
ferry send tank/fs@a | ferry recv bk/incr
ferry send -i @a tank/fs@b >"$T/stream"
corrupt_run "$T/stream" bk/incr "incremental stream" 43
done_testing
