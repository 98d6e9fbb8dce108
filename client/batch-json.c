/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "batch-json.h"
#include "client-util.h"
#include "json-diag.h"

static void json_object_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}

static void json_tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

/* Store a formatted message in *ret_error (if wanted) and return r; -ENOMEM if
 * the message cannot be allocated. */
_printf_(3, 4)
static int fail(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;
        char *s;
        int k;

        if (!ret_error)
                return r;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;

        *ret_error = s;
        return r;
}

_printf_(5, 6)
static int fail_at(char **ret_error, const char *text, size_t len, size_t off, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        unsigned line, column;
        va_list ap;
        int k;

        if (!ret_error)
                return -EINVAL;

        va_start(ap, fmt);
        k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;

        json_offset_to_line_column(text, len, off, &line, &column);
        return fail(ret_error, -EINVAL, "line %u, column %u: %s", line, column, msg);
}

/* ---------------------------------------------------------------------------
 * The raw-text scan.
 *
 * json-c keeps no positions, drops repeated keys (the last one wins) and
 * accepts some non-JSON in strict mode (single-quoted strings, raw control
 * characters in strings), so after json-c accepted the text as one array we
 * walk the text ourselves: we refuse what json-c let through, record where
 * each element starts (for messages), and find the first element that repeats
 * "path" or "freeze". Since json-c accepted the text, outside of strings
 * there is only structure, whitespace, numbers and literals.
 * ------------------------------------------------------------------------- */

typedef struct scan_result {
        size_t *offsets;        /* start of each element */
        size_t n_offsets;
        size_t dup_index;       /* first element with a repeated key, or SIZE_MAX */
        const char *dup_key;    /* "path" or "freeze" */
} scan_result;

/* Which of "path" (1) and "freeze" (2) the JSON string text[start, end] (quotes
 * included) is, 0 if neither. */
static int classify_key(const char *text, size_t start, size_t end, int *ret) {
        const char *k = text + start + 1;
        size_t n = end - start - 1;
        _cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
        _cleanup_(json_object_putp) struct json_object *o = NULL;

        if (!memchr(k, '\\', n)) {
                *ret = n == 4 && memcmp(k, "path", 4) == 0 ? 1 : n == 6 && memcmp(k, "freeze", 6) == 0 ? 2 : 0;
                return 0;
        }

        /* Escapes (\u0070ath): let json-c decode the key. */
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        o = json_tokener_parse_ex(tok, text + start, (int) (end + 1 - start));
        if (!o || !json_object_is_type(o, json_type_string))
                return -EBADMSG; /* cannot happen after json-c accepted the text */

        k = json_object_get_string(o);
        n = (size_t) json_object_get_string_len(o);
        *ret = n == 4 && memcmp(k, "path", 4) == 0 ? 1 : n == 6 && memcmp(k, "freeze", 6) == 0 ? 2 : 0;
        return 0;
}

/* The UTF-16 code unit of the \uXXXX escape starting at text[i] (its
 * backslash), or -1 if there is none. */
static int unicode_escape(const char *text, size_t len, size_t i) {
        int v = 0;

        if (i + 6 > len || text[i] != '\\' || text[i + 1] != 'u')
                return -1;
        for (size_t k = i + 2; k < i + 6; k++) {
                char c = text[k];

                if (c >= '0' && c <= '9')
                        v = v * 16 + (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v = v * 16 + (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v = v * 16 + (c - 'A' + 10);
                else
                        return -1;
        }
        return v;
}

static int scan(const char *text, size_t len, size_t n_expected, scan_result *s, char **ret_error) {
        unsigned depth = 0;
        bool want_element = false, in_object = false, expect_key = false;
        unsigned seen = 0; /* keys of the current element: 1 path, 2 freeze */
        int r;

        s->offsets = calloc(n_expected ?: 1, sizeof(size_t));
        if (!s->offsets)
                return -ENOMEM;
        s->n_offsets = 0;
        s->dup_index = SIZE_MAX;
        s->dup_key = NULL;

        for (size_t i = 0; i < len; i++) {
                char c = text[i];

                if (depth == 1 && want_element && !json_is_space(c)) {
                        if (s->n_offsets >= n_expected)
                                return -EBADMSG;
                        s->offsets[s->n_offsets++] = i;
                        want_element = false;
                }

                switch (c) {

                case '"': {
                        size_t start = i, j = i + 1;

                        for (; j < len && text[j] != '"'; j++) {
                                if (text[j] == '\\') {
                                        /* A surrogate not in a pair is no character:
                                         * json-c made U+FFFD of it, another path
                                         * than the one written. */
                                        int u = unicode_escape(text, len, j), low;

                                        if (u >= 0xd800 && u <= 0xdbff) {
                                                low = unicode_escape(text, len, j + 6);
                                                if (low < 0xdc00 || low > 0xdfff)
                                                        return fail_at(ret_error, text, len, j,
                                                                       "lone UTF-16 surrogate \\u%04x in a string "
                                                                       "(not followed by \\udc00-\\udfff)",
                                                                       (unsigned) u);
                                                j += 6; /* the pair's second half */
                                        } else if (u >= 0xdc00 && u <= 0xdfff)
                                                return fail_at(ret_error, text, len, j,
                                                               "lone UTF-16 surrogate \\u%04x in a string "
                                                               "(not preceded by \\ud800-\\udbff)",
                                                               (unsigned) u);
                                        j++;
                                } else if ((unsigned char) text[j] < 0x20)
                                        return fail_at(ret_error, text, len, j,
                                                       "control character 0x%02x in a string (write it as \\u%04x)",
                                                       (unsigned) text[j], (unsigned) text[j]);
                        }
                        if (j >= len)
                                return -EBADMSG;
                        i = j;

                        if (depth == 2 && in_object && expect_key) {
                                int k;

                                expect_key = false;

                                r = classify_key(text, start, j, &k);
                                if (r < 0)
                                        return r;
                                if (k == 0)
                                        break;
                                if ((seen & (unsigned) k) && s->dup_index == SIZE_MAX) {
                                        s->dup_index = s->n_offsets - 1;
                                        s->dup_key = k == 1 ? "path" : "freeze";
                                }
                                seen |= (unsigned) k;
                        }
                        break;
                }

                case '\'':
                        return fail_at(ret_error, text, len, i,
                                       "single-quoted strings are not JSON, use double quotes");

                case '{':
                case '[':
                        depth++;
                        if (depth == 1)
                                want_element = true;
                        else if (depth == 2) {
                                in_object = c == '{';
                                expect_key = in_object;
                                seen = 0;
                        }
                        break;

                case '}':
                case ']':
                        if (depth == 0)
                                return -EBADMSG;
                        depth--;
                        break;

                case ',':
                        if (depth == 1)
                                want_element = true;
                        else if (depth == 2 && in_object)
                                expect_key = true;
                        break;

                default:
                        break;
                }
        }

        if (s->n_offsets != n_expected)
                return -EBADMSG;

        return 0;
}

/* ---------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------- */

static const char *tokener_error_phrase(enum json_tokener_error e) {
        switch (e) {
        case json_tokener_continue:
                return "unexpected end of input";
        case json_tokener_error_depth:
                return "nested too deeply";
        case json_tokener_error_parse_utf8_string:
                return "invalid UTF-8";
        default:
                return json_tokener_error_desc(e);
        }
}

/* Check element i and measure its path. Returns 0 or a failure. */
static int check_element(struct json_object *e, size_t i, unsigned line, const scan_result *s,
                         size_t *ret_path_len, char **ret_error) {
        struct json_object *path, *freeze;
        char qbuf[JSON_QUOTE_BUF_SIZE];
        size_t n;

        if (!json_object_is_type(e, json_type_object))
                return fail(ret_error, -EINVAL,
                            "element %zu (line %u): expected an object {\"path\": ..., \"freeze\": ...}, got %s",
                            i, line, json_type_phrase(e));

        if (s->dup_index == i)
                return fail(ret_error, -EINVAL, "element %zu (line %u): key \"%s\" given more than once",
                            i, line, s->dup_key);

        for (struct json_object_iterator it = json_object_iter_begin(e), end = json_object_iter_end(e);
             !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
                const char *k = json_object_iter_peek_name(&it);

                if (!streq(k, "path") && !streq(k, "freeze"))
                        return fail(ret_error, -EINVAL,
                                    "element %zu (line %u): unknown key %s (expected only \"path\" and \"freeze\")",
                                    i, line, json_quote(k, strlen(k), qbuf));
        }

        if (!json_object_object_get_ex(e, "path", &path))
                return fail(ret_error, -EINVAL, "element %zu (line %u): missing key \"path\"", i, line);
        if (!json_object_is_type(path, json_type_string))
                return fail(ret_error, -EINVAL, "element %zu (line %u): \"path\" must be a string, got %s",
                            i, line, json_type_phrase(path));

        n = (size_t) json_object_get_string_len(path);
        if (n == 0)
                return fail(ret_error, -EINVAL, "element %zu (line %u): \"path\" is empty", i, line);
        if (memchr(json_object_get_string(path), 0, n))
                return fail(ret_error, -EINVAL, "element %zu (line %u): \"path\" contains a NUL character",
                            i, line);

        if (!json_object_object_get_ex(e, "freeze", &freeze))
                return fail(ret_error, -EINVAL, "element %zu (line %u): missing key \"freeze\"", i, line);
        if (!json_object_is_type(freeze, json_type_boolean))
                return fail(ret_error, -EINVAL, "element %zu (line %u): \"freeze\" must be true or false, got %s",
                            i, line, json_type_phrase(freeze));

        *ret_path_len = n;
        return 0;
}

static void scan_result_done(scan_result *s) {
        free(s->offsets);
        s->offsets = NULL;
}

int batch_json_parse(const char *text, size_t len, freezer_request **ret, size_t *ret_n, char **ret_error) {
        _cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
        _cleanup_(json_object_putp) struct json_object *root = NULL;
        _cleanup_(scan_result_done) scan_result s = {};
        _cleanup_free_ size_t *path_lens = NULL;
        freezer_request *a;
        const char *nul;
        size_t n, end, total;
        unsigned line = 1;
        char *p;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (ret_error)
                *ret_error = NULL;

        if (!text && len > 0)
                return -EINVAL;

        if (len > BATCH_JSON_SIZE_MAX)
                return fail(ret_error, -E2BIG, "the input is larger than %u MiB", BATCH_JSON_SIZE_MAX / (1024U * 1024U));

        /* json-c would stop at a NUL byte and call the rest trailing data. */
        nul = len > 0 ? memchr(text, 0, len) : NULL;
        if (nul)
                return fail_at(ret_error, text, len, (size_t) (nul - text), "NUL byte in the input");

        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
                return fail(ret_error, -EINVAL, "the input starts with a byte order mark (not allowed in JSON)");

        end = 0;
        while (end < len && json_is_space(text[end]))
                end++;
        if (end == len)
                return fail(ret_error, -EINVAL,
                            "the input is empty (expected a JSON array of {\"path\": ..., \"freeze\": ...} objects)");

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        root = json_tokener_parse_ex(tok, text, (int) len);
        if (root) {
                /* In strict mode json-c refuses trailing data itself; be sure. */
                end = json_tokener_get_parse_end(tok);
                while (end < len && json_is_space(text[end]))
                        end++;
                if (end < len)
                        return fail_at(ret_error, text, len, end, "unexpected data after the JSON value");
        } else {
                enum json_tokener_error e = json_tokener_get_error(tok);

                if (e == json_tokener_continue) {
                        /* The input ended inside a value. A top-level number or
                         * literal ("null", "42") is only finished by what follows
                         * it: give json-c one space as the end of the input. */
                        root = json_tokener_parse_ex(tok, " ", 1);
                        e = json_tokener_get_error(tok);
                        if (!root && e != json_tokener_success)
                                return fail_at(ret_error, text, len, len, "%s",
                                               tokener_error_phrase(e));
                } else {
                        end = json_tokener_get_parse_end(tok);

                        if (end < len && text[end] == '\'')
                                return fail_at(ret_error, text, len, end,
                                               "single-quoted strings are not JSON, use double quotes");
                        if (end < len && (text[end] == ']' || text[end] == '}')) {
                                size_t b = end;
                                while (b > 0 && json_is_space(text[b - 1]))
                                        b--;
                                if (b > 0 && text[b - 1] == ',')
                                        return fail_at(ret_error, text, len, end,
                                                       "a trailing comma before '%c' (not allowed in JSON)",
                                                       text[end]);
                        }

                        return fail_at(ret_error, text, len, end, "%s", tokener_error_phrase(e));
                }
        }

        if (!root)
                /* A lone "null": json-c parses it to NULL. */
                return fail(ret_error, -EINVAL,
                            "expected a JSON array of {\"path\": ..., \"freeze\": ...} objects, got null");

        if (!json_object_is_type(root, json_type_array))
                return fail(ret_error, -EINVAL,
                            "expected a JSON array of {\"path\": ..., \"freeze\": ...} objects, got %s",
                            json_type_phrase(root));

        n = json_object_array_length(root);
        if (n == 0)
                return fail(ret_error, -EINVAL, "the array is empty: a batch needs at least one request");
        if (n > BATCH_JSON_REQUESTS_MAX)
                return fail(ret_error, -E2BIG, "%zu requests, but a batch holds at most %d",
                            n, BATCH_JSON_REQUESTS_MAX);

        r = scan(text, len, n, &s, ret_error);
        if (r == -EBADMSG)
                return fail(ret_error, -EINVAL, "the input confused the parser (this is a bug)");
        if (r < 0)
                return r;

        path_lens = calloc(n, sizeof(size_t));
        if (!path_lens)
                return -ENOMEM;

        total = n * sizeof(freezer_request);
        for (size_t i = 0, pos = 0; i < n; i++) {
                /* The element's line, counted on from the previous one's. */
                for (; pos < s.offsets[i]; pos++)
                        if (text[pos] == '\n')
                                line++;

                r = check_element(json_object_array_get_idx(root, i), i, line, &s, &path_lens[i], ret_error);
                if (r < 0)
                        return r;

                total += path_lens[i] + 1; /* at most 64 MiB + 65536 * 17 bytes: no overflow */
        }

        a = malloc(total);
        if (!a)
                return -ENOMEM;

        p = (char *) (a + n);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(root, i), *v;

                (void) json_object_object_get_ex(e, "path", &v);
                memcpy(p, json_object_get_string(v), path_lens[i]);
                p[path_lens[i]] = '\0';
                a[i].path = p;
                p += path_lens[i] + 1;

                (void) json_object_object_get_ex(e, "freeze", &v);
                a[i].freeze = json_object_get_boolean(v);
        }

        *ret = a;
        *ret_n = n;
        return 0;
}

freezer_request *batch_json_free(freezer_request *requests) {
        free(requests);
        return NULL;
}
