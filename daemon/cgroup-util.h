/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* cgroup v2 helpers: finding the mount, validating API paths, opening files
 * beneath the root without following symlinks, and strict parsers for the
 * kernel's files.  Parsers are pure and unit-tested (tests/test-cgroup-util.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Find the first cgroup2 mount point in a mountinfo file (NULL means
 * /proc/self/mountinfo).  Octal escapes (\040 etc.) are decoded.
 * -ENOENT if there is none. */
int cg_find_cgroup2_mount(const char *mountinfo_path, char **ret);

/* The length of the UTF-8 character at s (not at its NUL), or 0 if it is none:
 * strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF, no truncated sequences); with refuse_noncharacters, also none of
 * U+FDD0..U+FDEF, U+xFFFE, U+xFFFF, which sd-bus refuses in a string. */
size_t cg_utf8_char_len(const unsigned char *s, bool refuse_noncharacters);

/* The same, from a mountinfo text already in memory (for tests and fuzzing). */
int cg_parse_mountinfo_cgroup2(const char *text, size_t len, char **ret);

/* Every cgroup2 mount point of /proc/self/mountinfo (of text), decoded, in
 * its order, each ending with a NUL, in *ret (NULL if none) of *ret_size
 * bytes: for freezectl, which may run where freezerd's mount is not. */
int cg_find_cgroup2_mounts(char **ret, size_t *ret_size);
int cg_parse_mountinfo_cgroup2_all(const char *text, size_t len, char **ret, size_t *ret_size);

/* Validate and normalize an API path ("/pods/pod1", "pods/pod1", "/").
 * Accepts a missing leading '/', and one trailing '/'.
 * Rejects with -EINVAL: empty string, "." or ".." components, "//" (empty
 *   components), control characters, a string that is not valid UTF-8;
 *   -ENAMETOOLONG: longer than PATH_MAX or a component longer than NAME_MAX.
 * On failure *ret_reason (if not NULL) is set to a static English reason such
 * as "contains a '..' component".  On success *ret is "/" or "/a/b". */
int cg_path_normalize(const char *in, char **ret, const char **ret_reason);

/* Whether a group named name can be a group object: its path must go into
 * D-Bus strings, which sd-bus takes only as UTF-8 without noncharacters, and
 * be one an API call can name (no control characters, as above).  The kernel
 * takes any bytes but '/' and NUL in a cgroup's name. */
bool cg_name_is_publishable(const char *name);

/* s into buf for a message or the log, with control characters escaped
 * (\xNN), a backslash as "\\" (so that a literal "\x0a" in a name does not
 * read as an escape), and with escape_high every byte above 0x7e too (for a
 * name that is not UTF-8, which D-Bus cannot carry); cut with "..." where it
 * does not fit size (at least 8).  Returns buf. */
const char *cg_escape(const char *s, bool escape_high, char *buf, size_t size);

/* A string of the caller's (a path, an order, a resource...) or a group path
 * as an error message quotes it: whole up to CG_QUOTE_MAX bytes; a longer one
 * as its first CG_QUOTE_HEAD bytes at most, "...", its last CG_QUOTE_TAIL
 * bytes at most, each part cut on a character (the head before the one that
 * would pass it, the tail after the one it starts in), then " (N bytes)" (N:
 * its whole length).  The tail, because a path's end (its leaf name) is what
 * tells siblings apart: "/very/long/prefix/a" and ".../b" must not quote the
 * same.  So a 100 MB argument does not make a 100 MB error; control
 * characters and bytes that are no UTF-8 D-Bus can carry are escaped (\xNN),
 * so that the message is always a valid D-Bus string, and a backslash is
 * shown as "\\", as cg_escape() does.  Every error message that quotes such
 * a string goes through here.  Returns buf; CG_QUOTE(s) gives it a buffer
 * of its own, valid to the end of the full expression's block (a compound
 * literal): for an argument of a printf. */
#define CG_QUOTE_MAX 256
#define CG_QUOTE_HEAD 96
#define CG_QUOTE_TAIL (CG_QUOTE_MAX - CG_QUOTE_HEAD)
#define CG_QUOTE_SIZE (4 * CG_QUOTE_MAX + 40)
const char *cg_quote(const char *s, char buf[static CG_QUOTE_SIZE]);
#define CG_QUOTE(s) cg_quote((s), (char[CG_QUOTE_SIZE]) { 0 })

/* Where cg_quote() cuts s, len bytes long (over CG_QUOTE_MAX): it keeps
 * s[0, *ret_head) and s[*ret_tail, len), counted in the bytes of s, not of
 * the quote (which escapes some).  The one rule: freezectl cuts a path in
 * its own words with it too (path_cut()), so that they and freezerd's
 * message in one line name a long path alike. */
void cg_quote_cut(const char *s, size_t len, size_t *ret_head, size_t *ret_tail);

/* cg_quote() of s that cg_escape() made (a name freezerd does not follow, as
 * its log shows it): its backslashes (its escapes, and its doubled ones) as
 * they are, not doubled again; cut as cg_quote() cuts the name or path it
 * shows, counted in that one's bytes (an escape as the one byte it shows),
 * never inside an escape, and its " (N bytes)" is that one's length. */
const char *cg_quote_shown(const char *s, char buf[static CG_QUOTE_SIZE]);
#define CG_QUOTE_SHOWN(s) cg_quote_shown((s), (char[CG_QUOTE_SIZE]) { 0 })

/* Whether s reads as itself in a message where cg_quote() puts it bare: not
 * empty, and no '/'-separated part of it starting or ending with white space,
 * which a reader does not see (" /pods" normalized is "/ /pods", read as two
 * paths; "/pods " as "/pods").  A message puts any other in double quotes,
 * as freezectl's words name such a path. */
bool cg_quote_plain(const char *s);

/* s as a message names a path: cg_quote(s), in double quotes (a '"' in it
 * as \", which cannot be mistaken for cg_quote()'s doubled backslash) where
 * it does not read as itself (!cg_quote_plain(s)), as freezectl's path_q()
 * names it.  With list, where it is one of a list of paths (a Timeout's,
 * operation_stays()'s), also where it holds a '"' or what separates such a
 * list and its sentences (", ", " and ", ": ", ". "): a name must not pass
 * for the list's end or for freezerd's words, which freezectl looks for
 * outside double quotes only. */
#define CG_QUOTE_NAMED_SIZE (CG_QUOTE_SIZE + CG_QUOTE_MAX + 2)
/* Whether q, a string as cg_quote() gives it, reads as one path in such a
 * list (cg_quote_named()'s rule for list): no '"', none of ", ", " and ",
 * ": ", ". ", and no end that meets the ", " or " and N more" after it so
 * ("/x," "/x:" "/x." "/x and").  The same for a string cut as cg_quote()
 * cuts it but not escaped (freezectl's path_q_list(), whose line is escaped
 * as a whole): an escape holds none of these characters. */
bool cg_quote_list_plain(const char *q);
const char *cg_quote_named(const char *s, bool list, char buf[static CG_QUOTE_NAMED_SIZE]);
#define CG_NAMED(s) cg_quote_named((s), false, (char[CG_QUOTE_NAMED_SIZE]) { 0 })
#define CG_NAMED_IN_LIST(s) cg_quote_named((s), true, (char[CG_QUOTE_NAMED_SIZE]) { 0 })

/* cg_quote_named() of s that cg_escape() made (a group freezerd does not
 * follow, OddGroup.shown), quoted as cg_quote_shown() quotes it: a path
 * that starts or ends with white space is in double quotes alike. */
const char *cg_quote_named_shown(const char *s, char buf[static CG_QUOTE_NAMED_SIZE]);
#define CG_NAMED_SHOWN(s) cg_quote_named_shown((s), (char[CG_QUOTE_NAMED_SIZE]) { 0 })

/* cg_quote_named_shown() of s, uncut: s whole, in double quotes where it
 * does not read as itself, malloc()ed (free() it).  For a path whose end
 * names what a cut would leave out (a group below levels the quote cuts
 * out, found only by the whole path).  NULL without the memory. */
char *cg_quote_named_shown_whole(const char *s);

/* "/a/b" -> "a/b", "/" -> "." : the form to hand to openat2() relative to the root fd. */
const char *cg_path_relative(const char *normalized);

/* openat2(rootfd, relpath, flags|O_CLOEXEC, mode) with
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV.
 * Returns fd or -errno (-ELOOP for a symlink, -EXDEV for an escape). */
int cg_openat_beneath(int rootfd, const char *relpath, int flags, mode_t mode);

/* Whether fd refers to a directory on a cgroup2 file system (fstatfs magic). */
int cg_fd_is_cgroup2_dir(int fd);

/* The kernel's id of the cgroup at name below dirfd (dirfd itself with name
 * NULL): its directory's inode number, the cgroup id that systemd shows as
 * ControlGroupId and bpf uses, unique among the cgroups of one boot. */
int cg_dir_id(int dirfd, const char *name, uint64_t *ret);

/* Renames a damaged file (a batch journal, tracked.json) out of the way, to
 * NAME.broken or, where one of an earlier start is kept already,
 * NAME.2.broken, NAME.3.broken...: never over one kept before, which an
 * operator may not have read yet.  *ret_kept names the one tried
 * last (free it; NULL if none was). */
int rename_broken(int dfd, const char *name, char **ret_kept);

/* Read from fd to its end (the size may be unknown in advance, as in procfs)
 * into a NUL-terminated malloc'ed buffer.  -EFBIG beyond max bytes. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* pread() the whole small file from offset 0 into buf (NUL-terminated).
 * Returns the length or -errno.  -EFBIG if it does not fit. */
ssize_t cg_read_fd(int fd, char *buf, size_t size);

/* Strict parsers: every line "key value\n"; unknown keys are ignored but the
 * required ones must be present exactly once with a valid value; otherwise
 * -EBADMSG. */
int cg_parse_events(const char *buf, size_t len, bool *ret_populated, bool *ret_frozen);
/* cgroup.freeze: "0\n" or "1\n" (the newline optional). */
int cg_parse_freeze(const char *buf, size_t len, bool *ret);
/* cg_read_fd() of an open cgroup.freeze, then cg_parse_freeze(): 0 or -errno. */
int cg_read_freeze_fd(int fd, bool *ret);
/* A flat keyed file (cgroup.stat, cgroup.stat.local): the decimal value of key;
 * -ENODATA if the key is absent. */
int cg_parse_keyed_u64(const char *buf, size_t len, const char *key, uint64_t *ret);
/* cgroup.stat.local: the value of "frozen_usec"; -ENODATA if the key is absent. */
int cg_parse_stat_local_frozen_usec(const char *buf, size_t len, uint64_t *ret);
