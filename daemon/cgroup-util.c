/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "cgroup-util.h"
#include "util.h"

#ifndef SYS_openat2
#  define SYS_openat2 437
#endif

#ifndef CGROUP2_SUPER_MAGIC
#  define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* /proc/self/mountinfo is small; anything above this is not a mountinfo file. */
#define MOUNTINFO_SIZE_MAX (64U * 1024U * 1024U)

/* ---------------------------------------------------------------------------
 * mountinfo
 * ------------------------------------------------------------------------- */

/* Returns the next space-separated field of [*p, end) and advances *p.  Runs of
 * spaces are tolerated.  Returns false when there is no further field. */
static bool next_field(const char **p, const char *end, const char **ret_start, size_t *ret_len) {
        const char *s = *p;

        while (s < end && *s == ' ')
                s++;
        if (s >= end)
                return false;

        const char *e = s;
        while (e < end && *e != ' ')
                e++;

        *ret_start = s;
        *ret_len = (size_t) (e - s);
        *p = e;
        return true;
}

static bool field_eq(const char *f, size_t n, const char *s) {
        return strlen(s) == n && memcmp(f, s, n) == 0;
}

static bool is_octal(char c) {
        return c >= '0' && c <= '7';
}

/* Decodes the kernel's mangle() escapes (\040 space, \011 tab, \012 newline,
 * \134 backslash; any \ooo is accepted).  A backslash that does not start a
 * valid escape is kept literally.  Returns -EBADMSG if the result would contain
 * a NUL byte. */
static int unescape_octal(const char *f, size_t n, char **ret) {
        _cleanup_free_ char *out = malloc(n + 1);
        size_t j = 0;

        if (!out)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                if (f[i] == '\\' && n - i >= 4 &&
                    is_octal(f[i + 1]) && is_octal(f[i + 2]) && is_octal(f[i + 3]) &&
                    f[i + 1] <= '3') {
                        unsigned v = (unsigned) (f[i + 1] - '0') * 64 +
                                     (unsigned) (f[i + 2] - '0') * 8 +
                                     (unsigned) (f[i + 3] - '0');
                        if (v == 0)
                                return -EBADMSG;
                        out[j++] = (char) v;
                        i += 3;
                        continue;
                }

                if (f[i] == '\0')
                        return -EBADMSG;
                out[j++] = f[i];
        }

        out[j] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

/* Parses one line (without its newline).  Returns 1 and sets *ret if it is a
 * cgroup2 mount, 0 if it is some other mount or garbage, -ENOMEM. */
static int parse_mountinfo_line(const char *line, size_t len, char **ret) {
        const char *p = line, *end = line + len;
        const char *f, *mountpoint = NULL;
        size_t n, mountpoint_len = 0;
        unsigned i;
        int r;

        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS */
        for (i = 0; i < 6; i++) {
                if (!next_field(&p, end, &f, &n))
                        return 0;
                if (i == 4) {
                        mountpoint = f;
                        mountpoint_len = n;
                }
        }

        /* Optional fields (any number) up to the "-" separator. */
        for (;;) {
                if (!next_field(&p, end, &f, &n))
                        return 0;
                if (field_eq(f, n, "-"))
                        break;
        }

        /* FSTYPE */
        if (!next_field(&p, end, &f, &n))
                return 0;
        if (!field_eq(f, n, "cgroup2"))
                return 0;

        _cleanup_free_ char *path = NULL;
        r = unescape_octal(mountpoint, mountpoint_len, &path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        if (path[0] != '/')
                return 0;

        *ret = TAKE_PTR(path);
        return 1;
}

int cg_parse_mountinfo_cgroup2(const char *text, size_t len, char **ret) {
        const char *p, *end;

        if (!ret)
                return -EINVAL;
        if (!text && len > 0)
                return -EINVAL;

        p = text;
        end = text ? text + len : NULL;

        while (p && p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *eol = nl ? nl : end;
                char *path = NULL;
                int r;

                r = parse_mountinfo_line(p, (size_t) (eol - p), &path);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret = path;
                        return 0;
                }

                p = nl ? nl + 1 : end;
        }

        return -ENOENT;
}

int cg_parse_mountinfo_cgroup2_all(const char *text, size_t len, char **ret, size_t *ret_size) {
        _cleanup_free_ char *list = NULL;
        size_t size = 0;

        if (!ret || !ret_size || (!text && len > 0))
                return -EINVAL;
        for (const char *p = text, *end = text ? text + len : NULL; p && p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *eol = nl ? nl : end;
                _cleanup_free_ char *path = NULL;
                int r = parse_mountinfo_line(p, (size_t) (eol - p), &path);

                if (r < 0)
                        return r;
                if (r > 0) {
                        size_t n = strlen(path) + 1;
                        char *l = realloc(list, size + n);

                        if (!l)
                                return -ENOMEM;
                        list = l;
                        memcpy(list + size, path, n);
                        size += n;
                }
                p = nl ? nl + 1 : end;
        }
        *ret = TAKE_PTR(list);
        *ret_size = size;
        return 0;
}

int rename_broken(int dfd, const char *name, char **ret_kept) {
        for (unsigned k = 1; k <= 1000; k++) {
                _cleanup_free_ char *broken = NULL;
                if ((k == 1 ? asprintf(&broken, "%s.broken", name) : asprintf(&broken, "%s.%u.broken", name, k)) < 0)
                        return -ENOMEM;
                int r = renameat2(dfd, name, dfd, broken, RENAME_NOREPLACE) >= 0 ? 0 : -errno;
                if (r == -EINVAL) { /* a file system without RENAME_NOREPLACE: ours is the only writer */
                        struct stat st;
                        if (fstatat(dfd, broken, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                                r = -EEXIST;
                        else
                                r = renameat(dfd, name, dfd, broken) >= 0 ? 0 : -errno;
                }
                free(*ret_kept);
                *ret_kept = TAKE_PTR(broken);
                if (r != -EEXIST)
                        return r;
        }
        return -EEXIST;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t allocated = 0, n = 0;

        for (;;) {
                ssize_t k;

                if (allocated - n < 4096) {
                        size_t m = allocated ? allocated * 2 : 16384;
                        char *b;

                        if (m > max + 1)
                                m = max + 1;
                        if (m <= n)
                                return -EFBIG;

                        b = realloc(buf, m);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        allocated = m;
                }

                k = read(fd, buf + n, allocated - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;

                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }

        buf[n] = 0; /* reads ask for less than allocated: there is room */
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

static int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

int cg_find_cgroup2_mount(const char *mountinfo_path, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        if (!ret)
                return -EINVAL;

        r = read_full_file(mountinfo_path ?: "/proc/self/mountinfo", MOUNTINFO_SIZE_MAX, &text, &len);
        if (r < 0)
                return r;

        return cg_parse_mountinfo_cgroup2(text, len, ret);
}

int cg_find_cgroup2_mounts(char **ret, size_t *ret_size) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        r = read_full_file("/proc/self/mountinfo", MOUNTINFO_SIZE_MAX, &text, &len);
        if (r < 0)
                return r;
        return cg_parse_mountinfo_cgroup2_all(text, len, ret, ret_size);
}

/* ---------------------------------------------------------------------------
 * API paths
 * ------------------------------------------------------------------------- */

size_t cg_utf8_char_len(const unsigned char *s, bool refuse_noncharacters) {
        unsigned char c = *s;
        size_t n;
        uint32_t cp, min;

        if (c < 0x80)
                return 1;
        else if ((c & 0xe0) == 0xc0) {
                n = 1;
                cp = c & 0x1f;
                min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
                n = 2;
                cp = c & 0x0f;
                min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
                n = 3;
                cp = c & 0x07;
                min = 0x10000;
        } else
                return 0;

        for (size_t i = 1; i <= n; i++) {
                /* Also stops at the terminating NUL, which is not a continuation byte. */
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }

        if (cp < min)
                return 0; /* overlong */
        if (cp >= 0xd800 && cp <= 0xdfff)
                return 0; /* surrogate */
        if (cp > 0x10ffff)
                return 0;
        if (refuse_noncharacters && ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe))
                return 0;
        return n + 1;
}

static bool utf8_check(const char *str, bool refuse_noncharacters) {
        for (const unsigned char *s = (const unsigned char *) str; *s;) {
                size_t n = cg_utf8_char_len(s, refuse_noncharacters);
                if (n == 0)
                        return false;
                s += n;
        }
        return true;
}

static bool utf8_is_valid(const char *str) {
        return utf8_check(str, false);
}

static bool has_control_char(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || (unsigned char) *s == 0x7f)
                        return true;
        return false;
}

bool cg_name_is_publishable(const char *name) {
        return utf8_check(name, true) && !has_control_char(name);
}

const char *cg_escape(const char *s, bool escape_high, char *buf, size_t size) {
        size_t k = 0;

        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (k + 8 >= size) {
                        memcpy(buf + k, "...", 4);
                        return buf;
                }
                if (*p < 0x20 || *p == 0x7f || (escape_high && *p > 0x7f))
                        k += (size_t) snprintf(buf + k, size - k, "\\x%02x", *p);
                else if (*p == '\\') {
                        /* So that a name holding a literal "\x0a" does not read as an escape. */
                        buf[k++] = '\\';
                        buf[k++] = '\\';
                } else
                        buf[k++] = (char) *p;
        }
        buf[k] = 0;
        return buf;
}

/* In a string cg_escape() made, the length of the escape at p ("\\" or
 * "\xNN"), kept whole where a quote cuts the string; 0 for none. */
static size_t shown_escape_len(const unsigned char *p, const unsigned char *end) {
        if (*p != '\\' || end - p < 2)
                return 0;
        if (p[1] == '\\')
                return 2;
        return p[1] == 'x' && end - p >= 4 ? 4 : 0;
}

void cg_quote_cut(const char *s, size_t len, size_t *ret_head, size_t *ret_tail) {
        const unsigned char *p = (const unsigned char *) s, *end = p + len, *tail;
        size_t head = 0;

        /* The head, in the string's own bytes (not in the quote's, which
         * escapes some), up to the character that would pass CG_QUOTE_HEAD. */
        while (head < CG_QUOTE_HEAD) {
                size_t n = cg_utf8_char_len(p + head, true) ?: 1;

                if (head + n > CG_QUOTE_HEAD)
                        break;
                head += n;
        }
        /* The tail: a path's leaf, which tells siblings apart, is at its end.
         * It starts on the first character that begins in the last
         * CG_QUOTE_TAIL bytes (a continuation byte there is skipped; at most 3,
         * as a character has 4 bytes at most: beyond, they are no UTF-8 and
         * are escaped one by one). */
        tail = end - CG_QUOTE_TAIL;
        for (unsigned i = 0; i < 3 && (*tail & 0xc0) == 0x80; i++)
                tail++;
        *ret_head = head;
        *ret_tail = (size_t) (tail - p);
}

/* In a string cg_escape() made, the unit at p: an escape, a character, or a
 * byte that is neither; *ret_stands: how many bytes of the name or path it
 * shows it stands for (an escape one).  Returns its length in the string. */
static size_t shown_unit(const unsigned char *p, const unsigned char *end, size_t *ret_stands) {
        size_t e = shown_escape_len(p, end), n = cg_utf8_char_len(p, true) ?: 1;

        *ret_stands = e ? 1 : n;
        return e ?: n;
}

/* The length of the name or path that cg_escape() showed as [p, end). */
static size_t shown_unescaped_len(const unsigned char *p, const unsigned char *end) {
        size_t n = 0, stands;

        while (p < end) {
                p += shown_unit(p, end, &stands);
                n += stands;
        }
        return n;
}

/* cg_quote_cut() of a string cg_escape() made, ulen the length of what it
 * shows (over CG_QUOTE_MAX): the same rule, counted in the bytes of the name
 * or path it shows (an escape one), as cg_quote() counts and cuts that path,
 * and never inside an escape.  *ret_head, *ret_tail in the string's bytes. */
static void shown_cut(const unsigned char *p, const unsigned char *end, size_t ulen, size_t *ret_head,
                      size_t *ret_tail) {
        const unsigned char *q = p;
        size_t u = 0, stands, l;

        for (; q < end; q += l, u += stands) {
                l = shown_unit(q, end, &stands);
                if (u + stands > CG_QUOTE_HEAD)
                        break;
        }
        *ret_head = (size_t) (q - p);
        /* The tail from the first unit that begins in the last CG_QUOTE_TAIL
         * bytes shown (from the start: a backslash there may be the second
         * of "\\"). */
        for (q = p, u = 0; q < end && u < ulen - CG_QUOTE_TAIL; q += l, u += stands)
                l = shown_unit(q, end, &stands);
        *ret_tail = (size_t) (q - p);
}

/* The bytes [p, end) of a quote into buf at k, whole characters (and with
 * shown whole escapes) only: a backslash doubled, but with shown (a string
 * cg_escape() made) as it is.  Returns the new k. */
static size_t quote_part(const unsigned char *p, const unsigned char *end, bool shown, char *buf, size_t k) {
        while (p < end) {
                size_t n = cg_utf8_char_len(p, true), e = shown ? shown_escape_len(p, end) : 0;

                if (e > 0) {
                        memcpy(buf + k, p, e);
                        k += e;
                        p += e;
                        continue;
                }
                if (n == 0 || *p < 0x20 || *p == 0x7f) {
                        /* No character D-Bus can carry, or a control one: as cg_escape(). */
                        k += (size_t) snprintf(buf + k, CG_QUOTE_SIZE - k, "\\x%02x", *p);
                        p++;
                        continue;
                }
                if (*p == '\\' && !shown) {
                        /* As cg_escape(): 2 bytes, below the 4 of an escape. */
                        buf[k++] = '\\';
                        buf[k++] = '\\';
                        p++;
                        continue;
                }
                memcpy(buf + k, p, n);
                k += n;
                p += n;
        }
        return k;
}

/* With shown, s is a name or path as cg_escape() showed it: cut, and its
 * "(N bytes)" counted, in the bytes of that name or path (an escape one), as
 * any group's path is, not in those of its escaped form.  Each byte it
 * stands for takes 4 bytes of the quote at most (\xNN): it fits
 * CG_QUOTE_SIZE. */
static const char *quote(const char *s, bool shown, char buf[static CG_QUOTE_SIZE]) {
        const unsigned char *p = (const unsigned char *) s, *end;
        size_t len = strlen(s), ulen, head, tail, k;

        end = p + len;
        ulen = shown ? shown_unescaped_len(p, end) : len;
        if (ulen <= CG_QUOTE_MAX) {
                buf[quote_part(p, end, shown, buf, 0)] = 0;
                return buf;
        }
        if (shown)
                shown_cut(p, end, ulen, &head, &tail);
        else
                cg_quote_cut(s, len, &head, &tail);
        k = quote_part(p, p + head, shown, buf, 0);
        memcpy(buf + k, "...", 3);
        k += 3;
        k = quote_part(p + tail, end, shown, buf, k);
        snprintf(buf + k, CG_QUOTE_SIZE - k, " (%zu bytes)", ulen);
        return buf;
}

const char *cg_quote(const char *s, char buf[static CG_QUOTE_SIZE]) {
        return quote(s, false, buf);
}

const char *cg_quote_shown(const char *s, char buf[static CG_QUOTE_SIZE]) {
        return quote(s, true, buf);
}

bool cg_quote_plain(const char *s) {
        static const char white[] = " \t\n\v\f\r";

        if (!*s)
                return false;
        for (const char *p = s; *p; p++)
                if (strchr(white, *p) &&
                    (p == s || p[-1] == '/' || !p[1] || p[1] == '/'))
                        return false;
        return true;
}

bool cg_quote_list_plain(const char *q) {
        static const char *const words[] = { ", ", " and ", ": ", ". " };
        size_t n = strlen(q);

        if (strchr(q, '"'))
                return false;
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
                size_t w = strlen(words[i]) - 1; /* without its last space */

                if (strstr(q, words[i]) || (n >= w && strncmp(q + n - w, words[i], w) == 0))
                        return false;
        }
        return true;
}

/* The bytes put_in_quotes() writes of q, its NUL included. */
static size_t in_quotes_size(const char *q) {
        size_t n = 3;

        for (; *q; q++)
                n += *q == '"' ? 2 : 1;
        return n;
}

/* q in double quotes into buf (in_quotes_size(q) bytes), each '"' in it as
 * \": q's backslashes are doubled (cg_quote()) or escapes (cg_escape()), so
 * a \" inside is the name's quote, and the first bare one ends the path. */
static char *put_in_quotes(const char *q, char *buf) {
        size_t k = 0;

        buf[k++] = '"';
        for (; *q; q++) {
                if (*q == '"')
                        buf[k++] = '\\';
                buf[k++] = *q;
        }
        buf[k++] = '"';
        buf[k] = 0;
        return buf;
}

static const char *quote_named(const char *s, bool shown, bool list, char buf[static CG_QUOTE_NAMED_SIZE]) {
        char quoted[CG_QUOTE_SIZE];
        const char *q = quote(s, shown, quoted);

        if (cg_quote_plain(s) && (!list || cg_quote_list_plain(q))) {
                memcpy(buf, q, strlen(q) + 1);
                return buf;
        }
        return put_in_quotes(q, buf);
}

const char *cg_quote_named(const char *s, bool list, char buf[static CG_QUOTE_NAMED_SIZE]) {
        return quote_named(s, false, list, buf);
}

const char *cg_quote_named_shown(const char *s, char buf[static CG_QUOTE_NAMED_SIZE]) {
        /* Its escapes hold no white space (a control character is \xNN),
         * so cg_quote_plain() reads it as it reads the path it shows. */
        return quote_named(s, true, false, buf);
}

char *cg_quote_named_shown_whole(const char *s) {
        char *buf;

        if (cg_quote_plain(s))
                return strdup(s);
        buf = malloc(in_quotes_size(s));
        if (!buf)
                return NULL;
        return put_in_quotes(s, buf);
}

/* Checks in, and on success returns the part to keep (after the leading '/',
 * without the trailing '/') as [*ret_start, *ret_start + *ret_len).  On
 * failure returns -EINVAL or -ENAMETOOLONG and sets *ret_reason. */
static int path_check(const char *in, const char **ret_start, size_t *ret_len, const char **ret_reason) {
        const char *s, *p;
        size_t len;

        if (in[0] == '\0') {
                *ret_reason = "is empty";
                return -EINVAL;
        }
        if (!utf8_is_valid(in)) {
                *ret_reason = "is not valid UTF-8";
                return -EINVAL;
        }
        if (has_control_char(in)) {
                *ret_reason = "contains a control character";
                return -EINVAL;
        }

        s = in[0] == '/' ? in + 1 : in;
        len = strlen(s);
        if (len == 0) {
                /* "/" */
                *ret_start = s;
                *ret_len = 0;
                return 0;
        }
        if (s[len - 1] == '/')
                len--; /* one trailing slash is fine */

        /* Walk the components of s[0, len); len == 0 here means the input was "//". */
        for (p = s;;) {
                size_t left = len - (size_t) (p - s);
                const char *slash = memchr(p, '/', left);
                size_t n = slash ? (size_t) (slash - p) : left;

                if (n == 0) {
                        *ret_reason = "contains an empty component ('//')";
                        return -EINVAL;
                }
                if (n == 1 && p[0] == '.') {
                        *ret_reason = "contains a '.' component";
                        return -EINVAL;
                }
                if (n == 2 && p[0] == '.' && p[1] == '.') {
                        *ret_reason = "contains a '..' component";
                        return -EINVAL;
                }
                if (n > NAME_MAX) {
                        *ret_reason = "has a component longer than NAME_MAX";
                        return -ENAMETOOLONG;
                }

                if (!slash)
                        break;
                p = slash + 1;
        }

        /* The result, '/' + s[0, len) + NUL, must fit in PATH_MAX bytes. */
        if (len + 2 > PATH_MAX) {
                *ret_reason = "is longer than PATH_MAX";
                return -ENAMETOOLONG;
        }

        *ret_start = s;
        *ret_len = len;
        return 0;
}

int cg_path_normalize(const char *in, char **ret, const char **ret_reason) {
        const char *reason = NULL, *start = NULL;
        size_t len = 0;
        char *out;
        int r;

        if (ret_reason)
                *ret_reason = NULL;

        if (!in || !ret) {
                if (ret_reason)
                        *ret_reason = "is missing";
                return -EINVAL;
        }

        r = path_check(in, &start, &len, &reason);
        if (r < 0) {
                if (ret_reason)
                        *ret_reason = reason;
                return r;
        }

        out = malloc(len + 2);
        if (!out)
                return -ENOMEM;
        out[0] = '/';
        memcpy(out + 1, start, len);
        out[len + 1] = '\0';

        *ret = out;
        return 0;
}

const char *cg_path_relative(const char *normalized) {
        if (!normalized)
                return NULL;

        while (*normalized == '/')
                normalized++;

        return *normalized ? normalized : ".";
}

/* ---------------------------------------------------------------------------
 * File access
 * ------------------------------------------------------------------------- */

/* For environments whose syscall layer lacks openat2() (valgrind 3.19 among
 * them): walk the path one component at a time with O_NOFOLLOW, refusing
 * "..", symlinks (ELOOP) and mount crossings (EXDEV), which is what the
 * RESOLVE_* flags give us on a real kernel. */
static int openat_beneath_fallback(int rootfd, const char *relpath, int flags, mode_t mode) {
        _cleanup_free_ char *copy = strdup(relpath);
        _cleanup_close_ int dir = -1;
        struct stat root_st, st;
        char *p, *next;
        int cur, fd;

        if (!copy)
                return -ENOMEM;
        if (relpath[0] == '/')
                return -EXDEV;
        if (fstat(rootfd, &root_st) < 0)
                return -errno;
        cur = rootfd;
        for (p = copy; p; p = next) {
                next = strchr(p, '/');
                if (next)
                        *next++ = 0;
                if (streq(p, ".."))
                        return -EXDEV;
                if (*p == 0 || (streq(p, ".") && next))
                        continue;
                if (next) {
                        int d = openat(cur, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (d < 0)
                                return errno == ENOTDIR ? -ELOOP : -errno;
                        if (fstat(d, &st) < 0 || st.st_dev != root_st.st_dev) {
                                close(d);
                                return -EXDEV;
                        }
                        closep(&dir);
                        dir = d;
                        cur = d;
                        continue;
                }
                fd = openat(cur, p, flags | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, &st) < 0 || st.st_dev != root_st.st_dev) {
                        close(fd);
                        return -EXDEV;
                }
                return fd;
        }
        return -EINVAL;
}

int cg_openat_beneath(int rootfd, const char *relpath, int flags, mode_t mode) {
        struct open_how how = {
                .flags = (uint64_t) (unsigned) (flags | O_CLOEXEC),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        long fd;

        if (rootfd < 0)
                return -EBADF;
        if (!relpath || relpath[0] == '\0')
                return -EINVAL;

        /* openat2() refuses a non-zero mode unless a file may be created. */
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
                how.mode = mode;

        fd = syscall(SYS_openat2, rootfd, relpath, &how, sizeof how);
        if (fd < 0 && errno == ENOSYS)
                return openat_beneath_fallback(rootfd, relpath, flags, mode);
        if (fd < 0)
                return -errno;

        return (int) fd;
}

int cg_fd_is_cgroup2_dir(int fd) {
        struct statfs sfs;
        struct stat st;

        if (fd < 0)
                return -EBADF;

        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;

        return (unsigned long) sfs.f_type == (unsigned long) CGROUP2_SUPER_MAGIC && S_ISDIR(st.st_mode);
}

int cg_dir_id(int dirfd, const char *name, uint64_t *ret) {
        struct statx stx;

        if (statx(dirfd, name ?: "", (name ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH) | AT_STATX_DONT_SYNC, STATX_INO,
                  &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_INO))
                return -EOPNOTSUPP;
        *ret = stx.stx_ino;
        return 0;
}

ssize_t cg_read_fd(int fd, char *buf, size_t size) {
        size_t n = 0;

        if (fd < 0)
                return -EBADF;
        if (!buf || size == 0 || size > SSIZE_MAX)
                return -EINVAL;

        for (;;) {
                ssize_t k;

                if (n == size - 1) {
                        /* The buffer is full: is there more? */
                        char c;

                        k = pread(fd, &c, 1, (off_t) n);
                        if (k < 0) {
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        if (k > 0)
                                return -EFBIG;
                        break;
                }

                k = pread(fd, buf + n, size - 1 - n, (off_t) n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                /* kernfs and procfs seq files hand out all that fits in one read:
                 * a short read is the end (a second pread would make the kernel
                 * format the whole file again only to find nothing). */
                if (n < size - 1)
                        break;
        }

        buf[n] = '\0';
        return (ssize_t) n;
}

/* ---------------------------------------------------------------------------
 * Parsers
 * ------------------------------------------------------------------------- */

/* Decimal digits only, at least one, no sign, no overflow. */
static int parse_u64(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;

        if (n == 0)
                return -EBADMSG;

        for (size_t i = 0; i < n; i++) {
                unsigned d;

                if (s[i] < '0' || s[i] > '9')
                        return -EBADMSG;
                d = (unsigned) (s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EBADMSG;
                v = v * 10 + d;
        }

        *ret = v;
        return 0;
}

static int parse_bool01(const char *s, size_t n, bool *ret) {
        if (n != 1 || (s[0] != '0' && s[0] != '1'))
                return -EBADMSG;
        *ret = s[0] == '1';
        return 0;
}

typedef struct KeyValue {
        const char *key;
        size_t key_len;
        const char *value;
        size_t value_len;
} KeyValue;

/* Iterates over "key value\n" lines.  Returns 1 with *kv filled, 0 at the end,
 * -EBADMSG for a malformed line: an empty line, no single space separating a
 * non-empty key from a non-empty value, or a NUL byte.  The last line may lack
 * its newline. */
static int next_key_value(const char **p, const char *end, KeyValue *kv) {
        const char *line = *p, *nl, *eol, *sp;

        if (line >= end)
                return 0;

        nl = memchr(line, '\n', (size_t) (end - line));
        eol = nl ? nl : end;

        if (memchr(line, '\0', (size_t) (eol - line)))
                return -EBADMSG;

        sp = memchr(line, ' ', (size_t) (eol - line));
        if (!sp || sp == line || sp + 1 >= eol || sp[1] == ' ')
                return -EBADMSG;

        kv->key = line;
        kv->key_len = (size_t) (sp - line);
        kv->value = sp + 1;
        kv->value_len = (size_t) (eol - sp - 1);

        *p = nl ? nl + 1 : end;
        return 1;
}

int cg_parse_events(const char *buf, size_t len, bool *ret_populated, bool *ret_frozen) {
        const char *p, *end;
        bool populated = false, frozen = false, have_populated = false, have_frozen = false;
        KeyValue kv;
        int r;

        if (!buf && len > 0)
                return -EINVAL;
        if (!buf)
                return -EBADMSG;

        p = buf;
        end = buf + len;
        while ((r = next_key_value(&p, end, &kv)) > 0) {
                bool *value, *have;

                if (field_eq(kv.key, kv.key_len, "populated")) {
                        value = &populated;
                        have = &have_populated;
                } else if (field_eq(kv.key, kv.key_len, "frozen")) {
                        value = &frozen;
                        have = &have_frozen;
                } else
                        continue;
                if (*have) /* the same key twice */
                        return -EBADMSG;
                r = parse_bool01(kv.value, kv.value_len, value);
                if (r < 0)
                        return r;
                *have = true;
        }
        if (r < 0)
                return r;

        if (!have_populated || !have_frozen)
                return -EBADMSG;

        if (ret_populated)
                *ret_populated = populated;
        if (ret_frozen)
                *ret_frozen = frozen;
        return 0;
}

int cg_parse_freeze(const char *buf, size_t len, bool *ret) {
        if (!buf)
                return -EBADMSG;

        if (len == 2 && buf[1] != '\n')
                return -EBADMSG;
        if (len != 1 && len != 2)
                return -EBADMSG;

        bool b;
        int r = parse_bool01(buf, 1, &b);
        if (r < 0)
                return r;
        if (ret)
                *ret = b;
        return 0;
}

int cg_read_freeze_fd(int fd, bool *ret) {
        char buf[16];
        ssize_t n = cg_read_fd(fd, buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return cg_parse_freeze(buf, (size_t) n, ret);
}

int cg_parse_keyed_u64(const char *buf, size_t len, const char *key, uint64_t *ret) {
        const char *p, *end;
        uint64_t v = 0;
        bool have = false;
        KeyValue kv;
        int r;

        if (!key || (!buf && len > 0))
                return -EINVAL;
        if (!buf)
                return -ENODATA;

        p = buf;
        end = buf + len;
        while ((r = next_key_value(&p, end, &kv)) > 0) {
                if (!field_eq(kv.key, kv.key_len, key))
                        continue;
                if (have)
                        return -EBADMSG;
                r = parse_u64(kv.value, kv.value_len, &v);
                if (r < 0)
                        return r;
                have = true;
        }
        if (r < 0)
                return r;

        if (!have)
                return -ENODATA;

        if (ret)
                *ret = v;
        return 0;
}

int cg_parse_stat_local_frozen_usec(const char *buf, size_t len, uint64_t *ret) {
        return cg_parse_keyed_u64(buf, len, "frozen_usec", ret);
}
