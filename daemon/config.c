/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "cgroup-util.h"
#include "config.h"
#include "json-diag.h"
#include "util.h"

#define CONFIG_SIZE_MAX (1024U * 1024U)
#define CONFIG_TIMEOUT_USEC_MAX (24ULL * 60ULL * 60ULL * USEC_PER_SEC)


static void json_tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

static void json_object_putp(struct json_object **o) {
        json_object_put(*o);
}

static void strv_freep(char ***l) {
        if (!*l)
                return;
        for (char **i = *l; *i; i++)
                free(*i);
        free(*l);
}

int config_init_defaults(Config *c) {
        char **track;

        if (!c)
                return -EINVAL;

        track = calloc(2, sizeof(char *));
        if (!track)
                return -ENOMEM;
        track[0] = strdup("/");
        if (!track[0]) {
                free(track);
                return -ENOMEM;
        }

        *c = (Config) {
                .cgroup_root = NULL,
                .track = track,
                .n_track = 1,
                .default_timeout_usec = CONFIG_DEFAULT_TIMEOUT_USEC,
                .realtime_writes = true,
        };
        return 0;
}

void config_done(Config *c) {
        if (!c)
                return;

        free(c->cgroup_root);
        strv_freep(&c->track);
        *c = (Config) {};
}

/* ---------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------- */

/* "<filename>:<line>[:<column>]: <message>".  Returns -EINVAL, or -ENOMEM if
 * the message could not be built. */
_printf_(5, 6)
static int set_error(char **ret_error, const char *filename, unsigned line, unsigned column, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int k;

        if (!ret_error)
                return -EINVAL;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                return -ENOMEM;
        }

        if (column > 0)
                k = asprintf(ret_error, "%s:%u:%u: %s", filename, line, column, msg);
        else
                k = asprintf(ret_error, "%s:%u: %s", filename, line, msg);
        if (k < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }

        return -EINVAL;
}

/* A message about the file as a whole.  errno is set to -error first, so that
 * %m works.  Returns error, or -ENOMEM if the message could not be built. */
_printf_(3, 4)
static int set_file_error(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;
        int k;

        if (!ret_error)
                return error;

        errno = -error;
        va_start(ap, fmt);
        k = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        if (k < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }

        return error;
}


/* ---------------------------------------------------------------------------
 * Keys of the top-level object, in text order, with their lines.
 *
 * json-c keeps neither positions nor duplicate keys (the last one wins), so we
 * walk the raw text ourselves.  This runs only after json-c accepted the text
 * in strict mode, so the text is one well-formed object: outside of
 * double-quoted strings there is only structure, whitespace, numbers and
 * literals, except for single-quoted strings, which json-c accepts even in
 * strict mode and which we reject here.  Keys are decoded by json-c itself so
 * that escapes (\u0074rack) compare correctly.
 * ------------------------------------------------------------------------- */

/* Returns the offset of the first single quote outside of double-quoted
 * strings, or len if there is none. */
static size_t find_single_quote(const char *text, size_t len) {
        bool in_string = false;

        for (size_t i = 0; i < len; i++) {
                if (in_string) {
                        if (text[i] == '\\')
                                i++;
                        else if (text[i] == '"')
                                in_string = false;
                } else if (text[i] == '"')
                        in_string = true;
                else if (text[i] == '\'')
                        return i;
        }

        return len;
}

typedef struct KeyScanner {
        const char *text;
        size_t len;
        size_t pos;
        unsigned line;
        unsigned depth;
        bool expect_key;
} KeyScanner;

/* Returns 1 and the decoded key (malloc'ed; *ret_len its length, which may
 * differ from strlen() if it contains \u0000) and its line; 0 at the end;
 * -EBADMSG if the text is not what json-c accepted (cannot happen); -ENOMEM.
 * Single-quoted strings must have been refused before (find_single_quote()). */
static int key_scanner_next(KeyScanner *s, char **ret, size_t *ret_len, unsigned *ret_line) {
        while (s->pos < s->len) {
                char c = s->text[s->pos];

                switch (c) {

                case '"': {
                        size_t start = s->pos, end = s->pos + 1;
                        unsigned line = s->line;

                        while (end < s->len && s->text[end] != '"') {
                                if (s->text[end] == '\\')
                                        end++;
                                else if (s->text[end] == '\n')
                                        s->line++;
                                end++;
                        }
                        if (end >= s->len)
                                return -EBADMSG; /* cannot happen after json-c accepted the text */
                        s->pos = end + 1;

                        if (s->depth != 1 || !s->expect_key)
                                break;
                        s->expect_key = false;

                        _cleanup_(json_tokener_freep) struct json_tokener *tok = json_tokener_new();
                        if (!tok)
                                return -ENOMEM;
                        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

                        _cleanup_(json_object_putp) struct json_object *o =
                                json_tokener_parse_ex(tok, s->text + start, (int) (end + 1 - start));
                        if (!o || !json_object_is_type(o, json_type_string))
                                return -EBADMSG;

                        size_t n = (size_t) json_object_get_string_len(o);
                        char *k = malloc(n + 1);
                        if (!k)
                                return -ENOMEM;
                        memcpy(k, json_object_get_string(o), n);
                        k[n] = '\0';

                        *ret = k;
                        *ret_len = n;
                        *ret_line = line;
                        return 1;
                }

                case '{':
                case '[':
                        s->depth++;
                        s->expect_key = c == '{' && s->depth == 1;
                        break;

                case '}':
                case ']':
                        if (s->depth > 0)
                                s->depth--;
                        s->expect_key = false;
                        break;

                case ',':
                        if (s->depth == 1)
                                s->expect_key = true;
                        break;

                case '\n':
                        s->line++;
                        break;

                default:
                        break;
                }

                if (c != '"')
                        s->pos++;
        }

        return 0;
}

/* ---------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------- */

typedef struct ParseContext {
        const char *filename;
        unsigned line;          /* of the key being parsed */
        char **ret_error;
        const char *value, *end; /* the value's text in the file, and the file's end */
} ParseContext;

/* A number as the file writes it, for messages: json-c clamps what does not
 * fit in 64 bits (to INT64_MIN, INT64_MAX or UINT64_MAX), so its value would
 * show another number.  One too long for buf is cut, with its length. */
static const char *number_as_written(const ParseContext *ctx, char *buf, size_t size) {
        size_t n = 0;

        while (ctx->value && ctx->value + n < ctx->end && strchr("+-0123456789.eE", ctx->value[n]) && ctx->value[n])
                n++;
        if (n < size)
                snprintf(buf, size, "%.*s", (int) n, ctx->value ?: "");
        else
                snprintf(buf, size, "%.20s... (%zu characters)", ctx->value, n);
        return buf;
}

static int parse_cgroup_root(ParseContext *ctx, struct json_object *v, Config *c) {
        char qbuf[JSON_QUOTE_BUF_SIZE];
        const char *s;
        size_t n;
        char *copy;

        if (!json_object_is_type(v, json_type_string))
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"cgroup_root\" must be a string (an absolute path), got %s",
                                 json_type_phrase(v));

        s = json_object_get_string(v);
        n = (size_t) json_object_get_string_len(v);

        if (strlen(s) != n)
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"cgroup_root\" must not contain a NUL character");
        if (s[0] != '/')
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"cgroup_root\" must be an absolute path, got %s", json_quote(s, n, qbuf));
        if (n >= PATH_MAX)
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"cgroup_root\" is longer than PATH_MAX");

        copy = strdup(s);
        if (!copy)
                return -ENOMEM;

        free(c->cgroup_root);
        c->cgroup_root = copy;
        return 0;
}

typedef struct TrackEntry {
        const char *path;
        size_t index;
} TrackEntry;

static int track_entry_compare(const void *a, const void *b) {
        const TrackEntry *x = a, *y = b;
        int k = strcmp(x->path, y->path);

        if (k != 0)
                return k;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* Removes later duplicates from the NULL-terminated l[0, n), keeping the order
 * of first occurrences.  Returns the new length or -ENOMEM. */
static ssize_t strv_uniq_stable(char **l, size_t n) {
        _cleanup_free_ TrackEntry *e = NULL;
        _cleanup_free_ bool *drop = NULL;
        size_t j = 0;

        if (n < 2)
                return (ssize_t) n;

        e = calloc(n, sizeof *e);
        drop = calloc(n, sizeof *drop);
        if (!e || !drop)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++)
                e[i] = (TrackEntry) { .path = l[i], .index = i };
        qsort(e, n, sizeof *e, track_entry_compare);
        for (size_t i = 1; i < n; i++)
                if (streq(e[i].path, e[i - 1].path))
                        drop[e[i].index] = true;

        for (size_t i = 0; i < n; i++) {
                if (drop[i]) {
                        free(l[i]);
                        continue;
                }
                l[j++] = l[i];
        }
        l[j] = NULL;

        return (ssize_t) j;
}

static int parse_track(ParseContext *ctx, struct json_object *v, Config *c) {
        _cleanup_(strv_freep) char **l = NULL;
        char qbuf[JSON_QUOTE_BUF_SIZE];
        size_t n, k = 0;
        ssize_t m;

        if (!json_object_is_type(v, json_type_array))
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"track\" must be an array of strings, got %s", json_type_phrase(v));

        n = json_object_array_length(v);
        if (n == 0)
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"track\" must not be empty");

        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(v, i);
                const char *s, *reason = NULL;
                size_t len;
                int r;

                if (!json_object_is_type(e, json_type_string))
                        return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                         "\"track\"[%zu] must be a string, got %s", i, json_type_phrase(e));

                s = json_object_get_string(e);
                len = (size_t) json_object_get_string_len(e);
                if (strlen(s) != len)
                        return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                         "\"track\"[%zu] is not a valid path: contains a NUL character", i);

                r = cg_path_normalize(s, &l[k], &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                         "\"track\"[%zu] %s is not a valid path: %s",
                                         i, json_quote(s, len, qbuf), reason ?: strerror(-r));
                k++;
        }

        m = strv_uniq_stable(l, k);
        if (m < 0)
                return (int) m;

        strv_freep(&c->track);
        c->track = TAKE_PTR(l);
        c->n_track = (size_t) m;
        return 0;
}

static int parse_default_timeout_usec(ParseContext *ctx, struct json_object *v, Config *c) {
        char nbuf[64];
        int64_t i;
        uint64_t u;

        if (!json_object_is_type(v, json_type_int))
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"default_timeout_usec\" must be a positive integer (microseconds), got %s",
                                 json_type_phrase(v));

        /* json-c keeps values above INT64_MAX as uint64 (get_int64() then
         * clamps to INT64_MAX), and clamps what does not fit at all: the
         * messages show the number as written (number_as_written()). */
        i = json_object_get_int64(v);
        if (i <= 0)
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"default_timeout_usec\" must be a positive integer (microseconds), got %s",
                                 number_as_written(ctx, nbuf, sizeof nbuf));

        u = json_object_get_uint64(v);
        if (u > CONFIG_TIMEOUT_USEC_MAX)
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"default_timeout_usec\" must be at most %llu (24 h), got %s",
                                 (unsigned long long) CONFIG_TIMEOUT_USEC_MAX, number_as_written(ctx, nbuf, sizeof nbuf));

        c->default_timeout_usec = u;
        return 0;
}

static int parse_realtime_writes(ParseContext *ctx, struct json_object *v, Config *c) {
        if (!json_object_is_type(v, json_type_boolean))
                return set_error(ctx->ret_error, ctx->filename, ctx->line, 0,
                                 "\"realtime_writes\" must be true or false, got %s", json_type_phrase(v));
        c->realtime_writes = json_object_get_boolean(v);
        return 0;
}

static const struct {
        const char *name;
        int (*parse)(ParseContext *ctx, struct json_object *v, Config *c);
} config_keys[] = {
        { "cgroup_root",          parse_cgroup_root          },
        { "track",                parse_track                },
        { "default_timeout_usec", parse_default_timeout_usec },
        { "realtime_writes",      parse_realtime_writes      },
};

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------- */

/* Runs json-c over the text.  On success returns the top-level object; on
 * failure the error has been set. */
static int parse_json(const char *text, size_t len, const char *filename, struct json_object **ret, char **ret_error) {
        _cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
        _cleanup_(json_object_putp) struct json_object *o = NULL;
        enum json_tokener_error e;
        unsigned line, column;
        size_t end;
        const char *nul;

        /* json-c says "invalid utf-8 string" of a byte order mark, which an
         * editor's "UTF-8 with BOM" writes: say what it is. */
        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
                return set_error(ret_error, filename, 1, 1,
                                 "invalid JSON: the file starts with a byte order mark (BOM): save it as UTF-8 "
                                 "without one");

        /* json-c would stop at a NUL byte and silently ignore the rest. */
        nul = memchr(text, '\0', len);
        if (nul) {
                json_offset_to_line_column(text, len, (size_t) (nul - text), &line, &column);
                return set_error(ret_error, filename, line, column, "invalid JSON: NUL byte");
        }

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        o = json_tokener_parse_ex(tok, text, (int) len);
        e = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);

        if (!o && e == json_tokener_continue) {
                /* The input ended inside a value, or a top-level number might
                 * still go on: flush with a terminating NUL. */
                o = json_tokener_parse_ex(tok, "", 1);
                e = json_tokener_get_error(tok);
                end = len;
        }

        /* Note that a top-level "null" is a success with o == NULL. */
        if (e != json_tokener_success) {
                json_offset_to_line_column(text, len, end, &line, &column);
                return set_error(ret_error, filename, line, column, "invalid JSON: %s", json_tokener_error_desc(e));
        }

        /* Only whitespace may follow the value. */
        while (end < len && json_is_space(text[end]))
                end++;
        if (end < len) {
                json_offset_to_line_column(text, len, end, &line, &column);
                return set_error(ret_error, filename, line, column,
                                 "invalid JSON: unexpected character after the top-level object");
        }

        *ret = TAKE_PTR(o);
        return 0;
}

int config_parse(const char *text, size_t len, const char *filename, Config *ret, char **ret_error) {
        _cleanup_(json_object_putp) struct json_object *top = NULL;
        _cleanup_(config_done) Config c = {};
        KeyScanner scanner;
        unsigned seen = 0;
        size_t first;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!ret || (!text && len > 0))
                return -EINVAL;
        if (!filename)
                filename = "<config>";
        if (!text)
                text = "";

        if (len > CONFIG_SIZE_MAX)
                return set_file_error(ret_error, -EINVAL, "%s: file is larger than 1 MiB", filename);

        r = parse_json(text, len, filename, &top, ret_error);
        if (r < 0)
                return r;

        if (!json_object_is_type(top, json_type_object)) {
                unsigned line, column;

                for (first = 0; first < len && json_is_space(text[first]); first++)
                        ;
                json_offset_to_line_column(text, len, first, &line, &column);
                return set_error(ret_error, filename, line, 0,
                                 "the top level must be a JSON object, got %s", json_type_phrase(top));
        }

        /* json-c accepts 'key' even in strict mode. */
        first = find_single_quote(text, len);
        if (first < len) {
                unsigned line, column;

                json_offset_to_line_column(text, len, first, &line, &column);
                return set_error(ret_error, filename, line, column,
                                 "invalid JSON: single-quoted strings are not allowed");
        }

        r = config_init_defaults(&c);
        if (r < 0)
                return r;

        scanner = (KeyScanner) {
                .text = text,
                .len = len,
                .line = 1,
        };

        for (;;) {
                _cleanup_free_ char *key = NULL;
                char qbuf[JSON_QUOTE_BUF_SIZE];
                size_t key_len = 0, idx;
                unsigned line = 1;
                struct json_object *v = NULL;

                r = key_scanner_next(&scanner, &key, &key_len, &line);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return set_error(ret_error, filename, line, 0, "internal error while locating keys");
                if (r == 0)
                        break;

                for (idx = 0; idx < ELEMENTSOF(config_keys); idx++)
                        if (strlen(config_keys[idx].name) == key_len && streq(config_keys[idx].name, key))
                                break;
                if (idx >= ELEMENTSOF(config_keys))
                        return set_error(ret_error, filename, line, 0, "unknown key %s", json_quote(key, key_len, qbuf));

                if (seen & (1U << idx))
                        return set_error(ret_error, filename, line, 0, "duplicate key %s", json_quote(key, key_len, qbuf));
                seen |= 1U << idx;

                if (!json_object_object_get_ex(top, key, &v))
                        return set_error(ret_error, filename, line, 0,
                                         "internal error: key %s not found", json_quote(key, key_len, qbuf));

                /* The key's scan stopped past its closing quote: the value
                 * follows the colon. */
                size_t at = scanner.pos;
                while (at < len && (json_is_space(text[at]) || text[at] == ':'))
                        at++;

                ParseContext ctx = {
                        .filename = filename,
                        .line = line,
                        .ret_error = ret_error,
                        .value = text + at,
                        .end = text + len,
                };
                r = config_keys[idx].parse(&ctx, v, &c);
                if (r < 0)
                        return r;
        }

        *ret = c;
        c = (Config) {};
        return 0;
}

int config_load(const char *path, bool missing_ok, Config *ret, char **ret_error) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        struct stat st;

        if (ret_error)
                *ret_error = NULL;
        if (!ret)
                return -EINVAL;
        if (!path)
                path = CONFIG_DEFAULT_PATH;

        /* O_NONBLOCK: the open of a FIFO without a writer would block, and
         * with it freezerd's start or, at SIGHUP, its whole loop (calls,
         * SIGTERM) until someone opened the FIFO for writing.  It is refused
         * below, as anything but a regular file is. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT && missing_ok)
                        return config_init_defaults(ret);
                return set_file_error(ret_error, -errno, "%s: failed to open: %m", path);
        }

        if (fstat(fd, &st) < 0)
                return set_file_error(ret_error, -errno, "%s: failed to stat: %m", path);
        if (S_ISDIR(st.st_mode))
                return set_file_error(ret_error, -EISDIR, "%s: failed to read: %s", path, strerror(EISDIR));
        if (!S_ISREG(st.st_mode))
                return set_file_error(ret_error, -EINVAL, "%s: not a regular file (%s)", path,
                                      S_ISFIFO(st.st_mode)   ? "a FIFO"
                                      : S_ISSOCK(st.st_mode) ? "a socket"
                                                             : "a device");

        /* Read at most one byte more than allowed, to notice a file that is too large. */
        buf = malloc(CONFIG_SIZE_MAX + 1);
        if (!buf)
                return -ENOMEM;

        while (n < CONFIG_SIZE_MAX + 1) {
                ssize_t k = read(fd, buf + n, CONFIG_SIZE_MAX + 1 - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return set_file_error(ret_error, -errno, "%s: failed to read: %m", path);
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }

        if (n > CONFIG_SIZE_MAX)
                return set_file_error(ret_error, -EFBIG, "%s: file is larger than 1 MiB", path);

        return config_parse(buf, n, path, ret, ret_error);
}
