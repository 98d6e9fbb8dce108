/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <time.h>

#include "cgroup-util.h"
#include "journal.h"
#include "log.h"
#include "util.h"

#define JOURNAL_VERSION 1

/* This many slots stay open (and their files in place) between batches: one,
 * for the usual one batch at a time.  A slot beyond them, for batches
 * running at once, is made for its batch and removed with it (open, pwrite,
 * unlink, close: still one syscall fewer than a file renamed into place), so
 * that a burst of calls leaves no file descriptors behind. */
#define JOURNAL_SLOTS_KEPT 1

typedef struct JournalSlot {
        int fd; /* -1: no file */
        bool busy;
        /* Its name holds what the start could not move away and this process
         * cannot write (slot_open()): no slot, skipped. */
        bool blocked;
        char *path;
} JournalSlot;

struct Journal {
        char *dir;
        char *cgroup_root; /* what the paths are relative to, recorded in each journal; or NULL */
        JournalSlot *slots;
        size_t n_slots;
        struct Found *retries; /* the journal-retry-K.json files kept (journal_recover_into()) */
        size_t n_retries;
        /* The start's listing of dir stopped short (EIO): a file found under
         * a slot's name may be a journal it did not see, which a later start
         * restores; slot_open() does not write over it. */
        bool listing_partial;
};

static void found_free(struct Found *f, size_t n);

static int pwrite_all_at(int fd, const char *buf, size_t n, off_t off) {
        while (n > 0) {
                ssize_t k = pwrite(fd, buf, n, off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += k;
                n -= (size_t) k;
                off += k;
        }
        return 0;
}

static int pwrite_all(int fd, const char *buf, size_t n) {
        return pwrite_all_at(fd, buf, n, 0);
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

/* A path as a journal holds it.  One of a group freezerd does not follow for
 * its name (not UTF-8, control characters: odd-groups.h) is no JSON string
 * (RFC 8259 text is UTF-8): "path" has it escaped as the log shows it, for
 * people (and for an older freezerd, which reads no "raw": to it the group
 * is then gone), and "raw" has its bytes in hex, which journal_parse() prefers. */
static int journal_format_path(json_object *g, const char *path) {
        static const char hex[] = "0123456789abcdef";
        _cleanup_free_ char *shown = NULL, *raw = NULL;
        size_t len = strlen(path);

        if (cg_name_is_publishable(path)) {
                json_object_object_add(g, "path", json_object_new_string(path));
                return 0;
        }
        shown = malloc(4 * len + 8);
        raw = malloc(2 * len + 1);
        if (!shown || !raw)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                raw[2 * i] = hex[(unsigned char) path[i] >> 4];
                raw[2 * i + 1] = hex[(unsigned char) path[i] & 15];
        }
        raw[2 * len] = 0;
        json_object_object_add(g, "path", json_object_new_string(cg_escape(path, true, shown, 4 * len + 8)));
        json_object_object_add(g, "raw", json_object_new_string(raw));
        return 0;
}

static int unhexchar(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1; /* (upper case is not what journal_format_path() writes) */
}

/* "raw" back to the path's bytes: -EBADMSG if it is no even run of hex
 * digits, or the path it holds is not absolute or holds a NUL byte. */
static int journal_parse_raw(const char *raw, char **ret) {
        size_t len = strlen(raw);
        _cleanup_free_ char *p = NULL;

        if (len < 2 || len % 2 != 0)
                return -EBADMSG;
        p = malloc(len / 2 + 1);
        if (!p)
                return -ENOMEM;
        for (size_t i = 0; i < len / 2; i++) {
                int hi = unhexchar(raw[2 * i]), lo = unhexchar(raw[2 * i + 1]);
                if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                        return -EBADMSG;
                p[i] = (char) (hi << 4 | lo);
        }
        p[len / 2] = 0;
        if (p[0] != '/')
                return -EBADMSG;
        *ret = TAKE_PTR(p);
        return 0;
}

/* The journal's text: one JSON object, then a newline. */
static char *journal_format(uint64_t id, const char *boot_id, const char *cgroup_root, const JournalEntry *entries,
                            size_t n) {
        json_object *root, *groups;
        const char *text;
        char *ret = NULL;

        root = json_object_new_object();
        groups = json_object_new_array_ext((int) n);
        if (!root || !groups) {
                json_object_put(root);
                json_object_put(groups);
                return NULL;
        }
        json_object_object_add(root, "version", json_object_new_int(JOURNAL_VERSION));
        json_object_object_add(root, "id", json_object_new_uint64(id));
        if (boot_id)
                json_object_object_add(root, "boot", json_object_new_string(boot_id));
        if (cgroup_root)
                json_object_object_add(root, "root", json_object_new_string(cgroup_root));
        json_object_object_add(root, "groups", groups);
        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_new_object();
                if (!g) {
                        json_object_put(root);
                        return NULL;
                }
                if (journal_format_path(g, entries[i].path) < 0) {
                        json_object_put(g);
                        json_object_put(root);
                        return NULL;
                }
                json_object_object_add(g, "prev", json_object_new_boolean(entries[i].prev_freeze));
                json_object_object_add(g, "new", json_object_new_boolean(entries[i].new_freeze));
                if (entries[i].cgroup_id != 0)
                        json_object_object_add(g, "cgroup", json_object_new_uint64(entries[i].cgroup_id));
                json_object_array_add(groups, g);
        }
        /* NULL: json-c is out of memory (and so were any of the adds above). */
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (text && asprintf(&ret, "%s\n", text) < 0)
                ret = NULL;
        json_object_put(root);
        return ret;
}

int journal_new(const char *dir, const char *cgroup_root, Journal **ret) {
        Journal *j = calloc(1, sizeof *j);

        if (!j || !(j->dir = strdup(dir)) || (cgroup_root && !(j->cgroup_root = strdup(cgroup_root)))) {
                if (j)
                        free(j->dir);
                free(j);
                return -ENOMEM;
        }
        *ret = j;
        return 0;
}

/* Closes the slot's file and removes it.  Where it cannot be removed (the
 * directory made immutable meanwhile), it is emptied, as a kept slot is: a
 * finished batch's journal left there would be undone by the next start. */
static void slot_drop(JournalSlot *s) {
        if (s->fd >= 0) {
                if (unlink(s->path) < 0 && errno != ENOENT && ftruncate(s->fd, 0) < 0)
                        log_error_errno(-errno, "Cannot remove or empty the batch journal %s, the next start will "
                                        "restore what it holds: %m",
                                        s->path);
                closep(&s->fd);
                s->fd = -1;
        }
        s->busy = false;
}

Journal *journal_free(Journal *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_slots; i++) {
                JournalSlot *s = &j->slots[i];
                if (s->busy) /* a batch still running: the next start recovers it */
                        closep(&s->fd);
                else
                        slot_drop(s);
                free(s->path);
        }
        free(j->slots);
        found_free(j->retries, j->n_retries);
        free(j->dir);
        free(j->cgroup_root);
        free(j);
        return NULL;
}

const char *journal_slot_path(const Journal *j, unsigned slot) {
        return slot < j->n_slots ? j->slots[slot].path : "(none)";
}

/* Whether the slot's file stays between batches: the first
 * JOURNAL_SLOTS_KEPT slots that are not blocked. */
static bool slot_kept(const Journal *j, size_t slot) {
        size_t before = 0;

        for (size_t i = 0; i < slot; i++)
                before += !j->slots[i].blocked;
        return !j->slots[slot].blocked && before < JOURNAL_SLOTS_KEPT;
}

/* Opens the slot's file, made empty.  A name that holds a file already is
 * one the start could not remove or move away (journal_recover_into(): a
 * directory it cannot rename, a damaged journal in a directory that cannot
 * be changed...): a regular file this process can write is written over, as
 * the start left it to be, with a notice; anything else (immutable, not a
 * regular file) is no slot, -EBUSY: it must not hold up every batch for
 * good.  After a listing that stopped short (j->listing_partial) a file
 * that holds anything is no slot either, -EBUSY: it may be a journal the
 * start did not see, whose flags a later start writes back.  (Also one the
 * start saw and could neither remove nor empty: kept, that start restores
 * it again; a file that cannot be emptied then could hardly be written over
 * now.)  The usual case, the name free, costs one open(). */
static int slot_open(const Journal *j, JournalSlot *s) {
        struct stat st;
        int r;

        s->fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (s->fd >= 0)
                return 0;
        if (errno != EEXIST)
                return -errno;
        /* O_NONBLOCK: a FIFO of that name opens at once, and is refused. */
        s->fd = open(s->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (s->fd < 0)
                r = -errno;
        else if (fstat(s->fd, &st) < 0)
                r = -errno;
        else if (!S_ISREG(st.st_mode))
                r = -EISDIR; /* (or anything else that is no file) */
        else if (st.st_size > 0 && j->listing_partial) {
                log_warning("%s holds a file that the start may not have listed (its listing of the directory "
                            "failed): left as it is for a later start, batch journals go to other files.",
                            s->path);
                closep(&s->fd);
                s->fd = -1;
                return -EBUSY;
        } else if (st.st_size > 0 && ftruncate(s->fd, 0) < 0)
                r = -errno;
        else {
                if (st.st_size > 0)
                        log_notice("%s held a batch journal that the start could not move away: written over.",
                                   s->path);
                return 0;
        }
        closep(&s->fd);
        s->fd = -1;
        if (r != -EPERM && r != -EACCES && r != -EISDIR && r != -ELOOP && r != -ENXIO && r != -EROFS && r != -ETXTBSY)
                return r; /* (no memory...: not the file's doing) */
        log_warning_errno(r, "%s is there already and cannot hold a batch journal (%s): left as it is, batch journals "
                          "go to other files: %m",
                          s->path, r == -EISDIR ? "not a regular file" : "it cannot be written");
        return -EBUSY;
}

/* A free slot with its file open (and empty), made if none is.  A kept
 * slot's file removed behind freezerd's back (the runtime directory cleaned
 * by hand) would take the journals written to it out of sight of the next
 * start: one fstat() per batch finds it unlinked, and it is made again. */
static int slot_acquire(Journal *j, unsigned *ret) {
        struct stat st;
        size_t i;
        int r;

        for (i = 0; i < j->n_slots; i++) {
                JournalSlot *s = &j->slots[i];

                if (s->busy || s->fd < 0)
                        continue;
                if (fstat(s->fd, &st) < 0 || st.st_nlink > 0)
                        goto found; /* (a failing fstat() says nothing of the name) */
                log_notice("%s was removed behind freezerd's back; making it again.", s->path);
                closep(&s->fd);
                s->fd = -1;
                goto open;
        }
again:
        for (i = 0; i < j->n_slots; i++)
                if (!j->slots[i].busy && !j->slots[i].blocked)
                        break;
        if (i == j->n_slots) {
                JournalSlot *l = realloc(j->slots, (j->n_slots + 1) * sizeof *l);
                if (!l)
                        return -ENOMEM;
                j->slots = l;
                j->slots[i] = (JournalSlot) { .fd = -1 };
                if (asprintf(&j->slots[i].path, "%s/journal-%zu.json", j->dir, i) < 0) {
                        j->slots[i].path = NULL;
                        return -ENOMEM;
                }
                j->n_slots++;
        }
open:
        r = slot_open(j, &j->slots[i]);
        if (r == -EBUSY) {
                j->slots[i].blocked = true;
                goto again;
        }
        if (r < 0)
                return r;
found:
        j->slots[i].busy = true;
        *ret = (unsigned) i;
        return 0;
}

int journal_begin(Journal *j, uint64_t id, const char *boot_id, const JournalEntry *entries, size_t n,
                  unsigned *ret_slot) {
        _cleanup_free_ char *text = journal_format(id, boot_id, j->cgroup_root, entries, n);
        unsigned slot = 0;
        int r;

        if (!text)
                return -ENOMEM;
        /* Up to 65,536 requests of paths of up to PATH_MAX bytes, and a
         * RECURSIVE request's whole subtree: more than a start can be asked
         * to read back.  Refused here, before the first flag is written,
         * rather than restored by no start. */
        if (strlen(text) > JOURNAL_SIZE_MAX)
                return -EFBIG;
        r = slot_acquire(j, &slot);
        if (r < 0)
                return r;
        /* One pwrite() into the empty file; no fsync (see journal.h). */
        r = pwrite_all(j->slots[slot].fd, text, strlen(text));
        if (r < 0) {
                /* Nothing of it may stay: emptied if kept, else removed. */
                if (!slot_kept(j, slot) || ftruncate(j->slots[slot].fd, 0) < 0)
                        slot_drop(&j->slots[slot]);
                j->slots[slot].busy = false;
                return r;
        }
        *ret_slot = slot;
        return 0;
}

int journal_end(Journal *j, unsigned slot) {
        JournalSlot *s;

        if (slot >= j->n_slots || !j->slots[slot].busy)
                return -EINVAL;
        s = &j->slots[slot];
        if (!slot_kept(j, slot)) {
                slot_drop(s);
                return 0;
        }
        if (ftruncate(s->fd, 0) < 0) {
                int r = -errno;
                slot_drop(s); /* removed, then: never a finished batch's journal left */
                return r;
        }
        s->busy = false;
        return 0;
}

void journal_entries_free(JournalEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free((char *) e[i].path);
        free(e);
}

int journal_parse(const char *text, size_t len, JournalEntry **ret, size_t *ret_n, char **ret_boot_id,
                  char **ret_cgroup_root, uint64_t *ret_id) {
        json_tokener *tok;
        json_object *root, *groups, *v, *boot = NULL, *id = NULL, *cgroot = NULL;
        char *boot_id = NULL, *cgroup_root = NULL;
        JournalEntry *entries = NULL;
        size_t n;

        if (len > INT32_MAX)
                return -EFBIG;
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        /* journal_format() ends the text with a newline: a text without it
         * that is all the start of one is a journal cut short (or empty, a
         * free slot). */
        bool whole = len > 0 && text[len - 1] == '\n';
        root = json_tokener_parse_ex(tok, text, (int) (whole ? len - 1 : len));
        if (!root && json_tokener_get_error(tok) == json_tokener_continue) {
                json_tokener_free(tok);
                return whole ? -EBADMSG : -ENODATA;
        }
        if (whole)
                len--;
        if (!root || json_tokener_get_error(tok) != json_tokener_success ||
            json_tokener_get_parse_end(tok) != len) {
                json_tokener_free(tok);
                json_object_put(root);
                return -EBADMSG;
        }
        json_tokener_free(tok);

        if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "version", &v) ||
            !json_object_is_type(v, json_type_int)) {
                json_object_put(root);
                return -EBADMSG;
        }
        /* Another version is a journal, of a freezerd that writes another
         * format (a newer one, before a downgrade): told apart so the log
         * can say so rather than call it damaged. */
        if (json_object_get_int64(v) != JOURNAL_VERSION) {
                json_object_put(root);
                return -EPROTONOSUPPORT;
        }
        if (!json_object_object_get_ex(root, "groups", &groups) || !json_object_is_type(groups, json_type_array)) {
                json_object_put(root);
                return -EBADMSG;
        }
        if ((json_object_object_get_ex(root, "boot", &boot) && !json_object_is_type(boot, json_type_string)) ||
            (json_object_object_get_ex(root, "id", &id) &&
             (!json_object_is_type(id, json_type_int) || json_object_get_int64(id) < 0)) ||
            (json_object_object_get_ex(root, "root", &cgroot) &&
             (!json_object_is_type(cgroot, json_type_string) || json_object_get_string(cgroot)[0] != '/'))) {
                json_object_put(root);
                return -EBADMSG;
        }
        n = json_object_array_length(groups);
        entries = calloc(n ?: 1, sizeof *entries);
        if (boot && ret_boot_id)
                boot_id = strdup(json_object_get_string(boot));
        if (cgroot && ret_cgroup_root)
                cgroup_root = strdup(json_object_get_string(cgroot));
        if (!entries || (boot && ret_boot_id && !boot_id) || (cgroot && ret_cgroup_root && !cgroup_root)) {
                free(entries);
                free(boot_id);
                free(cgroup_root);
                json_object_put(root);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_array_get_idx(groups, i), *p, *pr, *nw, *cg = NULL, *raw = NULL;
                if (!json_object_is_type(g, json_type_object) || !json_object_object_get_ex(g, "path", &p) ||
                    !json_object_is_type(p, json_type_string) || !json_object_object_get_ex(g, "prev", &pr) ||
                    !json_object_is_type(pr, json_type_boolean) || !json_object_object_get_ex(g, "new", &nw) ||
                    !json_object_is_type(nw, json_type_boolean) || json_object_get_string(p)[0] != '/' ||
                    (json_object_object_get_ex(g, "cgroup", &cg) &&
                     (!json_object_is_type(cg, json_type_int) || json_object_get_int64(cg) < 0)) ||
                    (json_object_object_get_ex(g, "raw", &raw) && !json_object_is_type(raw, json_type_string))) {
                        journal_entries_free(entries, i);
                        free(boot_id);
                        free(cgroup_root);
                        json_object_put(root);
                        return -EBADMSG;
                }
                if (raw) {
                        char *path = NULL;
                        int r = journal_parse_raw(json_object_get_string(raw), &path);
                        if (r < 0) {
                                journal_entries_free(entries, i);
                                free(boot_id);
                                free(cgroup_root);
                                json_object_put(root);
                                return r;
                        }
                        entries[i].path = path;
                } else
                        entries[i].path = strdup(json_object_get_string(p));
                if (!entries[i].path) {
                        journal_entries_free(entries, i);
                        free(boot_id);
                        free(cgroup_root);
                        json_object_put(root);
                        return -ENOMEM;
                }
                entries[i].prev_freeze = json_object_get_boolean(pr);
                entries[i].new_freeze = json_object_get_boolean(nw);
                entries[i].cgroup_id = cg ? json_object_get_uint64(cg) : 0;
        }
        if (ret_id)
                *ret_id = id ? json_object_get_uint64(id) : 0;
        json_object_put(root);
        *ret = entries;
        *ret_n = n;
        if (ret_boot_id)
                *ret_boot_id = boot_id;
        if (ret_cgroup_root)
                *ret_cgroup_root = cgroup_root;
        return 0;
}

/* -EISDIR: name is no regular file (a directory, symlink, socket, FIFO,
 * device), which no start could read as a journal; -EBADMSG: one over
 * JOURNAL_SIZE_MAX.  Any other error is not the file's content (EMFILE,
 * ENOMEM, EIO): recover() tells those another start may not meet
 * (journal_error_is_passing()) from the others. */
static int read_small_file(int dirfd, const char *name, char **ret, size_t *ret_len) {
        /* O_NONBLOCK: a FIFO of that name must not hold up the start (it is
         * no regular file, said so below); a file's reads ignore it. */
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        int r;

        if (fd < 0) {
                r = -errno;
                /* A symlink (ELOOP, of O_NOFOLLOW), a socket (ENXIO), a
                 * device without a driver...: told by what it is, not by
                 * the error, which for a regular file means the start
                 * could not read it now. */
                if (r == -ELOOP || (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && !S_ISREG(st.st_mode)))
                        return -EISDIR;
                return r;
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR; /* (or anything else that is no file: said as "not a regular file") */
        r = read_full_fd(fd, JOURNAL_SIZE_MAX, ret, ret_len);
        return r == -EFBIG ? -EBADMSG : r;
}

/* A path for the log: escaped where it is no UTF-8 that can be shown as is. */
static const char *path_shown(const char *path, char *buf, size_t size) {
        return cg_escape(path, !cg_name_is_publishable(path), buf, size);
}

/* The boot id at the head of a journal that cannot be parsed whole: one cut
 * short, or with NUL bytes where a disk's blocks were never written (a power
 * loss on a --runtime-dir that outlives a reboot).  journal_format() writes
 * the members in the order it adds them, "boot" third, in the first bytes of
 * the file; NULL if the text does not start so. */
static char *journal_head_boot(const char *text, size_t len) {
        char head[64];
        size_t k, n;

        n = (size_t) snprintf(head, sizeof head, "{\"version\":%d,\"id\":", JOURNAL_VERSION);
        if (len < n || memcmp(text, head, n) != 0)
                return NULL;
        for (k = n; k < len && text[k] >= '0' && text[k] <= '9'; k++)
                ;
        if (k == n)
                return NULL;
        n = strlen(",\"boot\":\"");
        if (len - k < n || memcmp(text + k, ",\"boot\":\"", n) != 0)
                return NULL;
        k += n;
        for (n = 0; k + n < len && n < 64 && (isalnum((unsigned char) text[k + n]) || text[k + n] == '-'); n++)
                ;
        if (n == 0 || k + n >= len || text[k + n] != '"')
                return NULL;
        return strndup(text + k, n);
}

/* An error of read_small_file() or journal_parse() that is about the file:
 * no start will read it as a journal, and it is kept as *.broken.
 * (-ENODATA, a journal cut short, is removed before.) */
static bool journal_error_is_content(int r) {
        return r == -EBADMSG || r == -EPROTONOSUPPORT || r == -EISDIR || r == -EFBIG;
}

/* An error reading a journal that says nothing of the file and that a later
 * start does not meet again: the process's or the machine's resources. */
static bool journal_error_is_passing(int r) {
        return r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -ENOBUFS || r == -EAGAIN || r == -EINTR;
}

typedef struct Found {
        char *name;
        uint64_t id;
        char *boot;
        char *cgroup_root;
        JournalEntry *entries;
        size_t n;
} Found;

static int cmp_found_desc(const void *a, const void *b) {
        uint64_t x = ((const Found *) a)->id, y = ((const Found *) b)->id;
        return x < y ? 1 : x > y ? -1 : 0;
}

static void found_done(Found *f) {
        free(f->name);
        free(f->boot);
        free(f->cgroup_root);
        journal_entries_free(f->entries, f->n);
}

static void found_free(Found *f, size_t n) {
        for (size_t i = 0; i < n; i++)
                found_done(&f[i]);
        free(f);
}

/* A journal's name: a slot's, journal-K.json, or the groups of batch K that
 * a start could not restore, journal-retry-K.json (keep_failed()). */
static bool journal_name(const char *name) {
        uint64_t k;
        char tail[8];

        return (sscanf(name, "journal-%" SCNu64 ".%5s", &k, tail) == 2 ||
                sscanf(name, "journal-retry-%" SCNu64 ".%5s", &k, tail) == 2) &&
               streq(tail, "json");
}

/* dfd/name holds text, whole, or what it held: written as .NAME.tmp and
 * renamed (a start removes such a file that a crash left). */
static int write_replace(int dfd, const char *name, const char *text) {
        _cleanup_free_ char *tmp = NULL;
        int r;

        if (asprintf(&tmp, ".%s.tmp", name) < 0) {
                tmp = NULL;
                return -ENOMEM;
        }
        _cleanup_close_ int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = pwrite_all(fd, text, strlen(text));
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dfd, tmp, 0);
        return r;
}

/* dfd/name, a file that exists, holds text: written in place (its directory
 * may be one that cannot be changed, where its file can).  Not truncated
 * first: a write that then failed (ENOSPC, the room the truncation freed taken
 * meanwhile, or too little for a longer text) would leave it empty or cut
 * short, which the next start removes, while the caller says the old text is
 * kept.  So:
 *  - the part of text beyond the file's end is written first: where that
 *    fails, the file is cut back to its old length, as it was (*ret_lost
 *    false: the caller may count on the old text);
 *  - then its first byte is made one no JSON starts with, the rest of text is
 *    written after it, the file cut to text's length, and the first byte
 *    written last.  A write between that fails (EIO; ENOSPC where a file
 *    system copies the blocks written over) has spoilt the old text: the
 *    file is emptied, which a start removes, and *ret_lost is true.
 * Not whole across a crash, but never part of each text that parses as
 * another journal: the start keeps what is left as damaged, restoring
 * nothing of it.  An empty text empties the file. */
static int write_in_place(int dfd, const char *name, const char *text, bool *ret_lost) {
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        size_t len = strlen(text), head;
        struct stat st;
        int r;

        if (ret_lost)
                *ret_lost = false;
        if (fd < 0)
                return -errno;
        if (len == 0)
                return ftruncate(fd, 0) < 0 ? -errno : 0;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* (head: the part of text that goes over the old one) */
        head = (off_t) len < st.st_size ? len : (size_t) st.st_size;
        if (len > head) {
                r = pwrite_all_at(fd, text + head, len - head, (off_t) head);
                if (r < 0) {
                        (void) ftruncate(fd, st.st_size);
                        return r;
                }
        }
        r = pwrite_all_at(fd, "#", 1, 0);
        if (r < 0) {
                (void) ftruncate(fd, st.st_size);
                return r;
        }
        if (head > 1)
                r = pwrite_all_at(fd, text + 1, head - 1, 1);
        if (r >= 0 && (off_t) len < st.st_size && ftruncate(fd, (off_t) len) < 0)
                r = -errno;
        if (r >= 0)
                r = pwrite_all_at(fd, text, 1, 0);
        if (r < 0) {
                (void) ftruncate(fd, 0);
                if (ret_lost)
                        *ret_lost = true;
        }
        return r;
}

/* The groups of journal f that could not be restored (a cgroup.freeze write
 * refused: a cgroup file system mounted read-only, say) are not dropped with
 * it: they are written to journal-retry-<id>.json, a name no batch's slot
 * takes (a slot's file is truncated when a batch takes it), and the next
 * start restores them as any journal's; f is removed.  The groups restored
 * are not kept: written again at the next start, they would undo what was
 * asked of them since.  Should that file not be made (a directory that
 * cannot be changed), f is written over in place if it is that file, or else
 * renamed so, all its groups kept (journal_forget() drops those changed since,
 * writing the file over in place where it cannot replace it).  *ret_name is the name
 * kept.  Returns 1 if it holds failed (and boot_id, cgroup_root where f has
 * none), 0 if f as it is (also where f is that file and its write in place
 * failed before it changed it).  Where nothing can be kept, -errno: f is
 * removed, or emptied where it cannot be, or where it is that file and its
 * write in place failed halfway (*ret_dropped says which, else NULL), its
 * failed groups not tried again: left whole under a slot's name, which
 * journal_forget() must not write (a batch may hold that slot), the next
 * start would write back every group of it, also those restored now,
 * undoing whatever a batch asked of them since. */
static int keep_failed(int dfd, const Found *f, const JournalEntry *failed, size_t n, const char *boot_id,
                       const char *cgroup_root, char **ret_name, const char **ret_dropped) {
        _cleanup_free_ char *name = NULL, *text = NULL;
        int r = -ENOMEM;

        *ret_dropped = NULL;
        if (asprintf(&name, "journal-retry-%" PRIu64 ".json", f->id) < 0) {
                name = NULL;
                return -ENOMEM;
        }
        /* (A journal of before boot ids or cgroup roots were recorded is of
         * this boot, and its paths are below this cgroup root.) */
        text = journal_format(f->id, f->boot ?: boot_id, f->cgroup_root ?: cgroup_root, failed, n);
        if (text)
                r = write_replace(dfd, name, text);
        if (r >= 0) {
                if (!streq(f->name, name))
                        (void) unlinkat(dfd, f->name, 0);
                *ret_name = TAKE_PTR(name);
                return 1;
        }
        if (streq(f->name, name)) {
                bool lost = false;

                r = text ? write_in_place(dfd, name, text, &lost) : -ENOMEM;
                if (r < 0 && lost) {
                        *ret_dropped = "emptied";
                        return r;
                }
                *ret_name = TAKE_PTR(name);
                return r >= 0;
        }
        if (renameat(dfd, f->name, dfd, name) >= 0) {
                *ret_name = TAKE_PTR(name);
                return 0;
        }
        r = -errno;
        if (unlinkat(dfd, f->name, 0) >= 0 || errno == ENOENT)
                *ret_dropped = "removed";
        else {
                _cleanup_close_ int fd = openat(dfd, f->name, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
                if (fd >= 0)
                        *ret_dropped = "emptied";
        }
        return r;
}

/* A journal-retry file, as it is now, for journal_forget(): copied. */
static int retry_add(Journal *j, const char *name, uint64_t id, const char *boot, const char *cgroup_root,
                     const JournalEntry *entries, size_t n) {
        Found f = { .id = id, .n = 0 };

        f.entries = calloc(n ?: 1, sizeof *f.entries);
        if (!f.entries || !(f.name = strdup(name)) || (boot && !(f.boot = strdup(boot))) ||
            (cgroup_root && !(f.cgroup_root = strdup(cgroup_root)))) {
                found_done(&f);
                return -ENOMEM;
        }
        for (; f.n < n; f.n++) {
                f.entries[f.n] = entries[f.n];
                if (!(f.entries[f.n].path = strdup(entries[f.n].path))) {
                        found_done(&f);
                        return -ENOMEM;
                }
        }
        Found *l = realloc(j->retries, (j->n_retries + 1) * sizeof *l);
        if (!l) {
                found_done(&f);
                return -ENOMEM;
        }
        j->retries = l;
        j->retries[j->n_retries++] = f;
        return 0;
}

/* journal_recover_into(), with the files kept for another try recorded in j
 * as they are written, not read again. */
static int recover(const char *dir, const char *boot_id, const char *cgroup_root, journal_restore_t restore,
                   void *userdata, uint64_t *ret_max_id, Journal *j) {
        _cleanup_(closedirp) DIR *d = NULL;
        Found *found = NULL;
        size_t n_found = 0, cap = 0;
        uint64_t max_id = 0;
        int recovered = 0;

        if (ret_max_id)
                *ret_max_id = 0;
        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        /* Read them all first: the order is by the ids they record (a slot's
         * name says nothing of its batch's age).  (errno set to 0 before each
         * readdir(), which leaves it so at the end of the listing and sets it
         * where the listing fails: told apart below.) */
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                Found f = {};
                int r;

                size_t nl = strlen(de->d_name);
                if (strncmp(de->d_name, ".journal-retry-", 15) == 0 && nl > 4 && streq(de->d_name + nl - 4, ".tmp")) {
                        /* keep_failed() stopped by a crash: the journal it
                         * kept the groups of is still there */
                        (void) unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                if (!journal_name(de->d_name))
                        continue;
                r = read_small_file(dirfd(d), de->d_name, &text, &len);
                if (r >= 0 && len == 0) { /* a free slot */
                        (void) unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                if (r >= 0)
                        r = journal_parse(text, len, &f.entries, &f.n, &f.boot, &f.cgroup_root, &f.id);
                if (r == -ENODATA || r == -EBADMSG) {
                        /* A journal of an earlier boot is removed unread, whole
                         * or not: its groups went with that boot.  A damaged
                         * one (a power loss on a disk-backed runtime
                         * directory) is told by the boot id at its head. */
                        _cleanup_free_ char *head_boot = boot_id && text ? journal_head_boot(text, len) : NULL;
                        if (head_boot && !streq(head_boot, boot_id)) {
                                log_notice("Batch journal %s/%s is from an earlier boot (%s) and %s: removed, "
                                           "nothing restored.",
                                           dir, de->d_name, head_boot,
                                           r == -ENODATA ? "was cut short"
                                                         : "damaged (a power loss?)");
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                                continue;
                        }
                }
                if (r == -ENODATA) {
                        log_notice("Batch journal %s/%s was cut short while it was written, before its batch "
                                   "wrote any flag: removed, nothing to restore.",
                                   dir, de->d_name);
                        (void) unlinkat(dirfd(d), de->d_name, 0);
                        continue;
                }
                if (r == -ENOENT) /* (removed since it was listed) */
                        continue;
                if (r < 0 && journal_error_is_passing(r)) {
                        /* Not the file's doing but the moment's (too many open
                         * files, no memory): a journal that may be whole, left
                         * as it is for a start that can read it.  Renamed to
                         * *.broken, its flags were never restored.  So the
                         * start fails, having restored nothing, and the
                         * service manager's restart reads every journal
                         * again.  Not for an error that a restart meets again
                         * (EIO, EACCES): that would keep freezerd from
                         * starting at all; such a journal is kept as *.broken
                         * below, with the error, as a damaged one. */
                        log_error_errno(r, "Cannot read batch journal %s/%s: %m; left as it is for the next start, "
                                        "which restores its flags.",
                                        dir, de->d_name);
                        found_free(found, n_found);
                        return r;
                }
                if (r < 0) {
                        _cleanup_free_ char *broken = NULL;
                        /* Kept for a human, out of the way of the slot of that
                         * name: the message says where, or that it could not. */
                        int rk = rename_broken(dirfd(d), de->d_name, &broken);
                        _cleanup_free_ char *kept = NULL;
                        if (rk == 0 ? asprintf(&kept, "kept as %s", broken) < 0
                                   : asprintf(&kept, "left as it is (cannot rename it to %s: %s)",
                                              broken ?: "*.broken", strerror(-rk)) < 0)
                                kept = NULL;
                        if (r == -EPROTONOSUPPORT)
                                log_error("Batch journal %s/%s is in a format other than this freezerd's "
                                          "(version %d), written by another version of freezerd: %s, its flags "
                                          "are not restored.",
                                          dir, de->d_name, JOURNAL_VERSION, kept ?: "kept");
                        else if (journal_error_is_content(r))
                                log_error("Batch journal %s/%s is damaged (%s): %s, its flags are not restored.",
                                          dir, de->d_name,
                                          r == -EISDIR ? "not a regular file"
                                                       : "not a journal: JSON of another shape, or not JSON",
                                          kept ?: "kept");
                        else
                                log_error("Cannot read batch journal %s/%s: %s; %s, its flags are not restored.",
                                          dir, de->d_name, strerror(-r), kept ?: "kept");
                        continue;
                }
                if (n_found == cap) {
                        size_t c = cap ? cap * 2 : 8;
                        Found *l = realloc(found, c * sizeof *l);
                        if (!l) {
                                found_done(&f); /* f is on the stack: only its members are freed */
                                found_free(found, n_found);
                                return -ENOMEM;
                        }
                        found = l;
                        cap = c;
                }
                f.name = strdup(de->d_name);
                found[n_found++] = f;
                if (!f.name) {
                        found_free(found, n_found);
                        return -ENOMEM;
                }
                if (f.id > max_id)
                        max_id = f.id;
        }
        if (errno != 0) {
                /* The listing stopped short (EIO of a disk or network file
                 * system; not the directory removed meanwhile, which glibc's
                 * readdir() takes for the end of it): any journal after
                 * the point reached was not seen.  As for a journal's read:
                 * a lack of resources, or an interruption, fails the start,
                 * having restored nothing, and the service manager's restart
                 * lists them all again; restoring those listed alone, newest
                 * first among them, could write an older batch's flags over
                 * a newer one's that was not listed.  Any other error would
                 * come again at every start and keep freezerd from starting
                 * at all: said, with what it means, and the journals listed
                 * are recovered; never taken silently for a whole listing. */
                int r = -errno;
                if (journal_error_is_passing(r)) {
                        log_error_errno(r, "Cannot list the batch journals in %s: %m; left as they are for the next "
                                        "start, which restores their flags.",
                                        dir);
                        found_free(found, n_found);
                        return r;
                }
                log_error_errno(r, "Cannot list all of the batch journals in %s: %m; the %zu journal%s read before "
                                "the error %s recovered, any others are left as they are (not restored now: a later "
                                "start that lists them writes their flags back).",
                                dir, n_found, n_found == 1 ? "" : "s", n_found == 1 ? "is" : "are");
                /* Those others are kept so: no batch's journal is written
                 * over one (slot_open()), and the ids given from now on are
                 * above theirs, lest a later start restore them in the
                 * wrong order (newest first: a new batch's journal, below
                 * an unseen older one's id, would be restored after it,
                 * its flags over the older batch's).  An id is the largest
                 * one seen at a start plus one a batch: never above the
                 * nanoseconds since boot when given (a batch takes more than
                 * one); journals of an earlier boot are removed unread. */
                struct timespec ts;
                j->listing_partial = true;
                if (clock_gettime(CLOCK_BOOTTIME, &ts) >= 0 &&
                    (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec > max_id)
                        max_id = (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
        }
        if (n_found > 1)
                qsort(found, n_found, sizeof *found, cmp_found_desc);

        for (size_t i = 0; i < n_found; i++) {
                const Found *f = &found[i];
                unsigned restored = 0, unchanged = 0, gone = 0, replaced = 0, failed = 0;
                _cleanup_free_ JournalEntry *failed_entries = NULL;
                const char *first_replaced = NULL;
                int r;

                if (f->boot && boot_id && !streq(f->boot, boot_id)) {
                        /* The cgroups it names went with that boot: groups of
                         * the same names now are others'. */
                        log_notice("Batch journal %s/%s is from an earlier boot (%s): removed, nothing restored.", dir,
                                   f->name, f->boot);
                        (void) unlinkat(dirfd(d), f->name, 0);
                        continue;
                }
                if (f->cgroup_root && cgroup_root && !streq(f->cgroup_root, cgroup_root))
                        log_notice("Batch journal %s/%s was written by a freezerd with cgroup root %s (now %s): "
                                   "its groups are restored there.",
                                   dir, f->name, f->cgroup_root, cgroup_root);
                for (size_t k = f->n; k > 0; k--) {
                        r = restore(f->cgroup_root, &f->entries[k - 1], userdata);
                        if (r == -ENOENT)
                                gone++;
                        else if (r == -ESTALE) {
                                gone++;
                                if (replaced++ == 0)
                                        first_replaced = f->entries[k - 1].path;
                        }
                        else if (r > 0)
                                unchanged++;
                        else if (r < 0) {
                                /* Once: where it fails, the whole journal is kept, not a
                                 * list with holes for the failures before. */
                                if (failed == 0)
                                        failed_entries = calloc(f->n, sizeof *failed_entries);
                                if (failed_entries) /* (else the whole journal is kept) */
                                        failed_entries[failed] = f->entries[k - 1];
                                failed++;
                                char esc[1024];
                                log_error_errno(r, "Cannot restore %s to freeze=%d: %m",
                                                path_shown(f->entries[k - 1].path, esc, sizeof esc),
                                                f->entries[k - 1].prev_freeze);
                        } else
                                restored++;
                }
                log_notice("Recovered interrupted batch %" PRIu64 ": %u %s previous flag%s, "
                           "%u had it already (not written before the stop), %u gone, %u failed.",
                           f->id, restored, restored == 1 ? "group restored to its" : "groups restored to their",
                           restored == 1 ? "" : "s", unchanged, gone, failed);
                char esc[1024];
                if (replaced > 0)
                        log_notice("Of batch %" PRIu64 "'s gone groups, %u (%s%s) %s removed and made again since "
                                   "the stop: a new group of that name is left as it is.",
                                   f->id, replaced, path_shown(first_replaced, esc, sizeof esc),
                                   replaced > 1 ? ", ..." : "",
                                   replaced > 1 ? "were" : "was");
                if (failed > 0) {
                        _cleanup_free_ char *kept = NULL;
                        /* (In the journal's order, which a restore goes through backwards.) */
                        for (size_t a = 0; failed_entries && a < failed / 2; a++) {
                                JournalEntry t = failed_entries[a];
                                failed_entries[a] = failed_entries[failed - 1 - a];
                                failed_entries[failed - 1 - a] = t;
                        }
                        /* Not dropped with the journal: the next start tries
                         * again. */
                        const char *dropped = NULL;
                        r = keep_failed(dirfd(d), f, failed_entries ?: f->entries, failed_entries ? failed : f->n,
                                        boot_id, cgroup_root, &kept, &dropped);
                        if (r >= 0) {
                                int k = r > 0 ? retry_add(j, kept, f->id, f->boot ?: boot_id,
                                                          f->cgroup_root ?: cgroup_root,
                                                          failed_entries ?: f->entries,
                                                          failed_entries ? failed : f->n)
                                              : retry_add(j, kept, f->id, f->boot, f->cgroup_root, f->entries, f->n);
                                if (k < 0)
                                        log_warning_errno(k, "Cannot remember %s/%s: a flag written since is written "
                                                          "back at the next start: %m",
                                                          dir, kept);
                        }
                        if (r < 0 && dropped)
                                log_error_errno(r, "Cannot keep the %u group%s of batch %" PRIu64 " that could not be "
                                                "restored in %s/journal-retry-%" PRIu64 ".json, nor %s/%s as it "
                                                "is: %s, they are not tried again (the next start would write "
                                                "back every group of it): %m",
                                                failed, failed == 1 ? "" : "s", f->id, dir, f->id, dir, f->name,
                                                dropped);
                        else if (r < 0)
                                log_error_errno(r, "Cannot keep the %u group%s of batch %" PRIu64 " that could not be "
                                                "restored in %s/journal-retry-%" PRIu64 ".json, nor remove or empty "
                                                "%s/%s: left as it is, the next start writes back every group of it "
                                                "again: %m",
                                                failed, failed == 1 ? "" : "s", f->id, dir, f->id, dir, f->name);
                        else
                                log_error("The %u group%s of batch %" PRIu64 " that could not be restored %s kept in "
                                          "%s/%s: the next start tries again.",
                                          failed, failed == 1 ? "" : "s", f->id, failed == 1 ? "is" : "are", dir,
                                          kept);
                } else if (unlinkat(dirfd(d), f->name, 0) < 0 && errno != ENOENT) {
                        /* Where it cannot be removed (a directory that cannot
                         * be changed), emptied, as a slot is (slot_drop()):
                         * left whole, the next start would write every group
                         * of it back again, undoing what calls asked of them
                         * since.  A start removes an empty file. */
                        int k = -errno, e = write_in_place(dirfd(d), f->name, "", NULL);
                        if (e < 0)
                                log_error("Cannot remove batch journal %s/%s (%s) or empty it (%s): the next start "
                                          "restores its groups again.",
                                          dir, f->name, strerror(-k), strerror(-e));
                }
                recovered++;
        }
        found_free(found, n_found);
        if (ret_max_id)
                *ret_max_id = max_id;
        return recovered;
}

int journal_recover_into(Journal *j, const char *boot_id, journal_restore_t restore, void *userdata,
                         uint64_t *ret_max_id) {
        return recover(j->dir, boot_id, j->cgroup_root, restore, userdata, ret_max_id, j);
}

static bool retry_entry_is(const JournalEntry *e, const char *path, uint64_t cgroup_id) {
        return streq(e->path, path) && (e->cgroup_id == 0 || cgroup_id == 0 || e->cgroup_id == cgroup_id);
}

void journal_forget(Journal *j, const char *path, uint64_t cgroup_id) {
        for (size_t i = 0; i < j->n_retries; i++) {
                Found *f = &j->retries[i];
                size_t k = 0;

                /* (Paths below another cgroup root are other groups.  A
                 * file that records none, of the format before roots were
                 * recorded, is below this one: this start restored it so.) */
                if (f->cgroup_root && !streq_ptr(f->cgroup_root, j->cgroup_root))
                        continue;
                _cleanup_free_ JournalEntry *kept = NULL;
                bool found = false;
                for (size_t a = 0; a < f->n && !found; a++)
                        found = retry_entry_is(&f->entries[a], path, cgroup_id);
                if (!found)
                        continue;
                /* The file first, from a copy: one that cannot be changed
                 * stays in memory too, tried again at the group's next
                 * change. */
                kept = calloc(f->n, sizeof *kept);
                if (!kept)
                        continue; /* (no memory: the entry stays, as for a failed write) */
                for (size_t a = 0; a < f->n; a++)
                        if (!retry_entry_is(&f->entries[a], path, cgroup_id))
                                kept[k++] = f->entries[a];

                _cleanup_close_ int dfd = open(j->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                _cleanup_free_ char *text = NULL;
                char esc[1024];
                bool emptied = false, lost = false;
                int r = 0;
                if (dfd < 0)
                        r = -errno;
                else if (k == 0) {
                        /* Where it cannot be removed (a directory that cannot
                         * be changed), emptied: a start removes an empty file. */
                        if (unlinkat(dfd, f->name, 0) < 0 && errno != ENOENT) {
                                r = -errno;
                                if (write_in_place(dfd, f->name, "", NULL) >= 0)
                                        r = 0, emptied = true;
                        }
                } else {
                        text = journal_format(f->id, f->boot, f->cgroup_root, kept, k);
                        r = text ? write_replace(dfd, f->name, text) : -ENOMEM;
                        /* Where it cannot be replaced (a directory that cannot
                         * be changed, or no room for a copy), written over in
                         * place, as keep_failed() does: left as it is, the
                         * next start would write the flag back, undoing what
                         * was asked of it since.  The text is shorter than the
                         * file's, so write_in_place() needs no room but the
                         * blocks the file has (a file system that copies what
                         * is written over may fail it halfway: then the file
                         * is emptied, said below).  Not for other failures
                         * (EIO), which may pass. */
                        if ((r == -EPERM || r == -EACCES || r == -ENOSPC || r == -EDQUOT) && text) {
                                int q = write_in_place(dfd, f->name, text, &lost);
                                if (q >= 0 || lost)
                                        r = q;
                        }
                }
                if (r < 0 && lost) {
                        log_error_errno(r, "The flag of %s was set or asked for since the start, but %s/%s, which would "
                                        "write it back at the next start, could not be written over in place and is "
                                        "emptied: the next start restores none of its groups: %m",
                                        path_shown(path, esc, sizeof esc), j->dir, f->name);
                        /* Nothing of it is restored now: forgotten here too.
                         * Kept, the next journal_forget() of another of its
                         * groups wrote the file again from the old list,
                         * this group with it, whose flag the next start
                         * then wrote back. */
                        found_done(f);
                        j->retries[i--] = j->retries[--j->n_retries];
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(r, "The flag of %s was set or asked for since the start, but %s/%s, which would "
                                          "write it back at the next start, cannot be changed: %m",
                                          path_shown(path, esc, sizeof esc), j->dir, f->name);
                        continue;
                }
                log_notice("The flag of %s was set or asked for since the start: the next start does not write it "
                           "back from %s/%s%s.",
                           path_shown(path, esc, sizeof esc), j->dir, f->name,
                           k == 0 ? (emptied ? " (emptied: nothing left in it)" : " (removed: nothing left in it)") : "");
                for (size_t a = 0; a < f->n; a++)
                        if (retry_entry_is(&f->entries[a], path, cgroup_id))
                                free((char *) f->entries[a].path);
                memcpy(f->entries, kept, k * sizeof *kept);
                f->n = k;
                if (k == 0) {
                        found_done(f);
                        j->retries[i--] = j->retries[--j->n_retries];
                }
        }
}

bool journal_has_retries(const Journal *j) {
        return j && j->n_retries > 0;
}
