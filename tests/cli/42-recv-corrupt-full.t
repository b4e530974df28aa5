#!/bin/sh
# Corruption of a full stream, in the manner of OpenZFS's mess_send_file:
# 200 random single-bit flips and 50 random truncations are all refused,
# and the target is unchanged (catalogue listing after each case, restored
# data at the end). After gc, the pool that refused them all and then got
# the intact stream equals a pool that only ever got the intact stream.
# (45-recv-resume-full.t resumes from truncations with recv -s.)
. "$(dirname "$0")/corrupt.sh"
corrupt_setup
ferry send -c tank/fs@a >"$T/stream"
corrupt_run "$T/stream" bk/full "full stream" 42
ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"
ferry recv ctl/full <"$T/stream"
after_check bk ctl "250 refused full streams, then the intact one"
done_testing
