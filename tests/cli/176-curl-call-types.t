#!/bin/sh
# net/ calls libcurl through a table (net/lazy.h), which escapes the
# compile-time checks curl's header puts on direct curl_easy_setopt() and
# curl_easy_getinfo() calls. net_curl_setopt() and net_curl_getinfo() put
# back the part the variadic ABI depends on: each snippet below is compiled
# with the project's flags against net/lazy.h; the right types build, each
# wrong one fails with the assertion's message naming the option.
# Nothing of ferry runs: this is a test of the build.
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
CF="-std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -I$FERRY_SRC $(pkg-config --cflags libcurl libmicrohttpd 2>/dev/null)"
# snippet NAME BODY: a function of a file including net/lazy.h
snippet() {
	cat >"$T/$1.c" <<EOS
#include "net/lazy.h"
static size_t cb_write(char *p, size_t a, size_t b, void *u) { (void)p; (void)u; return a * b; }
static size_t cb_wrong(char *p, size_t a, void *u) { (void)p; (void)u; return a; }
void f(CURL *h, long *lp, double *dp, char **sp, int *ip, curl_off_t o);
void f(CURL *h, long *lp, double *dp, char **sp, int *ip, curl_off_t o)
{
	(void)lp; (void)dp; (void)sp; (void)ip; (void)o; (void)cb_write; (void)cb_wrong;
	$2;
}
EOS
}
# builds NAME OPT DESC: compiles at -OOPT; passes when it compiles
builds() {
	run $CC $CF -O"$2" -c -o "$T/$1.o" "$T/$1.c"
	is "$rc" 0 "$3 (-O$2)"
	[ "$rc" = 0 ] || diag "$(cat "$T/err")"
}
# rejected NAME OPT MESSAGE DESC: fails to compile, with MESSAGE
rejected() {
	run $CC $CF -O"$2" -c -o "$T/$1.o" "$T/$1.c"
	if [ "$rc" != 0 ] && grep -q -- "$3" "$T/err"; then ok "$4 (-O$2)"; else
		not_ok "$4 (-O$2)"; diag "rc=$rc" "$(cat "$T/err")"; fi
}

snippet good "net_curl_setopt(h, CURLOPT_NOSIGNAL, 1L);
	net_curl_setopt(h, CURLOPT_URL, \"http://x/\");
	net_curl_setopt(h, CURLOPT_WRITEDATA, h);
	net_curl_setopt(h, CURLOPT_WRITEFUNCTION, (curl_write_callback){cb_write});
	net_curl_setopt(h, CURLOPT_MAX_SEND_SPEED_LARGE, o);
	net_curl_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)0);
	net_curl_getinfo(h, CURLINFO_RESPONSE_CODE, lp);
	net_curl_getinfo(h, CURLINFO_TOTAL_TIME, dp);
	net_curl_getinfo(h, CURLINFO_EFFECTIVE_URL, sp);
	net_curl_getinfo(h, CURLINFO_SIZE_UPLOAD_T, lp)"
snippet int_for_long "net_curl_setopt(h, CURLOPT_NOSIGNAL, 1)"
snippet int_for_off "net_curl_setopt(h, CURLOPT_MAX_SEND_SPEED_LARGE, 100)"
snippet long_for_ptr "net_curl_setopt(h, CURLOPT_URL, 1L)"
snippet ptr_for_long "net_curl_setopt(h, CURLOPT_TIMEOUT, \"30\")"
snippet wrong_info "net_curl_getinfo(h, CURLINFO_RESPONSE_CODE, ip)"
snippet double_info "net_curl_getinfo(h, CURLINFO_TOTAL_TIME, lp)"
snippet string_info "net_curl_getinfo(h, CURLINFO_EFFECTIVE_URL, lp)"
snippet wrong_callback "net_curl_setopt(h, CURLOPT_WRITEFUNCTION, (curl_write_callback){cb_wrong})"

for O in 0 2; do
	builds good "$O" "the right types build"
	rejected int_for_long "$O" "CURLOPT_NOSIGNAL: wrong type of value" "an int for a long option"
	rejected int_for_off "$O" "CURLOPT_MAX_SEND_SPEED_LARGE: wrong type of value" "an int for a curl_off_t option"
	rejected long_for_ptr "$O" "CURLOPT_URL: wrong type of value" "a long for a string option"
	rejected ptr_for_long "$O" "CURLOPT_TIMEOUT: wrong type of value" "a string for a long option"
	rejected wrong_info "$O" "CURLINFO_RESPONSE_CODE: wrong type of pointer" "an int * for a long item"
	rejected double_info "$O" "CURLINFO_TOTAL_TIME: wrong type of pointer" "a long * for a double item"
	rejected string_info "$O" "CURLINFO_EFFECTIVE_URL: wrong type of pointer" "a long * for a string item"
	rejected wrong_callback "$O" "curl_write_callback" "a write callback of the wrong type"
done
done_testing
