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

/* The whole cgroup.freeze path of the group at rel must fit PATH_MAX, or no
 * open(2) takes it (ENAMETOOLONG): refused before anything is written. */
static bool rel_fits(const char *rel) {
        return strlen(rel) + sizeof "/cgroup.freeze" <= PATH_MAX;
}

/* The names of the subdirectories of the group at rel (beneath root_fd),
 * NUL-separated in *ret (*ret_size bytes), the directory closed again: the
 * walk below enters them after, holding no fd, nor a DIR's buffer, per
 * level. */
static int list_subdirs(int root_fd, const char *rel, char **ret, size_t *ret_size) {
        _cleanup_(closedirp) DIR *d = open_listing(root_fd, rel);
        _cleanup_free_ char *names = NULL;
        size_t size = 0, cap = 0;
        const char *name;

        if (!d)
                return -errno;
        while ((name = next_subdir(d))) {
                size_t l = strlen(name) + 1;
                if (size + l > cap) {
                        size_t c = cap * 2 > size + l ? cap * 2 : size + l + 256;
                        char *p = realloc(names, c);
                        if (!p)
                                return -ENOMEM;
                        names = p;
                        cap = c;
                }
                memcpy(names + size, name, l);
                size += l;
        }
        if (errno != 0)
                return -errno;
        *ret = TAKE_PTR(names);
        *ret_size = size;
        return 0;
}

/* The group at rel (shown: its API path escaped), both taken over, and
 * everything below it, appended bottom-up. */
static int collect_subtree(int root_fd, char *rel_in, char *shown_in, OddGroups *o) {
        _cleanup_free_ char *rel = rel_in, *shown = shown_in, *names = NULL;
        size_t size = 0;
        int r;

        if (!rel || !shown)
                return -ENOMEM;
        if (!rel_fits(rel))
                return -ENAMETOOLONG;
        if (o->n >= ODD_GROUPS_MAX)
                return -E2BIG;
        r = list_subdirs(root_fd, rel, &names, &size);
        if (r == -ENOENT || r == -ENOTDIR)
                return 0; /* removed meanwhile: nothing to do there */
        if (r < 0)
                return r;
        for (size_t i = 0; i < size; i += strlen(names + i) + 1) {
                r = collect_subtree(root_fd, join_rel(rel, names + i), join_shown(shown, names + i), o);
                if (r < 0)
                        return r;
        }

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

/* Whether the child name of the group at path is followed: 1, 0 or -errno. */
static int child_followed(const char *path, const char *name, OddFollowedFn followed, void *userdata) {
        if (!cg_name_is_publishable(name))
                return 0;
        return followed(path, name, userdata);
}

int odd_groups_collect(int root_fd, const char *path, OddFollowedFn followed, void *userdata, OddGroups *o,
                       char **ret_where) {
        _cleanup_free_ char *names = NULL, *shown = NULL;
        const char *rel = cg_path_relative(path);
        size_t size = 0, len = strlen(path);
        int r;

        *ret_where = NULL;
        /* path (a followed group's) escaped as its children's names are, so
         * that the shown paths, which cg_quote_shown() quotes as they are,
         * have every backslash doubled: a literal "\x0a" in it must not read
         * as an escape. */
        shown = malloc(4 * len + 8);
        if (!shown)
                return -ENOMEM;
        (void) cg_escape(path, false, shown, 4 * len + 8);
        r = list_subdirs(root_fd, rel, &names, &size);
        if (r < 0)
                return r;
        for (size_t i = 0; i < size; i += strlen(names + i) + 1) {
                const char *name = names + i;

                r = child_followed(path, name, followed, userdata);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue; /* in the model, with its own listing */
                r = collect_subtree(root_fd, join_rel(rel, name), join_shown(shown, name), o);
                if (r < 0) {
                        *ret_where = join_shown(shown, name);
                        return r;
                }
        }
        return 0;
}

int odd_child_find(int root_fd, const char *path, OddFollowedFn followed, void *userdata, char **ret,
                   bool *ret_by_name) {
        _cleanup_(closedirp) DIR *d = NULL;
        const char *name;

        *ret = NULL;
        *ret_by_name = false;
        d = open_listing(root_fd, cg_path_relative(path));
        if (!d)
                return -errno;
        while ((name = next_subdir(d))) {
                int r = child_followed(path, name, followed, userdata);
                if (r < 0)
                        return r;
                if (r == 0) {
                        /* path escaped as odd_groups_collect() escapes it:
                         * a literal "\x0a" in it must not read as an escape. */
                        size_t len = strlen(path);
                        _cleanup_free_ char *shown = malloc(4 * len + 8);

                        if (!shown)
                                return -ENOMEM;
                        (void) cg_escape(path, false, shown, 4 * len + 8);
                        *ret_by_name = !cg_name_is_publishable(name);
                        *ret = join_shown(shown, name);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        return errno != 0 ? -errno : 0;
}

static int open_file(int root_fd, const OddGroup *g, const char *file, int flags) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", g->rel, file) < 0)
                return -ENOMEM;
        return cg_openat_beneath(root_fd, p, flags, 0);
}

int odd_groups_read(int root_fd, OddGroups *o) {
        for (size_t i = 0; i < o->n; i++) {
                OddGroup *g = &o->items[i];
                _cleanup_close_ int dirfd = cg_openat_beneath(root_fd, g->rel, O_PATH | O_DIRECTORY, 0), fd = -1;
                int r;

                g->id = 0;
                g->prev = false;
                if (dirfd == -ENOENT || dirfd == -ENODEV)
                        continue; /* removed since it was listed */
                if (dirfd < 0)
                        return dirfd;
                r = cg_dir_id(dirfd, NULL, &g->id);
                if (r >= 0) {
                        fd = openat(dirfd, "cgroup.freeze", O_RDONLY | O_CLOEXEC);
                        r = fd < 0 ? -errno : 0;
                }
                if (r >= 0)
                        r = cg_read_freeze_fd(fd, &g->prev);
                if (r == -ENOENT || r == -ENODEV) {
                        g->id = 0;
                        g->prev = false;
                        continue;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int odd_groups_write(int root_fd, OddGroups *o, bool v, uint64_t delay_usec, size_t *ret_failed) {
        for (size_t i = 0; i < o->n; i++) {
                OddGroup *g = &o->items[i];
                _cleanup_close_ int fd = -1;
                int r;

                g->wrote = false;
                if (g->skip)
                        continue;
                fd = open_file(root_fd, g, "cgroup.freeze", O_RDWR);
                if (fd == -ENOENT || fd == -ENODEV)
                        continue; /* removed since it was listed */
                if (fd < 0) {
                        *ret_failed = i;
                        return fd;
                }
                r = cg_read_freeze_fd(fd, &g->prev);
                if (r == -ENODEV)
                        continue;
                if (r < 0) {
                        *ret_failed = i;
                        return r;
                }
                if (g->prev == v)
                        continue;
                r = write_result(pwrite(fd, v ? "1" : "0", 1, 0), 1);
                if (r == -ENODEV) /* kernfs says so of a removed group's open file */
                        continue;
                if (r < 0) {
                        *ret_failed = i;
                        return r;
                }
                g->wrote = true;
                if (delay_usec > 0)
                        (void) usleep((useconds_t) delay_usec);
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

int odd_group_read_flag(int root_fd, const OddGroup *g, bool *ret) {
        _cleanup_close_ int fd = open_file(root_fd, g, "cgroup.freeze", O_RDONLY);

        if (fd < 0)
                return fd;
        return cg_read_freeze_fd(fd, ret);
}
