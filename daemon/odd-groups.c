/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "odd-groups.h"
#include "util.h"

void odd_groups_clear(OddGroups *o) {
        for (size_t i = 0; i < o->n; i++) {
                free(o->items[i].rel);
                free(o->items[i].shown);
        }
        o->items = mfree(o->items);
        o->n = o->cap = 0;
}

/* The directory name beneath parent_fd, listed: NULL and errno on failure. */
static DIR *open_listing(int parent_fd, const char *name) {
        int fd = cg_openat_beneath(parent_fd, name, O_RDONLY | O_DIRECTORY, 0);
        DIR *d;

        if (fd < 0) {
                errno = -fd;
                return NULL;
        }
        d = fdopendir(fd);
        if (!d) {
                int k = errno;
                close(fd);
                errno = k;
        }
        return d;
}

/* The next subdirectory of d ("." and ".." left out), NULL at the end (errno 0) or on failure. */
static const char *next_subdir(DIR *d) {
        struct dirent *de;

        errno = 0;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && !streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        return de->d_name;
        return NULL;
}

/* parent "/" + name, with name escaped as freezerd's log names it. */
static char *join_shown(const char *parent, const char *name) {
        char esc[4 * NAME_MAX + 8]; /* every byte escaped, never cut */
        char *s;

        if (asprintf(&s, "%s/%s", streq(parent, "/") ? "" : parent, cg_escape(name, true, esc, sizeof esc)) < 0)
                return NULL;
        return s;
}

static char *join_rel(const char *parent, const char *name) {
        char *s;

        if (streq(parent, ".")) /* the root itself */
                return strdup(name);
        if (asprintf(&s, "%s/%s", parent, name) < 0)
                return NULL;
        return s;
}

/* Below the group at rel (open as parent_fd), at depth: its subdirectory name,
 * then everything below it, appended bottom-up. */
static int collect_subtree(int parent_fd, const char *parent_rel, const char *parent_shown, const char *name,
                           unsigned depth, unsigned max_depth, OddGroups *o) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *rel = NULL, *shown = NULL;
        const char *sub;

        if (depth > max_depth || o->n >= ODD_GROUPS_MAX)
                return -E2BIG;
        rel = join_rel(parent_rel, name);
        shown = join_shown(parent_shown, name);
        if (!rel || !shown)
                return -ENOMEM;
        d = open_listing(parent_fd, name);
        if (!d)
                return errno == ENOENT ? 0 : -errno; /* removed meanwhile: nothing to do there */
        while ((sub = next_subdir(d))) {
                int r = collect_subtree(dirfd(d), rel, shown, sub, depth + 1, max_depth, o);
                if (r < 0)
                        return r;
        }
        if (errno != 0)
                return -errno;

        if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 8;
                OddGroup *l = reallocarray(o->items, cap, sizeof *l);
                if (!l)
                        return -ENOMEM;
                o->items = l;
                o->cap = cap;
        }
        o->items[o->n++] = (OddGroup) { .rel = TAKE_PTR(rel), .shown = TAKE_PTR(shown) };
        return 0;
}

int odd_groups_collect(int root_fd, const char *path, unsigned depth, unsigned max_depth, OddGroups *o) {
        _cleanup_(closedirp) DIR *d = NULL;
        const char *rel = cg_path_relative(path), *name;

        d = open_listing(root_fd, rel);
        if (!d)
                return -errno;
        while ((name = next_subdir(d))) {
                if (cg_name_is_publishable(name))
                        continue; /* followed: in the model, with its own listing */
                int r = collect_subtree(dirfd(d), rel, path, name, depth + 1, max_depth, o);
                if (r < 0)
                        return r;
        }
        return errno != 0 ? -errno : 0;
}

int odd_child_find(int root_fd, const char *path, char **ret) {
        _cleanup_(closedirp) DIR *d = NULL;
        const char *name;

        *ret = NULL;
        d = open_listing(root_fd, cg_path_relative(path));
        if (!d)
                return -errno;
        while ((name = next_subdir(d)))
                if (!cg_name_is_publishable(name)) {
                        char esc[4 * NAME_MAX + 8];
                        *ret = strdup(cg_escape(name, true, esc, sizeof esc));
                        return *ret ? 0 : -ENOMEM;
                }
        return errno != 0 ? -errno : 0;
}

static int open_file(int root_fd, const OddGroup *g, const char *file, int flags) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", g->rel, file) < 0)
                return -ENOMEM;
        return cg_openat_beneath(root_fd, p, flags, 0);
}

int odd_groups_write(int root_fd, OddGroups *o, bool v, size_t *ret_failed) {
        for (size_t i = 0; i < o->n; i++) {
                OddGroup *g = &o->items[i];
                _cleanup_close_ int fd = open_file(root_fd, g, "cgroup.freeze", O_RDWR);
                char buf[16];
                ssize_t n;
                int r;

                g->wrote = false;
                if (fd == -ENOENT || fd == -ENODEV)
                        continue; /* removed since it was listed */
                if (fd < 0) {
                        *ret_failed = i;
                        return fd;
                }
                n = cg_read_fd(fd, buf, sizeof buf);
                r = n < 0 ? (int) n : cg_parse_freeze(buf, (size_t) n, &g->prev);
                if (r == -ENODEV)
                        continue;
                if (r < 0) {
                        *ret_failed = i;
                        return r;
                }
                if (g->prev == v)
                        continue;
                if (pwrite(fd, v ? "1" : "0", 1, 0) != 1) {
                        if (errno == ENODEV) /* kernfs says so of a removed group's open file */
                                continue;
                        *ret_failed = i;
                        return -errno;
                }
                g->wrote = true;
        }
        return 0;
}

void odd_groups_restore(int root_fd, OddGroups *o) {
        for (size_t i = o->n; i > 0; i--) {
                OddGroup *g = &o->items[i - 1];
                _cleanup_close_ int fd = -1;

                if (!g->wrote)
                        continue;
                fd = open_file(root_fd, g, "cgroup.freeze", O_WRONLY);
                if (fd >= 0 && pwrite(fd, g->prev ? "1" : "0", 1, 0) == 1)
                        g->wrote = false;
        }
}

int odd_group_owner(int root_fd, const OddGroup *g, uid_t *ret) {
        _cleanup_close_ int fd = open_file(root_fd, g, "cgroup.freeze", O_PATH | O_NOFOLLOW);
        struct stat st;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        *ret = S_ISREG(st.st_mode) ? st.st_uid : (uid_t) -1;
        return 0;
}
