#!/bin/sh
# Resumable receive of an incremental stream: 50 random truncations with
# recv -s, each completed with send -t, identical to the source.
. "$(dirname "$0")/corrupt.sh"
corrupt_setup
ferry send tank/fs@a >"$T/base"
ferry send -i @a tank/fs@b >"$T/stream"
corrupt_resume "$T/stream" "incremental stream" 46 tank/fs@b "$T/base"
done_testing
