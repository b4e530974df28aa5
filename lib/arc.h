/* lib/arc.h — libarchive, loaded by the first capture or restore of an
 * archive (arc_load; lib.h: lazy_lib): linked in, it and the 12 libraries
 * it brings (libxml2, ICU, nettle, ...) cost every command about 3.7 ms
 * and 143 page faults of start-up. The table holds the functions capture/
 * and restore/ call, typed from libarchive's own headers: `arc.read_new()`
 * is `archive_read_new()`. Besides lib/lib.h, the one header of lib/ that
 * others include (capture/ and restore/: scripts/depcheck.sh). */
#ifndef FERRY_LIB_ARC_H
#define FERRY_LIB_ARC_H

#include <archive.h>
#include <archive_entry.h>

#define ARC_FNS(X) \
	X(entry_copy_hardlink) \
	X(entry_copy_pathname) \
	X(entry_copy_symlink) \
	X(entry_filetype) \
	X(entry_free) \
	X(entry_gid) \
	X(entry_hardlink) \
	X(entry_mtime) \
	X(entry_mtime_is_set) \
	X(entry_mtime_nsec) \
	X(entry_new) \
	X(entry_pathname) \
	X(entry_perm) \
	X(entry_rdev) \
	X(entry_set_filetype) \
	X(entry_set_gid) \
	X(entry_set_mtime) \
	X(entry_set_perm) \
	X(entry_set_rdev) \
	X(entry_set_size) \
	X(entry_set_uid) \
	X(entry_size) \
	X(entry_size_is_set) \
	X(entry_sparse_add_entry) \
	X(entry_sparse_clear) \
	X(entry_symlink) \
	X(entry_uid) \
	X(entry_xattr_add_entry) \
	X(entry_xattr_next) \
	X(entry_xattr_reset) \
	X(error_string) \
	X(read_data_block) \
	X(read_free) \
	X(read_new) \
	X(read_next_header) \
	X(read_open_filename) \
	X(read_support_filter_all) \
	X(read_support_format_all) \
	X(write_close) \
	X(write_data) \
	X(write_free) \
	X(write_header) \
	X(write_new) \
	X(write_open_fd) \
	X(write_set_format_pax) \
	X(write_set_format_zip) \
	X(write_set_options)

#define ARC_MEMBER(n) __typeof__(archive_##n) *n;
struct arc_api {
	ARC_FNS(ARC_MEMBER)
};
#undef ARC_MEMBER

/* The table: its members are NULL until arc_load returned 0 in this
 * process; after that they never change (read them freely, from any
 * thread). */
extern struct arc_api arc;

/* Loads libarchive and fills arc, on the first call (thread-safe; later
 * calls return the first one's result). 0, or -FERR_UNSUPPORTED when the
 * library or one of the functions is missing, the message naming which. */
int arc_load(void);

#endif
