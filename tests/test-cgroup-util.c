/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "cgroup-util.h"
#include "util.h"
#include "test-util.h"

/* valgrind < 3.22 (Debian 12 ships 3.19) does not know openat2() and fails it
 * with ENOSYS; the kernel has it since 5.6. */
static bool have_openat2 = true;

static void probe_openat2(void) {
        _cleanup_close_ int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd;

        if (root < 0)
                return;

        /* Ask the kernel directly: cg_openat_beneath() falls back to a
         * component walk without openat2(), which refuses every "..". */
        struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC };
        fd = (int) syscall(SYS_openat2, root, ".", &how, sizeof how);
        if (fd < 0 && errno == ENOSYS) {
                fprintf(stderr, "openat2() is not available (running under an old valgrind?), "
                        "testing the fallback of cg_openat_beneath()\n");
                have_openat2 = false;
        } else if (fd >= 0)
                close(fd);
}

/* ------------------------------------------------------------------------- */

static void test_mountinfo_real(void) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1, fd2 = -1, fd3 = -1;
        int r;

        r = cg_find_cgroup2_mount(NULL, &path);
        if (r == -ENOENT) {
                fprintf(stderr, "no cgroup2 mount on this machine, skipping the real mountinfo test\n");
                return;
        }
        CHECK_R(r, 0);
        if (r < 0)
                return;
        CHECK(path && path[0] == '/');

        /* The path found must really be a cgroup2 directory. */
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);
        if (fd >= 0)
                CHECK_R(cg_fd_is_cgroup2_dir(fd), 1);

        /* On the development machine (hybrid layout) it is /sys/fs/cgroup/unified. */
        fd2 = open("/sys/fs/cgroup/unified", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd2 >= 0 && cg_fd_is_cgroup2_dir(fd2) > 0)
                CHECK_STR(path, "/sys/fs/cgroup/unified");

        /* Explicit path gives the same answer. */
        _cleanup_free_ char *path2 = NULL;
        CHECK_R(cg_find_cgroup2_mount("/proc/self/mountinfo", &path2), 0);
        CHECK_STR(path2, path);

        /* A file in a cgroup2 file system is not a cgroup2 directory. */
        if (fd >= 0) {
                fd3 = cg_openat_beneath(fd, "cgroup.procs", O_RDONLY, 0);
                CHECK(fd3 >= 0);
                if (fd3 >= 0)
                        CHECK_R(cg_fd_is_cgroup2_dir(fd3), 0);
        }

        _cleanup_free_ char *none = NULL;
        CHECK_R(cg_find_cgroup2_mount("/nonexistent/mountinfo", &none), -ENOENT);
        CHECK(!none);
}

static int parse_mi(const char *text, char **ret) {
        return cg_parse_mountinfo_cgroup2(text, strlen(text), ret);
}

static void test_mountinfo_synthetic(void) {
        char *p = NULL;

        /* Hybrid layout, no optional fields. */
        CHECK_R(parse_mi("30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
                         "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                         "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n", &p), 0);
        CHECK_STR(p, "/sys/fs/cgroup/unified");
        free(p), p = NULL;

        /* Optional fields, several of them; last line without newline. */
        CHECK_R(parse_mi("25 1 0:22 / /sys rw shared:7 - sysfs sysfs rw\n"
                         "26 25 0:23 / /sys/fs/cgroup rw,nosuid shared:8 master:1 propagate_from:2 unbindable - cgroup2 cgroup2 rw,nsdelegate", &p), 0);
        CHECK_STR(p, "/sys/fs/cgroup");
        free(p), p = NULL;

        /* First cgroup2 mount wins. */
        CHECK_R(parse_mi("1 0 0:1 / /a rw - cgroup2 none rw\n"
                         "2 0 0:2 / /b rw - cgroup2 none rw\n", &p), 0);
        CHECK_STR(p, "/a");
        free(p), p = NULL;

        /* Escapes: space, tab, newline, backslash. */
        CHECK_R(parse_mi("1 0 0:1 / /mnt/my\\040cg\\011x\\012y\\134z rw - cgroup2 cgroup2 rw\n", &p), 0);
        CHECK_STR(p, "/mnt/my cg\tx\ny\\z");
        free(p), p = NULL;

        /* Invalid escape is kept literally; \000 makes the line garbage. */
        CHECK_R(parse_mi("1 0 0:1 / /mnt/a\\09 rw - cgroup2 cgroup2 rw\n", &p), 0);
        CHECK_STR(p, "/mnt/a\\09");
        free(p), p = NULL;
        CHECK_R(parse_mi("1 0 0:1 / /mnt/a\\000 rw - cgroup2 cgroup2 rw\n", &p), -ENOENT);
        CHECK_R(parse_mi("1 0 0:1 / /mnt/a\\", &p), -ENOENT);

        /* The optional field "-" is the separator, not a field named e.g. "-x". */
        CHECK_R(parse_mi("1 0 0:1 / /x rw -x - tmpfs cgroup2 rw\n"
                         "2 0 0:1 / /y rw - cgroup2 cgroup2 rw\n", &p), 0);
        CHECK_STR(p, "/y");
        free(p), p = NULL;

        /* Source "cgroup2" does not make a cgroup2 mount, nor does "cgroup". */
        CHECK_R(parse_mi("1 0 0:1 / /x rw - tmpfs cgroup2 rw\n", &p), -ENOENT);
        CHECK_R(parse_mi("1 0 0:1 / /x rw - cgroup cgroup rw\n", &p), -ENOENT);
        CHECK_R(parse_mi("1 0 0:1 / /x rw - cgroup2x cgroup2 rw\n", &p), -ENOENT);

        /* No cgroup2 / empty. */
        CHECK_R(parse_mi("", &p), -ENOENT);
        CHECK_R(cg_parse_mountinfo_cgroup2(NULL, 0, &p), -ENOENT);
        CHECK_R(parse_mi("\n\n\n", &p), -ENOENT);
        CHECK_R(parse_mi("30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n", &p), -ENOENT);

        /* Garbage lines are skipped, a good line after them is found. */
        CHECK_R(parse_mi("garbage\n"
                         "1 2 3\n"
                         "1 0 0:1 / /x rw cgroup2 cgroup2 rw\n"      /* no separator */
                         "1 0 0:1 / /x rw -\n"                       /* nothing after it */
                         "1 0 0:1 / relative rw - cgroup2 c rw\n"    /* not absolute */
                         " - - - - - - - cgroup2\n"
                         "-\n"
                         "\xff\xfe\x01 \\\\\\\n"
                         "9 0 0:1 / /good rw - cgroup2 cgroup2 rw\n", &p), 0);
        CHECK_STR(p, "/good");
        free(p), p = NULL;

        /* Multiple spaces between fields are tolerated. */
        CHECK_R(parse_mi("1  0 0:1 /   /x rw  -  cgroup2 cgroup2 rw\n", &p), 0);
        CHECK_STR(p, "/x");
        free(p), p = NULL;

        /* Embedded NUL bytes: not a C string, but must not crash.  A NUL in the
         * mount point makes the line garbage. */
        static const char with_nul[] = "1 0 0:1 / /a\0b rw - cgroup2 c rw\n2 0 0:1 / /c rw - cgroup2 c rw\n";
        CHECK_R(cg_parse_mountinfo_cgroup2(with_nul, sizeof with_nul - 1, &p), 0);
        CHECK_STR(p, "/c");
        free(p), p = NULL;

        /* Length is honored: the cgroup2 line is beyond len. */
        const char *two = "1 0 0:1 / /x rw - tmpfs t rw\n2 0 0:1 / /y rw - cgroup2 c rw\n";
        CHECK_R(cg_parse_mountinfo_cgroup2(two, 29, &p), -ENOENT);
        /* Truncated in the middle of the fs type. */
        CHECK_R(cg_parse_mountinfo_cgroup2(two, 29 + 22, &p), -ENOENT);
        CHECK_R(cg_parse_mountinfo_cgroup2(two, 29 + 25, &p), 0);
        CHECK_STR(p, "/y");
        free(p), p = NULL;

        /* Every prefix of a realistic text: no crash (ASan would tell). */
        const char *text = "26 25 0:23 / /sys/fs/cgroup/un\\040ified rw,nosuid shared:8 - cgroup2 cgroup2 rw\n";
        for (size_t i = 0; i <= strlen(text); i++) {
                char *copy = malloc(i ? i : 1);
                CHECK(copy);
                if (!copy)
                        break;
                memcpy(copy, text, i);
                if (cg_parse_mountinfo_cgroup2(copy, i, &p) == 0)
                        free(p), p = NULL;
                free(copy);
        }
}

/* Every cgroup2 mount, for freezectl's hint: in order, decoded, garbage and
 * other file systems left out. */
static void test_mountinfo_all(void) {
        static const char text[] = "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
                                   "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
                                   "41 30 0:37 / /mnt/my\\040cg rw shared:2 - cgroup2 none rw\n"
                                   "garbage\n"
                                   "42 30 0:38 / /x rw - cgroup cgroup rw,cpu";
        static const char expected[] = "/sys/fs/cgroup/unified\0/mnt/my cg";
        char *list = NULL;
        size_t size = 99;

        CHECK_R(cg_parse_mountinfo_cgroup2_all(text, sizeof text - 1, &list, &size), 0);
        CHECK(size == sizeof expected && list && memcmp(list, expected, size) == 0);
        free(list), list = NULL;
        CHECK_R(cg_parse_mountinfo_cgroup2_all("", 0, &list, &size), 0);
        CHECK(size == 0 && !list);
        CHECK_R(cg_parse_mountinfo_cgroup2_all(NULL, 0, &list, &size), 0);
        CHECK(size == 0 && !list);
        CHECK_R(cg_parse_mountinfo_cgroup2_all(NULL, 1, &list, &size), -EINVAL);
        /* The real one holds the mount freezerd finds first. */
        _cleanup_free_ char *first = NULL;
        if (cg_find_cgroup2_mount(NULL, &first) == 0) {
                CHECK_R(cg_find_cgroup2_mounts(&list, &size), 0);
                CHECK(list && size > strlen(first) && streq(list, first));
                free(list);
        }
}

/* ------------------------------------------------------------------------- */

static void check_norm_ok(const char *in, const char *expected, int line) {
        _cleanup_free_ char *out = NULL;
        const char *reason = "unset";
        int r;

        r = cg_path_normalize(in, &out, &reason);
        if (r < 0 || !streq_ptr(out, expected) || reason) {
                fprintf(stderr, "%s:%d: cg_path_normalize(\"%s\") = %d \"%s\" (%s), expected \"%s\"\n",
                        __FILE__, line, in, r, out ?: "(null)", reason ?: "no reason", expected);
                test_failures++;
        }
}

static void check_norm_fail(const char *in, int expected_r, const char *expected_reason, int line) {
        _cleanup_free_ char *out = NULL;
        const char *reason = NULL;
        int r;

        r = cg_path_normalize(in, &out, &reason);
        if (r != expected_r || out || !streq_ptr(reason, expected_reason)) {
                fprintf(stderr, "%s:%d: cg_path_normalize(\"%.40s%s\") = %d \"%s\" (%s), expected %d (%s)\n",
                        __FILE__, line, in, strlen(in) > 40 ? "..." : "",
                        r, out ?: "(null)", reason ?: "no reason", expected_r, expected_reason);
                test_failures++;
        }
}

#define NORM_OK(in, exp) check_norm_ok((in), (exp), __LINE__)
#define NORM_FAIL(in, r, reason) check_norm_fail((in), (r), (reason), __LINE__)

#define R_EMPTY "is empty"
#define R_DOTDOT "contains a '..' component"
#define R_DOT "contains a '.' component"
#define R_SLASHES "contains an empty component ('//')"
#define R_UTF8 "is not valid UTF-8"
#define R_CTRL "contains a control character"
#define R_PATH_MAX "is longer than PATH_MAX"
#define R_NAME_MAX "has a component longer than NAME_MAX"

static void test_path_normalize(void) {
        NORM_OK("/", "/");
        NORM_OK("a", "/a");
        NORM_OK("a/b", "/a/b");
        NORM_OK("/a/b", "/a/b");
        NORM_OK("/a/b/", "/a/b");
        NORM_OK("a/b/", "/a/b");
        NORM_OK("/pods/pod1", "/pods/pod1");
        NORM_OK("/a/...", "/a/...");
        NORM_OK("/.hidden/..x/x..", "/.hidden/..x/x..");
        NORM_OK("/a b/c-d_e:f@g", "/a b/c-d_e:f@g");
        NORM_OK("/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80", "/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80");
        NORM_OK("/\xef\xbf\xbf/\xf4\x8f\xbf\xbf", "/\xef\xbf\xbf/\xf4\x8f\xbf\xbf"); /* U+FFFF, U+10FFFF */
        NORM_OK("/\xed\x9f\xbf/\xee\x80\x80", "/\xed\x9f\xbf/\xee\x80\x80");         /* U+D7FF, U+E000 */

        NORM_FAIL("", -EINVAL, R_EMPTY);

        NORM_FAIL("//", -EINVAL, R_SLASHES);
        NORM_FAIL("a//b", -EINVAL, R_SLASHES);
        NORM_FAIL("/a//b", -EINVAL, R_SLASHES);
        NORM_FAIL("//a", -EINVAL, R_SLASHES);
        NORM_FAIL("/a//", -EINVAL, R_SLASHES);
        NORM_FAIL("/a/b//", -EINVAL, R_SLASHES);

        NORM_FAIL("/..", -EINVAL, R_DOTDOT);
        NORM_FAIL("..", -EINVAL, R_DOTDOT);
        NORM_FAIL("/a/../b", -EINVAL, R_DOTDOT);
        NORM_FAIL("/a/..", -EINVAL, R_DOTDOT);
        NORM_FAIL("/a/../", -EINVAL, R_DOTDOT);
        NORM_FAIL("../etc", -EINVAL, R_DOTDOT);

        NORM_FAIL(".", -EINVAL, R_DOT);
        NORM_FAIL("/.", -EINVAL, R_DOT);
        NORM_FAIL("/./", -EINVAL, R_DOT);
        NORM_FAIL("/a/./b", -EINVAL, R_DOT);
        NORM_FAIL("/a/.", -EINVAL, R_DOT);

        NORM_FAIL("/a\tb", -EINVAL, R_CTRL);
        NORM_FAIL("/a\nb", -EINVAL, R_CTRL);
        NORM_FAIL("/\x01", -EINVAL, R_CTRL);
        NORM_FAIL("/a\x7f", -EINVAL, R_CTRL);
        NORM_FAIL("\x1f", -EINVAL, R_CTRL);

        NORM_FAIL("/\xff", -EINVAL, R_UTF8);
        NORM_FAIL("/\x80", -EINVAL, R_UTF8);                 /* lone continuation byte */
        NORM_FAIL("/\xc3", -EINVAL, R_UTF8);                 /* truncated */
        NORM_FAIL("/\xe2\x82", -EINVAL, R_UTF8);             /* truncated */
        NORM_FAIL("/\xe2\x82/", -EINVAL, R_UTF8);            /* truncated before '/' */
        NORM_FAIL("/\xc0\xaf", -EINVAL, R_UTF8);             /* overlong '/' */
        NORM_FAIL("/\xc1\xbf", -EINVAL, R_UTF8);             /* overlong */
        NORM_FAIL("/\xe0\x80\xaf", -EINVAL, R_UTF8);         /* overlong, 3 bytes */
        NORM_FAIL("/\xe0\x9f\xbf", -EINVAL, R_UTF8);         /* overlong U+07FF */
        NORM_FAIL("/\xf0\x80\x80\xaf", -EINVAL, R_UTF8);     /* overlong, 4 bytes */
        NORM_FAIL("/\xf0\x8f\xbf\xbf", -EINVAL, R_UTF8);     /* overlong U+FFFF */
        NORM_FAIL("/\xc0\x80", -EINVAL, R_UTF8);             /* overlong NUL */
        NORM_FAIL("/\xed\xa0\x80", -EINVAL, R_UTF8);         /* surrogate U+D800 */
        NORM_FAIL("/\xed\xbf\xbf", -EINVAL, R_UTF8);         /* surrogate U+DFFF */
        NORM_FAIL("/\xf4\x90\x80\x80", -EINVAL, R_UTF8);     /* U+110000 */
        NORM_FAIL("/\xf5\x80\x80\x80", -EINVAL, R_UTF8);
        NORM_FAIL("/\xf8\x88\x80\x80\x80", -EINVAL, R_UTF8); /* 5-byte form */
        NORM_FAIL("/\xfe", -EINVAL, R_UTF8);

        /* NAME_MAX: 255 is fine, 256 is not. */
        char comp[NAME_MAX + 3];
        memset(comp, 'x', sizeof comp);
        comp[0] = '/';
        comp[NAME_MAX + 1] = '\0';
        NORM_OK(comp, comp);
        comp[NAME_MAX + 1] = 'x';
        comp[NAME_MAX + 2] = '\0';
        NORM_FAIL(comp, -ENAMETOOLONG, R_NAME_MAX);
        NORM_FAIL(comp + 1, -ENAMETOOLONG, R_NAME_MAX);

        /* PATH_MAX: build "/xxx.../xxx..." with short components.  The result
         * including its NUL must fit in PATH_MAX bytes, i.e. 4095 characters. */
        static char big[PATH_MAX + 8];
        for (size_t i = 0; i < sizeof big; i++)
                big[i] = i % 64 == 0 ? '/' : 'y';

        big[PATH_MAX - 1] = '\0'; /* 4095 characters */
        NORM_OK(big, big);
        big[PATH_MAX - 1] = 'y';
        big[PATH_MAX] = '\0';     /* 4096 characters */
        NORM_FAIL(big, -ENAMETOOLONG, R_PATH_MAX);
        big[PATH_MAX] = 'y';
        big[PATH_MAX + 1] = '\0'; /* 4097 characters */
        NORM_FAIL(big, -ENAMETOOLONG, R_PATH_MAX);
        /* 4095 characters without the leading '/' become 4096: too long. */
        big[PATH_MAX] = '\0';
        NORM_FAIL(big + 1, -ENAMETOOLONG, R_PATH_MAX);
        /* 4096 characters with a trailing '/' are 4095 after normalization. */
        big[PATH_MAX - 1] = '/';
        big[PATH_MAX] = '\0';
        {
                _cleanup_free_ char *out = NULL;
                CHECK_R(cg_path_normalize(big, &out, NULL), 0);
                CHECK(out && strlen(out) == PATH_MAX - 1);
        }

        /* ret_reason may be NULL; a NULL input is rejected. */
        char *out = NULL;
        CHECK_R(cg_path_normalize("/a/../b", &out, NULL), -EINVAL);
        CHECK(!out);
        const char *reason = NULL;
        CHECK_R(cg_path_normalize(NULL, &out, &reason), -EINVAL);
        CHECK(reason);

        /* All reasons are distinct. */
        const char *reasons[] = { R_EMPTY, R_DOTDOT, R_DOT, R_SLASHES, R_UTF8, R_CTRL, R_PATH_MAX, R_NAME_MAX };
        for (size_t i = 0; i < ELEMENTSOF(reasons); i++)
                for (size_t j = i + 1; j < ELEMENTSOF(reasons); j++)
                        CHECK(!streq(reasons[i], reasons[j]));
}

static void test_path_relative(void) {
        CHECK_STR(cg_path_relative("/"), ".");
        CHECK_STR(cg_path_relative("/a"), "a");
        CHECK_STR(cg_path_relative("/a/b"), "a/b");
        CHECK_STR(cg_path_relative(""), ".");
}

/* A caller's string or a group path in an error message: bounded, its head
 * and its tail, each cut on a character, valid UTF-8. */
static void test_quote(void) {
        char buf[CG_QUOTE_SIZE], want[CG_QUOTE_SIZE], buf2[CG_QUOTE_SIZE];
        _cleanup_free_ char *big = malloc((1 << 20) + 1), *e = malloc(2 * 200 + 3);

        CHECK(big && e);
        if (!big || !e)
                return;
        CHECK_STR(cg_quote("/a/b", buf), "/a/b");
        CHECK_STR(cg_quote("", buf), "");
        CHECK_STR(cg_quote("a\x01" "b\x7f", buf), "a\\x01b\\x7f");
        CHECK_STR(cg_quote("x\xffy", buf), "x\\xffy");                 /* no UTF-8 */
        CHECK_STR(cg_quote("x\xef\xbf\xbfy", buf), "x\\xef\\xbf\\xbfy"); /* U+FFFF, which sd-bus refuses */
        CHECK_STR(cg_quote("\xc3\xa9t\xc3\xa9", buf), "\xc3\xa9t\xc3\xa9");
        /* A backslash doubled, so that a literal "\x0a" is not read as a newline. */
        CHECK_STR(cg_quote("/s\\x0al\n", buf), "/s\\\\x0al\\x0a");
        CHECK_STR(cg_escape("/s\\x0al\n", false, buf, sizeof buf), "/s\\\\x0al\\x0a");
        /* What cg_escape() made, quoted: its backslashes as they are. */
        CHECK_STR(cg_quote_shown("/s\\\\x0al\\xff", buf), "/s\\\\x0al\\xff");
        {
                /* Cut: its byte count the path's, an escape one byte. */
                char shown[320], *at;

                memset(shown, 'a', 300);
                strcpy(shown + 300, "\\xff\\\\"); /* "\xff" and a doubled backslash: 2 bytes */
                cg_quote_shown(shown, buf);
                at = strstr(buf, " (");
                CHECK_STR(at ?: "", " (302 bytes)");
                cg_quote(shown, buf); /* a string of the caller's: each backslash one byte */
                at = strstr(buf, " (");
                CHECK_STR(at ?: "", " (306 bytes)");
        }
        {
                /* Cut where the path it shows is over CG_QUOTE_MAX, not its
                 * escaped form, and in the path's bytes: 73 bytes, whole; 300
                 * (100 'a', 200 escapes), its first 96 and last 160. */
                char shown[1024], want_q[1024];
                size_t k = 0;

                memcpy(shown, "/p/", 3);
                for (k = 3; k < 3 + 4 * 70; k += 4)
                        memcpy(shown + k, "\\xff", 4);
                shown[k] = 0;
                CHECK_STR(cg_quote_shown(shown, buf), shown);
                memset(shown, 'a', 100);
                for (k = 100; k < 100 + 4 * 200; k += 4)
                        memcpy(shown + k, "\\xff", 4);
                shown[k] = 0;
                memset(want_q, 'a', 96);
                memcpy(want_q + 96, "...", 3);
                for (k = 99; k < 99 + 4 * 160; k += 4)
                        memcpy(want_q + k, "\\xff", 4);
                strcpy(want_q + k, " (300 bytes)");
                CHECK_STR(cg_quote_shown(shown, buf), want_q);
        }
        /* Plain, or to go in double quotes: white space no reader sees. */
        CHECK(cg_quote_plain("/a/b") && cg_quote_plain("/") && cg_quote_plain("/my app/b c"));
        CHECK(!cg_quote_plain("") && !cg_quote_plain(" ") && !cg_quote_plain("/ /pods") &&
              !cg_quote_plain("/pods ") && !cg_quote_plain(" /pods") && !cg_quote_plain("/a\t/b") &&
              !cg_quote_plain("/a/ b"));
        /* Named: in double quotes where not plain, a '"' inside as \" (a
         * backslash doubled before); in a list also where it holds a '"' or
         * the list's separators. */
        {
                char named[CG_QUOTE_NAMED_SIZE];

                CHECK_STR(cg_quote_named("/a/b", false, named), "/a/b");
                CHECK_STR(cg_quote_named("/a\"b", false, named), "/a\"b");
                CHECK_STR(cg_quote_named(" /a\"b", false, named), "\" /a\\\"b\"");
                CHECK_STR(cg_quote_named("/a\\\" ", false, named), "\"/a\\\\\\\" \"");
                CHECK_STR(cg_quote_named("/a, b", false, named), "/a, b");
                CHECK_STR(cg_quote_named("/my app/b c", true, named), "/my app/b c");
                CHECK_STR(cg_quote_named("/a\"b", true, named), "\"/a\\\"b\"");
                CHECK_STR(cg_quote_named("/a, b", true, named), "\"/a, b\"");
                CHECK_STR(cg_quote_named("/x and 3 more", true, named), "\"/x and 3 more\"");
                CHECK_STR(cg_quote_named("/a: b", true, named), "\"/a: b\"");
                CHECK_STR(cg_quote_named("/a. b", true, named), "\"/a. b\"");
                CHECK_STR(cg_quote_named("/a.b:c,d", true, named), "/a.b:c,d");
                CHECK_STR(cg_quote_named("/e ", true, named), "\"/e \"");
                /* Where the name's end meets the ", " or " and N more" after it. */
                CHECK_STR(cg_quote_named("/u/e,", true, named), "\"/u/e,\"");
                CHECK_STR(cg_quote_named("/v/d:", true, named), "\"/v/d:\"");
                CHECK_STR(cg_quote_named("/w/d.", true, named), "\"/w/d.\"");
                CHECK_STR(cg_quote_named("/x and", true, named), "\"/x and\"");
                CHECK_STR(cg_quote_named("/x,y", true, named), "/x,y");
                CHECK_STR(cg_quote_named("/u/e,", false, named), "/u/e,");
                /* Shown (cg_escape()'s): its escapes and doubled backslashes
                 * as they are, quoted alike. */
                CHECK_STR(cg_quote_named_shown("/a/b\\xff", named), "/a/b\\xff");
                CHECK_STR(cg_quote_named_shown("/s\\\\x0a/b\\xff", named), "/s\\\\x0a/b\\xff");
                CHECK_STR(cg_quote_named_shown("/sp /b\\xff", named), "\"/sp /b\\xff\"");
                CHECK_STR(cg_quote_named_shown("/q\"x/ b\\x01", named), "\"/q\\\"x/ b\\x01\"");
                CHECK_STR(cg_quote_named_shown("/q\"x/b", named), "/q\"x/b");
                /* Whole: the same words, uncut, however long (the path a
                 * thaw's ENAMETOOLONG names, its end being the group). */
                {
                        static const char *const cases[] = {
                                "/a/b\\xff", "/s\\\\x0a/b\\xff", "/sp /b\\xff", "/q\"x/ b\\x01", "/q\"x/b", "/",
                        };
                        char long_path[3 * CG_QUOTE_MAX + 8], want_whole[2 * sizeof(long_path) + 3];
                        char *whole;
                        size_t k;

                        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                                whole = cg_quote_named_shown_whole(cases[i]);
                                CHECK(whole);
                                CHECK_STR(whole, cg_quote_named_shown(cases[i], named));
                                free(whole);
                        }
                        /* "/" then "d\"/" over and over: a '"' in every level, a
                         * leaf that ends with white space. */
                        strcpy(long_path, "/");
                        while (strlen(long_path) < 3 * CG_QUOTE_MAX)
                                strcat(long_path, "d\"/");
                        strcat(long_path, "e ");
                        whole = cg_quote_named_shown_whole(long_path);
                        CHECK(whole);
                        k = 0;
                        want_whole[k++] = '"';
                        for (const char *p = long_path; *p; p++) {
                                if (*p == '"')
                                        want_whole[k++] = '\\';
                                want_whole[k++] = *p;
                        }
                        memcpy(want_whole + k, "\"", 2);
                        CHECK_STR(whole, want_whole);
                        free(whole);
                        long_path[strlen(long_path) - 1] = 0; /* no white space: plain */
                        whole = cg_quote_named_shown_whole(long_path);
                        CHECK(whole);
                        CHECK_STR(whole, long_path);
                        free(whole);
                }
                /* The rule alone, as freezectl's path_q_list() asks it. */
                CHECK(cg_quote_list_plain("/my app/b c") && cg_quote_list_plain("/x,y") &&
                      cg_quote_list_plain("/a.b:c,d") && cg_quote_list_plain("/x/a...b/c (300 bytes)"));
                CHECK(!cg_quote_list_plain("/x/a, b") && !cg_quote_list_plain("/a\"b") &&
                      !cg_quote_list_plain("/x and 3 more") && !cg_quote_list_plain("/u/e,") &&
                      !cg_quote_list_plain("/x and") && !cg_quote_list_plain("/a... b (300 bytes)"));
        }
        /* Cut (longer than CG_QUOTE_MAX), at any offset: never inside a "\\"
         * or a "\xNN", so that the quote holds no lone backslash, which
         * would make a "\x0a" after it read as an escape. */
        for (size_t shift = 0; shift < 5; shift++) {
                char shown[512];
                size_t runs_odd = 0, run = 0, n = shift;

                memset(shown, 'a', shift);
                for (; n + 5 < sizeof shown; n += 5)
                        memcpy(shown + n, "\\\\x0a", 5); /* a literal "\x0a", shown */
                shown[n] = 0;
                cg_quote_shown(shown, buf);
                for (const char *c = buf;; c++) {
                        if (*c == '\\') {
                                run++;
                                continue;
                        }
                        runs_odd += run % 2;
                        run = 0;
                        if (!*c)
                                break;
                }
                CHECK(strstr(buf, "...") && runs_odd == 0);
        }

        memset(big, 'a', CG_QUOTE_MAX);
        big[CG_QUOTE_MAX] = 0;
        CHECK_STR(cg_quote(big, buf), big); /* exactly the bound: whole */
        memset(big, 'a', 1 << 20);
        big[1 << 20] = 0;
        memset(want, 'a', CG_QUOTE_HEAD);
        memcpy(want + CG_QUOTE_HEAD, "...", 3);
        memset(want + CG_QUOTE_HEAD + 3, 'a', CG_QUOTE_TAIL);
        strcpy(want + CG_QUOTE_MAX + 3, " (1048576 bytes)");
        CHECK_STR(cg_quote(big, buf), want);
        CHECK_STR(CG_QUOTE(big), want);

        /* Siblings below a long path: their quotes differ, by their leaves,
         * which they end with. */
        memset(big, 'n', 3000);
        strcpy(big + 3000, "/a");
        cg_quote(big, buf);
        big[3001] = 'b';
        cg_quote(big, buf2);
        CHECK(!streq(buf, buf2));
        CHECK(strstr(buf, "n/a (3002 bytes)") && strstr(buf2, "n/b (3002 bytes)"));
        CHECK(strncmp(buf, big, CG_QUOTE_HEAD) == 0);

        /* "/", 200 "é" and "x": both cuts fall inside an "é"; the head's goes
         * before it (47 "é", 95 bytes), the tail's after it (79 "é" and "x"). */
        e[0] = '/';
        for (size_t i = 0; i < 200; i++)
                memcpy(e + 1 + 2 * i, "\xc3\xa9", 2);
        strcpy(e + 401, "x");
        cg_quote(e, buf);
        CHECK(strncmp(buf, e, 95) == 0);
        CHECK(strncmp(buf + 95, "...", 3) == 0);
        CHECK(strncmp(buf + 98, e + 402 - 159, 159) == 0);
        CHECK_STR(buf + 98 + 159, " (402 bytes)");
        CHECK(cg_name_is_publishable(buf)); /* valid UTF-8, no control character */
        {
                size_t head = 0, tail = 0;

                cg_quote_cut(e, 402, &head, &tail); /* where, as freezectl's path_cut() asks */
                CHECK(head == 95 && tail == 402 - 159);
                /* Counted in the string's bytes, not in the quote's: 300
                 * backslashes keep 96 and 160 of them, 192 and 320 shown. */
                memset(big, '\\', 300);
                big[300] = 0;
                cg_quote_cut(big, 300, &head, &tail);
                CHECK(head == CG_QUOTE_HEAD && tail == 300 - CG_QUOTE_TAIL);
                CHECK(strlen(cg_quote(big, buf)) == 2 * CG_QUOTE_MAX + strlen("... (300 bytes)"));
        }

        /* A tail of continuation bytes with no character: escaped one by one. */
        memset(big, 0x80, 300);
        big[300] = 0;
        cg_quote(big, buf);
        CHECK(cg_name_is_publishable(buf));
        CHECK(strlen(buf) == 4 * CG_QUOTE_HEAD + 3 + 4 * (CG_QUOTE_TAIL - 3) + strlen(" (300 bytes)"));

        /* The worst case: every byte escaped, and the longest suffix, fits. */
        memset(big, 1, 1 << 20);
        cg_quote(big, buf);
        CHECK(strlen(buf) == 4 * CG_QUOTE_MAX + strlen("... (1048576 bytes)"));
        CHECK(strlen("... (18446744073709551615 bytes)") + 4 * CG_QUOTE_MAX < CG_QUOTE_SIZE);
}

/* ------------------------------------------------------------------------- */

static int write_file_at(int dirfd, const char *name, const char *content, size_t len) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, content, len) != (ssize_t) len)
                return -EIO;
        return 0;
}

static void test_openat_beneath(int root) {
        struct stat st1, st2;
        char buf[64];
        int fd;

        /* Plain file beneath the root; O_CLOEXEC is always set. */
        fd = cg_openat_beneath(root, "sub/f", O_RDONLY, 0);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                CHECK_R(cg_read_fd(fd, buf, sizeof buf), 6);
                CHECK_STR(buf, "hello\n");
                /* Reads from offset 0 each time. */
                CHECK_R(cg_read_fd(fd, buf, sizeof buf), 6);
                /* Exactly fits: 6 bytes + NUL. */
                CHECK_R(cg_read_fd(fd, buf, 7), 6);
                CHECK_STR(buf, "hello\n");
                /* One byte short. */
                CHECK_R(cg_read_fd(fd, buf, 6), -EFBIG);
                CHECK_R(cg_read_fd(fd, buf, 1), -EFBIG);
                CHECK_R(cg_read_fd(fd, buf, 0), -EINVAL);
                /* tmpfs/ext4 file is not a cgroup2 dir. */
                CHECK_R(cg_fd_is_cgroup2_dir(fd), 0);
                close(fd);
        }

        /* A mode is accepted (and ignored) without O_CREAT. */
        fd = cg_openat_beneath(root, "sub/f", O_RDONLY, 0644);
        CHECK(fd >= 0);
        if (fd >= 0)
                close(fd);

        /* O_CREAT uses the mode. */
        fd = cg_openat_beneath(root, "sub/new", O_WRONLY | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(fstat(fd, &st1) == 0 && (st1.st_mode & 0777) == 0600);
                close(fd);
        }

        fd = cg_openat_beneath(root, "empty", O_RDONLY, 0);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK_R(cg_read_fd(fd, buf, sizeof buf), 0);
                CHECK_STR(buf, "");
                CHECK_R(cg_read_fd(fd, buf, 1), 0);
                close(fd);
        }

        /* "." is the root itself. */
        fd = cg_openat_beneath(root, ".", O_RDONLY | O_DIRECTORY, 0);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(fstat(fd, &st1) == 0 && fstat(root, &st2) == 0 &&
                      st1.st_dev == st2.st_dev && st1.st_ino == st2.st_ino);
                CHECK_R(cg_fd_is_cgroup2_dir(fd), 0);
                close(fd);
        }

        fd = cg_openat_beneath(root, "sub/deeper", O_RDONLY | O_DIRECTORY, 0);
        CHECK(fd >= 0);
        if (fd >= 0)
                close(fd);

        /* Symlinks anywhere, including the last component. */
        CHECK_R(cg_openat_beneath(root, "link/f", O_RDONLY, 0), -ELOOP);
        CHECK_R(cg_openat_beneath(root, "link", O_RDONLY, 0), -ELOOP);
        CHECK_R(cg_openat_beneath(root, "sub/flink", O_RDONLY, 0), -ELOOP);
        CHECK_R(cg_openat_beneath(root, "abslink", O_RDONLY, 0), -ELOOP);

        /* Escapes. */
        CHECK_R(cg_openat_beneath(root, "../x", O_RDONLY, 0), -EXDEV);
        CHECK_R(cg_openat_beneath(root, "..", O_RDONLY, 0), -EXDEV);
        CHECK_R(cg_openat_beneath(root, "sub/../../x", O_RDONLY, 0), -EXDEV);
        CHECK_R(cg_openat_beneath(root, "/etc/passwd", O_RDONLY, 0), -EXDEV);

        /* ".." that stays beneath the root is fine with openat2(). */
        fd = cg_openat_beneath(root, "sub/../sub/f", O_RDONLY, 0);
        CHECK(have_openat2 ? fd >= 0 : fd == -EXDEV);
        if (fd >= 0)
                close(fd);

        CHECK_R(cg_openat_beneath(root, "missing", O_RDONLY, 0), -ENOENT);
        CHECK_R(cg_openat_beneath(root, "", O_RDONLY, 0), -EINVAL);
        CHECK_R(cg_openat_beneath(-1, "sub/f", O_RDONLY, 0), -EBADF);
}

static void test_openat_and_read(void) {
        char tmpl[] = "/tmp/test-cgroup-util.XXXXXX";
        _cleanup_close_ int root = -1;

        if (!mkdtemp(tmpl)) {
                fprintf(stderr, "mkdtemp: %m\n");
                test_failures++;
                return;
        }

        root = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(root >= 0);
        if (root < 0)
                return;

        CHECK(mkdirat(root, "sub", 0755) == 0);
        CHECK(mkdirat(root, "sub/deeper", 0755) == 0);
        CHECK_R(write_file_at(root, "sub/f", "hello\n", 6), 0);
        CHECK_R(write_file_at(root, "empty", "", 0), 0);
        CHECK(symlinkat("sub", root, "link") == 0);
        CHECK(symlinkat("f", root, "sub/flink") == 0);
        CHECK(symlinkat("/etc", root, "abslink") == 0);

        test_openat_beneath(root);

        CHECK(unlinkat(root, "abslink", 0) == 0);
        CHECK(unlinkat(root, "link", 0) == 0);
        CHECK(unlinkat(root, "sub/flink", 0) == 0);
        CHECK(unlinkat(root, "sub/f", 0) == 0);
        CHECK(unlinkat(root, "sub/new", 0) == 0);
        CHECK(unlinkat(root, "empty", 0) == 0);
        CHECK(unlinkat(root, "sub/deeper", AT_REMOVEDIR) == 0);
        CHECK(unlinkat(root, "sub", AT_REMOVEDIR) == 0);
        CHECK(rmdir(tmpl) == 0);
}

/* ------------------------------------------------------------------------- */

static int events(const char *s, bool *populated, bool *frozen) {
        return cg_parse_events(s, strlen(s), populated, frozen);
}

static void test_parse_events(void) {
        bool p = false, f = false;

        CHECK_R(events("populated 1\nfrozen 0\n", &p, &f), 0);
        CHECK(p && !f);
        CHECK_R(events("populated 0\nfrozen 1\n", &p, &f), 0);
        CHECK(!p && f);
        CHECK_R(events("frozen 1\npopulated 1", &p, &f), 0);                /* order, no final newline */
        CHECK(p && f);
        CHECK_R(events("populated 0\nnew_key whatever it is\nfrozen 0\n", &p, &f), 0); /* unknown key */
        CHECK(!p && !f);
        CHECK_R(events("populated 1\nfrozen 0\nfrozen_usec 5\nfrozen_usec 6\n", &p, &f), 0); /* unknown dup */
        CHECK_R(events("populated 1\nfrozen 0\n", NULL, NULL), 0);

        p = f = true;
        CHECK_R(events("", &p, &f), -EBADMSG);
        CHECK(p && f); /* untouched on failure */
        CHECK_R(cg_parse_events(NULL, 0, &p, &f), -EBADMSG);
        CHECK_R(events("populated 1\n", &p, &f), -EBADMSG);                  /* missing key */
        CHECK_R(events("frozen 1\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 1\nfrozen 0\npopulated 1\n", &p, &f), -EBADMSG); /* duplicate */
        CHECK_R(events("populated 1\nfrozen 0\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 2\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 1x\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 01\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated -1\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated \nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated  1\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 1 \nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events(" populated 1\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated\t1\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 1\r\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 1\n\nfrozen 0\n", &p, &f), -EBADMSG);    /* empty line */
        CHECK_R(events("populated 1\nfrozen 0\n\n", &p, &f), -EBADMSG);
        CHECK_R(events("\n", &p, &f), -EBADMSG);
        CHECK_R(events("Populated 1\nfrozen 0\n", &p, &f), -EBADMSG);
        CHECK_R(events("populated 1\nfrozen 0\nbroken\n", &p, &f), -EBADMSG); /* malformed unknown line */

        static const char nul[] = "populated 1\nfrozen 0\0\n";
        CHECK_R(cg_parse_events(nul, sizeof nul - 1, &p, &f), -EBADMSG);
        /* Length is honored: "frozen 0" cut to "frozen ". */
        CHECK_R(cg_parse_events("populated 1\nfrozen 0\n", 19, &p, &f), -EBADMSG);
        CHECK_R(cg_parse_events("populated 1\nfrozen 0\n", 20, &p, &f), 0);
}

static void test_parse_freeze(void) {
        bool b = false;

        CHECK_R(cg_parse_freeze("1\n", 2, &b), 0);
        CHECK(b);
        CHECK_R(cg_parse_freeze("0\n", 2, &b), 0);
        CHECK(!b);
        CHECK_R(cg_parse_freeze("1", 1, &b), 0);
        CHECK(b);
        CHECK_R(cg_parse_freeze("0", 1, &b), 0);
        CHECK(!b);

        b = true;
        CHECK_R(cg_parse_freeze("", 0, &b), -EBADMSG);
        CHECK(b);
        CHECK_R(cg_parse_freeze(NULL, 0, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("\n", 1, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("2\n", 2, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("1x", 2, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("1x\n", 3, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("10\n", 3, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("1\n\n", 3, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze(" 1\n", 3, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("1 ", 2, &b), -EBADMSG);
        CHECK_R(cg_parse_freeze("\0\n", 2, &b), -EBADMSG);
        CHECK(b);
}

static int stat_local(const char *s, uint64_t *ret) {
        return cg_parse_stat_local_frozen_usec(s, strlen(s), ret);
}

static void test_parse_stat_local(void) {
        uint64_t u = 0;

        CHECK_R(stat_local("frozen_usec 12345\n", &u), 0);
        CHECK(u == 12345);
        CHECK_R(stat_local("frozen_usec 0\n", &u), 0);
        CHECK(u == 0);
        CHECK_R(stat_local("frozen_usec 7", &u), 0);
        CHECK(u == 7);
        CHECK_R(stat_local("other_key 1\nfrozen_usec 42\nmore 3 4 5\n", &u), 0);
        CHECK(u == 42);
        CHECK_R(stat_local("frozen_usec 18446744073709551615\n", &u), 0);
        CHECK(u == UINT64_MAX);

        u = 99;
        CHECK_R(stat_local("", &u), -ENODATA);
        CHECK_R(cg_parse_stat_local_frozen_usec(NULL, 0, &u), -ENODATA);
        CHECK_R(stat_local("other 5\n", &u), -ENODATA);
        CHECK_R(stat_local("frozen_usecs 5\n", &u), -ENODATA);
        CHECK(u == 99);

        CHECK_R(stat_local("frozen_usec 18446744073709551616\n", &u), -EBADMSG);  /* overflow */
        CHECK_R(stat_local("frozen_usec 99999999999999999999\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec 1x\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec -1\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec +1\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec 0x10\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec \n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec 1 2\n", &u), -EBADMSG);
        CHECK_R(stat_local("frozen_usec 1\nfrozen_usec 1\n", &u), -EBADMSG);      /* duplicate */
        CHECK_R(stat_local("frozen_usec 1\n\n", &u), -EBADMSG);
        CHECK_R(stat_local("garbage\nfrozen_usec 1\n", &u), -EBADMSG);
        CHECK(u == 99);
}

static void test_parse_keyed_u64(void) {
        const char *stat = "nr_descendants 4010\nnr_subsys_perf_event 4011\nnr_subsys_hugetlb 1\n"
                           "nr_dying_descendants 0\nnr_dying_subsys_perf_event 0\n";
        uint64_t u = 0;

        CHECK_R(cg_parse_keyed_u64(stat, strlen(stat), "nr_descendants", &u), 0);
        CHECK(u == 4010);
        CHECK_R(cg_parse_keyed_u64(stat, strlen(stat), "nr_dying_descendants", &u), 0);
        CHECK(u == 0);
        CHECK_R(cg_parse_keyed_u64(stat, strlen(stat), "nr_subsys_hugetlb", &u), 0);
        CHECK(u == 1);

        u = 99;
        CHECK_R(cg_parse_keyed_u64(stat, strlen(stat), "nr_desc", &u), -ENODATA); /* whole keys only */
        CHECK_R(cg_parse_keyed_u64(stat, strlen(stat), NULL, &u), -EINVAL);
        CHECK_R(cg_parse_keyed_u64("nr_descendants 1\nnr_descendants 1\n", 34, "nr_descendants", &u), -EBADMSG);
        CHECK_R(cg_parse_keyed_u64("nr_descendants x\n", 17, "nr_descendants", &u), -EBADMSG);
        CHECK(u == 99);
}

int main(void) {
        probe_openat2();
        test_mountinfo_real();
        test_mountinfo_synthetic();
        test_mountinfo_all();
        test_path_normalize();
        test_path_relative();
        test_quote();
        test_openat_and_read();
        test_parse_events();
        test_parse_freeze();
        test_parse_stat_local();
        test_parse_keyed_u64();

        return test_summary("test-cgroup-util");
}
