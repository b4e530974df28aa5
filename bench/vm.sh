# bench/vm.sh — sourced by bench/capture, bench/recv and bench/serve: what
# makes a run on a virtual machine measure the tools and not the host.
#
# Some hypervisors take memory back from the guest as soon as the guest
# frees it: on the Firecracker VMs these benches were first run on
# (docs/notes/recv.md, session 18), the guest kernel reports every free
# 2 MiB block to the host about 2 s after it was freed, and the next write
# into it faults page by page into the host: 400 MiB written into the page
# cache take 1.3-1.5 s then, against 0.12 s into memory freed the moment
# before. Which tool meets which memory depended on what ran before it, and
# runs of one tool spread by 2 x. A physical machine has no such cost.
#
# bench_warm_memory DIR MIB: writes MIB MiB into a scratch file in DIR and
# removes it, right before a timed run, so that the run's writes land in
# memory the guest holds, as on a physical machine, whichever tool it is.
# BENCH_WARM_MIB=0 (in the caller) turns it off.
bench_warm_memory() {
	[ "$2" -gt 0 ] || return 0
	dd if=/dev/zero of="$1/.warm-memory" bs=1M count="$2" status=none
	rm -f "$1/.warm-memory"
}
