/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <sys/stat.h>

#include "cgroup-util.h"
#include "journal.h"
#include "log.h"
#include "util.h"

#define JOURNAL_VERSION 1

static int write_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, buf, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += k;
                n -= (size_t) k;
        }
        return 0;
}

const char *journal_boot_id(void) {
        static char id[64];
        static int state; /* 0 not read, 1 read, -1 unreadable */

        if (state == 0) {
                _cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

                state = -1;
                if (fd >= 0 && cg_read_fd(fd, id, sizeof id) > 0) {
                        id[strcspn(id, "\n")] = '\0';
                        state = id[0] ? 1 : -1;
                }
        }
        return state > 0 ? id : NULL;
}

int journal_write(const char *dir, uint64_t id, const char *boot_id, const JournalEntry *entries, size_t n,
                  char **ret_path) {
        _cleanup_free_ char *tmp = NULL, *final = NULL;
        _cleanup_close_ int fd = -1;
        json_object *root, *groups;
        const char *text;
        int r;

        root = json_object_new_object();
        groups = json_object_new_array_ext((int) n);
        if (!root || !groups) {
                json_object_put(root);
                json_object_put(groups);
                return -ENOMEM;
        }
        json_object_object_add(root, "version", json_object_new_int(JOURNAL_VERSION));
        json_object_object_add(root, "id", json_object_new_uint64(id));
        if (boot_id)
                json_object_object_add(root, "boot", json_object_new_string(boot_id));
        json_object_object_add(root, "groups", groups);
        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_new_object();
                if (!g) {
                        json_object_put(root);
                        return -ENOMEM;
                }
                json_object_object_add(g, "path", json_object_new_string(entries[i].path));
                json_object_object_add(g, "prev", json_object_new_boolean(entries[i].prev_freeze));
                json_object_object_add(g, "new", json_object_new_boolean(entries[i].new_freeze));
                json_object_array_add(groups, g);
        }
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text) { /* json-c is out of memory (and so were any of the adds above) */
                json_object_put(root);
                return -ENOMEM;
        }

        if (asprintf(&tmp, "%s/.journal-%" PRIu64 ".json.tmp", dir, id) < 0 ||
            asprintf(&final, "%s/journal-%" PRIu64 ".json", dir, id) < 0) {
                json_object_put(root);
                return -ENOMEM;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
                r = -errno;
                json_object_put(root);
                return r;
        }
        r = write_all(fd, text, strlen(text));
        json_object_put(root);
        /* No fsync (see journal.h): the rename alone makes it whole or absent. */
        if (r >= 0 && rename(tmp, final) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        if (ret_path)
                *ret_path = TAKE_PTR(final);
        return 0;
}

int journal_remove(const char *path) {
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

void journal_entries_free(JournalEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free((char *) e[i].path);
        free(e);
}

int journal_parse(const char *text, size_t len, JournalEntry **ret, size_t *ret_n, char **ret_boot_id) {
        json_tokener *tok;
        json_object *root, *groups, *v, *boot = NULL;
        char *boot_id = NULL;
        JournalEntry *entries = NULL;
        size_t n;

        if (len > INT32_MAX)
                return -EFBIG;
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        root = json_tokener_parse_ex(tok, text, (int) len);
        if (!root || json_tokener_get_error(tok) != json_tokener_success ||
            json_tokener_get_parse_end(tok) != len) {
                json_tokener_free(tok);
                json_object_put(root);
                return -EBADMSG;
        }
        json_tokener_free(tok);

        if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "version", &v) ||
            !json_object_is_type(v, json_type_int) || json_object_get_int(v) != JOURNAL_VERSION ||
            !json_object_object_get_ex(root, "groups", &groups) || !json_object_is_type(groups, json_type_array)) {
                json_object_put(root);
                return -EBADMSG;
        }
        if (json_object_object_get_ex(root, "boot", &boot) && !json_object_is_type(boot, json_type_string)) {
                json_object_put(root);
                return -EBADMSG;
        }
        n = json_object_array_length(groups);
        entries = calloc(n ?: 1, sizeof *entries);
        if (boot && ret_boot_id)
                boot_id = strdup(json_object_get_string(boot));
        if (!entries || (boot && ret_boot_id && !boot_id)) {
                free(entries);
                free(boot_id);
                json_object_put(root);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_array_get_idx(groups, i), *p, *pr, *nw;
                if (!json_object_is_type(g, json_type_object) || !json_object_object_get_ex(g, "path", &p) ||
                    !json_object_is_type(p, json_type_string) || !json_object_object_get_ex(g, "prev", &pr) ||
                    !json_object_is_type(pr, json_type_boolean) || !json_object_object_get_ex(g, "new", &nw) ||
                    !json_object_is_type(nw, json_type_boolean) || json_object_get_string(p)[0] != '/') {
                        journal_entries_free(entries, i);
                        free(boot_id);
                        json_object_put(root);
                        return -EBADMSG;
                }
                entries[i].path = strdup(json_object_get_string(p));
                if (!entries[i].path) {
                        journal_entries_free(entries, i);
                        free(boot_id);
                        json_object_put(root);
                        return -ENOMEM;
                }
                entries[i].prev_freeze = json_object_get_boolean(pr);
                entries[i].new_freeze = json_object_get_boolean(nw);
        }
        json_object_put(root);
        *ret = entries;
        *ret_n = n;
        if (ret_boot_id)
                *ret_boot_id = boot_id;
        return 0;
}

static int read_small_file(int dirfd, const char *name, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        int r;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        r = read_full_fd(fd, 64 * 1024 * 1024, ret, ret_len);
        return r == -EFBIG ? -EBADMSG : r;
}

static int cmp_desc(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? 1 : x > y ? -1 : 0;
}

int journal_recover(const char *dir, const char *boot_id, journal_restore_t restore, void *userdata,
                    uint64_t *ret_max_id) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n_ids = 0, cap = 0;
        uint64_t max_id = 0;
        int recovered = 0;

        d = opendir(dir);
        if (!d) {
                if (ret_max_id)
                        *ret_max_id = 0;
                return errno == ENOENT ? 0 : -errno;
        }
        for (struct dirent *de; (de = readdir(d));) {
                uint64_t id;
                char tail[8];
                if (sscanf(de->d_name, "journal-%" SCNu64 ".%5s", &id, tail) != 2 || !streq(tail, "json"))
                        continue;
                if (n_ids == cap) {
                        size_t c = cap ? cap * 2 : 8;
                        uint64_t *l = realloc(ids, c * sizeof *l);
                        if (!l)
                                return -ENOMEM;
                        ids = l;
                        cap = c;
                }
                ids[n_ids++] = id;
                if (id > max_id)
                        max_id = id;
        }
        if (n_ids > 1)
                qsort(ids, n_ids, sizeof *ids, cmp_desc);

        for (size_t i = 0; i < n_ids; i++) {
                _cleanup_free_ char *name = NULL, *text = NULL, *boot = NULL;
                JournalEntry *entries = NULL;
                size_t len = 0, n = 0;
                unsigned restored = 0, gone = 0, failed = 0;
                int r;

                if (asprintf(&name, "journal-%" PRIu64 ".json", ids[i]) < 0)
                        return -ENOMEM;
                r = read_small_file(dirfd(d), name, &text, &len);
                if (r >= 0)
                        r = journal_parse(text, len, &entries, &n, &boot);
                if (r < 0) {
                        _cleanup_free_ char *broken = NULL;
                        log_error_errno(r, "Cannot read batch journal %s/%s, keeping it as .broken: %m", dir, name);
                        if (asprintf(&broken, "%s.broken", name) >= 0)
                                (void) renameat(dirfd(d), name, dirfd(d), broken);
                        continue;
                }
                if (boot && boot_id && !streq(boot, boot_id)) {
                        /* The cgroups it names went with that boot: groups of
                         * the same names now are others'. */
                        log_notice("Batch journal %s/%s is from an earlier boot (%s): removed, nothing restored.", dir,
                                   name, boot);
                        journal_entries_free(entries, n);
                        (void) unlinkat(dirfd(d), name, 0);
                        continue;
                }
                for (size_t k = n; k > 0; k--) {
                        r = restore(entries[k - 1].path, entries[k - 1].prev_freeze, userdata);
                        if (r == -ENOENT)
                                gone++;
                        else if (r < 0) {
                                failed++;
                                log_error_errno(r, "Cannot restore %s to freeze=%d: %m", entries[k - 1].path,
                                                entries[k - 1].prev_freeze);
                        } else
                                restored++;
                }
                log_notice("Recovered interrupted batch %" PRIu64 ": %u group%s restored to their previous flag, "
                           "%u gone, %u failed.",
                           ids[i], restored, restored == 1 ? "" : "s", gone, failed);
                journal_entries_free(entries, n);
                (void) unlinkat(dirfd(d), name, 0);
                recovered++;
        }
        if (ret_max_id)
                *ret_max_id = max_id;
        return recovered;
}
