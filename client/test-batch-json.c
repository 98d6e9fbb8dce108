/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Unit tests of batch_json_parse(). Exit status 0 if all pass, 1 otherwise. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch-json.h"
#include "client-util.h"

static unsigned n_run, n_failed;

_printf_(1, 2)
static void failed(const char *fmt, ...) {
        va_list ap;

        n_failed++;
        fputs("FAIL: ", stdout);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
}

/* Expect success with the given requests ("path", freeze, ..., NULL). */
static void expect_ok_len(const char *text, size_t len, size_t n, const freezer_request *want) {
        freezer_request *a = NULL;
        size_t got_n = 0;
        char *error = NULL;
        int r;

        n_run++;

        r = batch_json_parse(text, len, &a, &got_n, &error);
        if (r < 0) {
                failed("%.60s: expected success, got %s: %s", text, strerror(-r), error ?: "(no message)");
                goto finish;
        }
        if (error) {
                failed("%.60s: success with a message: %s", text, error);
                goto finish;
        }
        if (got_n != n) {
                failed("%.60s: expected %zu requests, got %zu", text, n, got_n);
                goto finish;
        }
        for (size_t i = 0; i < n && want; i++)
                if (!streq(a[i].path, want[i].path) || a[i].freeze != want[i].freeze) {
                        failed("%.60s: request %zu is (%s, %d), expected (%s, %d)", text, i,
                               a[i].path, a[i].freeze, want[i].path, want[i].freeze);
                        goto finish;
                }

finish:
        batch_json_free(a);
        free(error);
}

static void expect_ok(const char *text, size_t n, const freezer_request *want) {
        expect_ok_len(text, strlen(text), n, want);
}

/* Expect failure r with a message containing substring. */
static void expect_fail_len(const char *text, size_t len, int want_r, const char *substring) {
        freezer_request *a = NULL;
        size_t n = 1;
        char *error = NULL;
        int r;

        n_run++;

        r = batch_json_parse(text, len, &a, &n, &error);
        if (r >= 0)
                failed("%.60s: expected failure (%s), got success", text, substring);
        else if (r != want_r)
                failed("%.60s: expected %s, got %s (%s)", text, strerror(-want_r), strerror(-r), error ?: "");
        else if (!error)
                failed("%.60s: no message", text);
        else if (!strstr(error, substring))
                failed("%.60s: message \"%s\" lacks \"%s\"", text, error, substring);
        else if (strchr(error, '\n'))
                failed("%.60s: message \"%s\" is not one line", text, error);
        else if (a || n != 0)
                failed("%.60s: failure left a result behind", text);

        batch_json_free(a);
        free(error);
}

static void expect_fail(const char *text, const char *substring) {
        expect_fail_len(text, strlen(text), -EINVAL, substring);
}

static void test_valid(void) {
        expect_ok("[{\"path\": \"/a\", \"freeze\": true}]", 1,
                  (const freezer_request[]) { { "/a", true } });
        expect_ok("[{\"freeze\": false, \"path\": \"/a/b\"}, {\"path\": \"c\", \"freeze\": true}]", 2,
                  (const freezer_request[]) { { "/a/b", false }, { "c", true } });
        expect_ok(" \n\t[\r\n{\"path\":\"/x\",\"freeze\":true} ] \n", 1,
                  (const freezer_request[]) { { "/x", true } });
        /* Repeats are the daemon's business: the last one wins there. */
        expect_ok("[{\"path\":\"/a\",\"freeze\":true},{\"path\":\"/a\",\"freeze\":false}]", 2,
                  (const freezer_request[]) { { "/a", true }, { "/a", false } });
        /* Escapes in keys and values. */
        expect_ok("[{\"\\u0070ath\":\"/a\\/b\\u00e9\",\"fr\\u0065eze\":true}]", 1,
                  (const freezer_request[]) { { "/a/b\xc3\xa9", true } });
        /* A surrogate pair is one character (U+1F600). */
        expect_ok("[{\"path\":\"/a\\ud83d\\uDE00\\\\ud800\",\"freeze\":true}]", 1,
                  (const freezer_request[]) { { "/a\xf0\x9f\x98\x80\\ud800", true } });
        /* UTF-8 paths. */
        expect_ok("[{\"path\":\"/p\xc3\xa4th\",\"freeze\":false}]", 1,
                  (const freezer_request[]) { { "/p\xc3\xa4th", false } });
        /* Only len bytes count: the text need not be NUL-terminated. */
        expect_ok_len("[{\"path\":\"/a\",\"freeze\":true}]garbage", 29, 1,
                      (const freezer_request[]) { { "/a", true } });
}

static void test_syntax(void) {
        expect_fail("", "empty");
        expect_fail("   \n ", "empty");
        expect_fail("[", "line 1, column 2: unexpected end of input");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true}", "unexpected end of input");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true},]", "line 1, column 30: a trailing comma before ']'");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true,}]", "a trailing comma before '}'");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true} ,\n ]", "line 2, column 2: a trailing comma before ']'");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true}] x", "line 1, column 31");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true}][]", "line 1");
        expect_fail("[{path:\"/a\",\"freeze\":true}]", "line 1, column 3");
        expect_fail("[{'path':\"/a\",\"freeze\":true}]", "single-quoted");
        expect_fail("[{\"path\":'/a',\"freeze\":true}]", "single-quoted");
        expect_fail("\n\n  [{\"path\":\"/a\",\n\"freeze\":TRUE}]", "line 4");
        expect_fail("/* comment */ [{\"path\":\"/a\",\"freeze\":true}]", "line 1, column 1");
        expect_fail("[{\"path\":\"/a\x01\",\"freeze\":true}]", "control character 0x01");
        expect_fail("[{\"path\":\"/a\nb\",\"freeze\":true}]", "control character 0x0a");
        expect_fail("[{\"path\":\"/a\\x\",\"freeze\":true}]", "line 1");
        expect_fail("[{\"path\":\"/\xc3\x28\",\"freeze\":true}]", "invalid UTF-8");
        expect_fail("\xef\xbb\xbf[{\"path\":\"/a\",\"freeze\":true}]", "byte order mark");
        /* Lone surrogates: json-c made U+FFFD of them. */
        expect_fail("[{\"path\":\"/a\\ud800\",\"freeze\":true}]", "line 1, column 13: lone UTF-16 surrogate \\ud800");
        expect_fail("[{\"path\":\"/a\\uDBFF\\u0041\",\"freeze\":true}]", "lone UTF-16 surrogate \\udbff");
        expect_fail("[{\"path\":\"/a\\udc00\",\"freeze\":true}]", "lone UTF-16 surrogate \\udc00");
        expect_fail("[{\"path\":\"/a\\ud800\\ud800\\udc00\",\"freeze\":true}]", "column 13: lone UTF-16 surrogate");
        expect_fail("[{\"path\":\"/a\\ud83d\\ude00\\ude00\",\"freeze\":true}]", "column 25: lone UTF-16 surrogate \\ude00");
        expect_fail_len("[{\"path\":\"/a\",\"freeze\":true}]\0", 30, -EINVAL, "NUL byte");
        expect_fail_len("[{\"path\":\"/a\0b\",\"freeze\":true}]", 31, -EINVAL, "line 1, column 13: NUL byte");
        expect_fail("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                    "nested too deeply");
}

static void test_structure(void) {
        expect_fail("{\"path\":\"/a\",\"freeze\":true}", "expected a JSON array");
        expect_fail("null", "got null");
        expect_fail("\"x\"", "got a string");
        expect_fail("nul", "line 1, column 4");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true}, 1", "line 1, column 32: unexpected end of input");
        expect_fail("42", "got an integer");
        expect_fail("[]", "the array is empty");
        expect_fail(" [ ] ", "the array is empty");
        expect_fail("[1]", "element 0 (line 1): expected an object");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true},\n [\"/b\", true]]", "element 1 (line 2): expected an object");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true},\n\n\"/b\"]",
                    "element 1 (line 3): expected an object {\"path\": ..., \"freeze\": ...}, got a string");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true}, null]", "element 1 (line 1): expected an object");
        expect_fail("[{\"path\":\"/a\"}]", "element 0 (line 1): missing key \"freeze\"");
        expect_fail("[{\"freeze\":true}]", "element 0 (line 1): missing key \"path\"");
        expect_fail("[{}]", "element 0 (line 1): missing key");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true,\"x\":1}]", "element 0 (line 1): unknown key \"x\"");
        expect_fail("[{\"path\":\"/a\",\"Freeze\":true}]", "unknown key \"Freeze\"");
        expect_fail("[{\"path\":\"/a\",\"freeze\":\"true\"}]", "\"freeze\" must be true or false, got a string");
        expect_fail("[{\"path\":\"/a\",\"freeze\":1}]", "\"freeze\" must be true or false, got an integer");
        expect_fail("[{\"path\":\"/a\",\"freeze\":null}]", "\"freeze\" must be true or false, got null");
        expect_fail("[{\"path\":\"/a\",\"freeze\":NaN}]", "got a floating-point number");
        expect_fail("[{\"path\":[\"/a\"],\"freeze\":true}]", "\"path\" must be a string, got an array");
        expect_fail("[{\"path\":{},\"freeze\":true}]", "\"path\" must be a string, got an object");
        expect_fail("[{\"path\":\"\",\"freeze\":true}]", "\"path\" is empty");
        expect_fail("[{\"path\":\"/a\\u0000b\",\"freeze\":true}]", "\"path\" contains a NUL character");
        /* Repeated keys: json-c would silently keep the last one. */
        expect_fail("[{\"path\":\"/a\",\"freeze\":true},{\"path\":\"/a\",\"path\":\"/b\",\"freeze\":true}]",
                    "element 1 (line 1): key \"path\" given more than once");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true,\"freeze\":false}]", "key \"freeze\" given more than once");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true,\"\\u0066reeze\":false}]", "key \"freeze\" given more than once");
        /* Repeats in nested values do not count as repeated keys of the element. */
        expect_fail("[{\"path\":{\"path\":1,\"path\":2},\"freeze\":true}]", "\"path\" must be a string");
        /* The first bad element is reported. */
        expect_fail("[{\"path\":\"/a\",\"freeze\":true},{\"path\":\"/b\"},{\"path\":1,\"freeze\":true}]",
                    "element 1 ");
        expect_fail("[{\"path\":\"/a\",\"freeze\":true},\n{\"path\":\"/b\",\"freeze\":true},\n{\"path\":\"/c\","
                    "\"freeze\":true},\n{\"path\":\"/d\",\"freeze\":true,\"freeze\":true}]",
                    "element 3 (line 4)");
        /* Strings with brackets, commas and quotes do not confuse the element count. */
        expect_ok("[{\"path\":\"/a,[{}]\\\"'\",\"freeze\":true},{\"path\":\"/b\",\"freeze\":false}]", 2,
                  (const freezer_request[]) { { "/a,[{}]\"'", true }, { "/b", false } });
}

/* "[" + n copies of the element, comma-separated, + "]". */
static char *make_batch(size_t n, size_t *ret_len) {
        static const char elem[] = "{\"path\":\"/a\",\"freeze\":true}";
        size_t l = sizeof(elem) - 1, len = 2 + n * (l + 1);
        char *s = malloc(len + 1), *p;

        if (!s)
                return NULL;

        p = s;
        *p++ = '[';
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        *p++ = ',';
                memcpy(p, elem, l);
                p += l;
        }
        *p++ = ']';
        *p = '\0';

        *ret_len = (size_t) (p - s);
        return s;
}

static void test_limits(void) {
        char *s;
        size_t len;

        s = make_batch(BATCH_JSON_REQUESTS_MAX, &len);
        if (!s) {
                failed("out of memory");
                return;
        }
        expect_ok_len(s, len, BATCH_JSON_REQUESTS_MAX, NULL);
        free(s);

        s = make_batch(BATCH_JSON_REQUESTS_MAX + 1, &len);
        if (!s) {
                failed("out of memory");
                return;
        }
        expect_fail_len(s, len, -E2BIG, "65537 requests, but a batch holds at most 65536");
        free(s);

        /* Just above the size cap: refused before parsing. */
        len = BATCH_JSON_SIZE_MAX + 1;
        s = malloc(len);
        if (!s) {
                failed("out of memory");
                return;
        }
        memset(s, ' ', len);
        s[0] = '[';
        s[len - 1] = ']';
        expect_fail_len(s, len, -E2BIG, "larger than 64 MiB");

        /* At the cap: whitespace is fine, the array still has to hold something. */
        expect_fail_len(s, len - 1 - 1, -EINVAL, "unexpected end of input");
        s[len - 2] = ']';
        expect_fail_len(s, len - 1, -EINVAL, "the array is empty");
        free(s);
}

static void test_no_error_pointer(void) {
        freezer_request *a = NULL;
        size_t n = 7;
        int r;

        n_run++;
        r = batch_json_parse("[1]", 3, &a, &n, NULL);
        if (r != -EINVAL || a || n != 0)
                failed("ret_error == NULL: expected -EINVAL and no result, got %d", r);

        n_run++;
        r = batch_json_parse("[{\"path\":\"/a\",\"freeze\":false}]", 30, &a, &n, NULL);
        if (r != 0 || !a || n != 1 || !streq(a[0].path, "/a") || a[0].freeze)
                failed("ret_error == NULL: expected success, got %d", r);
        batch_json_free(a);

        n_run++;
        if (batch_json_free(NULL))
                failed("batch_json_free(NULL) did not return NULL");
}

int main(void) {
        test_valid();
        test_syntax();
        test_structure();
        test_limits();
        test_no_error_pointer();

        printf("%s: %u/%u passed\n", n_failed ? "FAIL" : "OK", n_run - n_failed, n_run);
        return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
