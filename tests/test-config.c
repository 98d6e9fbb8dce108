/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "util.h"
#include "test-util.h"

static bool is_default(const Config *c) {
        return !c->cgroup_root &&
               c->n_track == 1 && c->track && streq_ptr(c->track[0], "/") && !c->track[1] &&
               c->default_timeout_usec == CONFIG_DEFAULT_TIMEOUT_USEC && c->realtime_writes;
}

static void test_defaults(void) {
        Config c = {};

        CHECK_R(config_init_defaults(&c), 0);
        CHECK(is_default(&c));
        CHECK(c.default_timeout_usec == 10 * USEC_PER_SEC);
        config_done(&c);
        CHECK(!c.track && !c.cgroup_root && c.n_track == 0);
        config_done(&c); /* idempotent */

        /* An empty object means defaults. */
        char *error = NULL;
        CHECK_R(config_parse("{}", 2, "freezerd.json", &c, &error), 0);
        CHECK(!error);
        CHECK(is_default(&c));
        config_done(&c);

        CHECK_R(config_parse(" \n{ }\n\n", 7, "freezerd.json", &c, NULL), 0);
        CHECK(is_default(&c));
        config_done(&c);
}

/* Not NUL-terminated: the parser gets an exact-size heap copy, so that ASan
 * and valgrind catch any read past the end. */
static int parse(const char *text, Config *c, char **error) {
        size_t len = strlen(text);
        char *copy = malloc(len ? len : 1);
        int r;

        if (!copy)
                return -ENOMEM;
        memcpy(copy, text, len);
        r = config_parse(copy, len, "freezerd.json", c, error);
        free(copy);
        return r;
}

static void test_valid(void) {
        Config c = {};
        char *error = NULL;

        CHECK_R(parse("{\n"
                      "  \"cgroup_root\": \"/sys/fs/cgroup/unified/pods\",\n"
                      "  \"track\": [\"/\", \"pods/pod1\", \"/pods/pod2/\", \"/pods/pod1\", \"/\", \"pods/pod2\"],\n"
                      "  \"default_timeout_usec\": 5000000\n"
                      "}\n", &c, &error), 0);
        CHECK(!error);
        CHECK_STR(c.cgroup_root, "/sys/fs/cgroup/unified/pods");
        CHECK(c.n_track == 3);
        if (c.n_track == 3) {
                CHECK_STR(c.track[0], "/");
                CHECK_STR(c.track[1], "/pods/pod1");
                CHECK_STR(c.track[2], "/pods/pod2");
                CHECK(!c.track[3]);
        }
        CHECK(c.default_timeout_usec == 5000000);
        config_done(&c);

        /* Only some keys; the others keep their defaults. */
        CHECK_R(parse("{\"realtime_writes\": false}", &c, &error), 0);
        CHECK(!c.realtime_writes && c.default_timeout_usec == CONFIG_DEFAULT_TIMEOUT_USEC);
        config_done(&c);
        CHECK_R(parse("{\"realtime_writes\": true}", &c, &error), 0);
        CHECK(is_default(&c));
        config_done(&c);

        CHECK_R(parse("{\"default_timeout_usec\": 1}", &c, &error), 0);
        CHECK(!c.cgroup_root && c.n_track == 1 && streq(c.track[0], "/") && c.default_timeout_usec == 1);
        config_done(&c);

        /* 24 h exactly is allowed. */
        CHECK_R(parse("{\"default_timeout_usec\": 86400000000}", &c, &error), 0);
        CHECK(c.default_timeout_usec == 86400000000ULL);
        config_done(&c);

        /* Escaped keys are decoded. */
        CHECK_R(parse("{\"\\u0074rack\": [\"a\"]}", &c, &error), 0);
        CHECK(c.n_track == 1 && streq(c.track[0], "/a"));
        config_done(&c);

        /* Strings that look like keys inside values and nested arrays are not keys. */
        CHECK_R(parse("{\"track\": [\"track\", \"cgroup_root\"], \"cgroup_root\": \"/x/\\\"track\\\": 1\"}", &c, &error), 0);
        CHECK(c.n_track == 2);
        CHECK_STR(c.cgroup_root, "/x/\"track\": 1");
        config_done(&c);

        /* Many duplicates collapse in order. */
        CHECK_R(parse("{\"track\": [\"/b\", \"/a\", \"/b\", \"/c\", \"/a\", \"/a/\", \"b\"]}", &c, &error), 0);
        CHECK(c.n_track == 3);
        if (c.n_track == 3) {
                CHECK_STR(c.track[0], "/b");
                CHECK_STR(c.track[1], "/a");
                CHECK_STR(c.track[2], "/c");
                CHECK(!c.track[3]);
        }
        config_done(&c);

        /* UTF-8 and CRLF line ends. */
        CHECK_R(parse("{\r\n\"track\": [\"/caf\xc3\xa9\"]\r\n}\r\n", &c, &error), 0);
        CHECK(c.n_track == 1 && streq(c.track[0], "/caf\xc3\xa9"));
        config_done(&c);

        /* NULL ret_error is fine. */
        CHECK_R(parse("{\"track\": [\"/x\"]}", &c, NULL), 0);
        config_done(&c);
}

static void check_error(const char *text, const char *expected, int line) {
        Config c = { .n_track = 4242 };
        char *error = NULL;
        int r;

        r = parse(text, &c, &error);
        if (r != -EINVAL || !streq_ptr(error, expected)) {
                fprintf(stderr, "%s:%d: config_parse() = %d, error:\n\t%s\nexpected -EINVAL and:\n\t%s\n",
                        __FILE__, line, r, error ?: "(null)", expected);
                test_failures++;
        }
        /* *ret is untouched on failure. */
        if (c.n_track != 4242 || c.track || c.cgroup_root) {
                fprintf(stderr, "%s:%d: config_parse() modified *ret on failure\n", __FILE__, line);
                test_failures++;
                if (r == 0)
                        config_done(&c);
        }
        free(error);

        /* Without ret_error, the same result. */
        r = parse(text, &c, NULL);
        if (r != -EINVAL) {
                fprintf(stderr, "%s:%d: config_parse() without ret_error = %d\n", __FILE__, line, r);
                test_failures++;
        }
}

#define ERR(text, expected) check_error((text), (expected), __LINE__)

static void test_errors(void) {
        /* Unknown keys. */
        ERR("{\n"
            "  \"track\": [\"/\"],\n"
            "  \"trak\": [\"/\"]\n"
            "}\n",
            "freezerd.json:3: unknown key \"trak\"");
        ERR("{\"x\": 1}", "freezerd.json:1: unknown key \"x\"");
        ERR("{\n\n\n\n  \"a\\\"b\\u0001\": 1}", "freezerd.json:5: unknown key \"a\\\"b\\x01\"");
        ERR("{\"track\\u0000\": [\"/\"]}", "freezerd.json:1: unknown key \"track\\x00\"");
        ERR("{\"\": 1}", "freezerd.json:1: unknown key \"\"");
        /* A string value that contains the quoted key does not fool the line search. */
        ERR("{\n"
            "  \"cgroup_root\": \"/x \\\"trak\\\": 1\",\n"
            "  \"track\": [\"trak\"],\n"
            "  \"trak\": 1\n"
            "}",
            "freezerd.json:4: unknown key \"trak\"");
        /* Nested objects' keys are not top-level keys. */
        ERR("{\n"
            "  \"track\": [{\"trak\": 1}]\n"
            "}",
            "freezerd.json:2: \"track\"[0] must be a string, got an object");

        /* Duplicate keys. */
        ERR("{\n"
            "  \"track\": [\"/a\"],\n"
            "  \"default_timeout_usec\": 5,\n"
            "  \"track\": [\"/b\"]\n"
            "}",
            "freezerd.json:4: duplicate key \"track\"");
        ERR("{\"cgroup_root\": \"/a\", \"\\u0063group_root\": \"/b\"}",
            "freezerd.json:1: duplicate key \"cgroup_root\"");

        /* default_timeout_usec */
        ERR("{\n"
            "  \"default_timeout_usec\": \"10\"\n"
            "}",
            "freezerd.json:2: \"default_timeout_usec\" must be a positive integer (microseconds), got a string");
        ERR("{\n\"track\": [\"/\"],\n\n\"default_timeout_usec\": 1e6}",
            "freezerd.json:4: \"default_timeout_usec\" must be a positive integer (microseconds), got a floating-point number");
        ERR("{\"default_timeout_usec\": 10000000.0}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got a floating-point number");
        ERR("{\"default_timeout_usec\": true}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got a boolean");
        ERR("{\"default_timeout_usec\": null}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got null");
        ERR("{\"default_timeout_usec\": [1]}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got an array");
        ERR("{\"default_timeout_usec\": 0}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got 0");
        ERR("{\"default_timeout_usec\": -5}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got -5");
        ERR("{\"default_timeout_usec\": 86400000001}",
            "freezerd.json:1: \"default_timeout_usec\" must be at most 86400000000 (24 h), got 86400000001");
        /* Numbers json-c clamps are shown as the file writes them. */
        ERR("{\"default_timeout_usec\": 99999999999999999999999}",
            "freezerd.json:1: \"default_timeout_usec\" must be at most 86400000000 (24 h), got 99999999999999999999999");
        ERR("{\"default_timeout_usec\": 9223372036854775808}",
            "freezerd.json:1: \"default_timeout_usec\" must be at most 86400000000 (24 h), got 9223372036854775808");
        ERR("{\"default_timeout_usec\": -99999999999999999999999}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got -99999999999999999999999");
        ERR("{\"default_timeout_usec\" :\n\t-9223372036854775809 }",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got -9223372036854775809");
        ERR("{\"default_timeout_usec\": 1000000000000000000000000000000000000000000000000000000000000000000000}",
            "freezerd.json:1: \"default_timeout_usec\" must be at most 86400000000 (24 h), got 10000000000000000000... "
            "(70 characters)");

        /* realtime_writes */
        ERR("{\n  \"realtime_writes\": \"no\"\n}",
            "freezerd.json:2: \"realtime_writes\" must be true or false, got a string");
        ERR("{\"realtime_writes\": 0}",
            "freezerd.json:1: \"realtime_writes\" must be true or false, got an integer");
        ERR("{\"realtime_writes\": null}",
            "freezerd.json:1: \"realtime_writes\" must be true or false, got null");

        /* cgroup_root */
        ERR("{\n  \"cgroup_root\": 5\n}",
            "freezerd.json:2: \"cgroup_root\" must be a string (an absolute path), got an integer");
        ERR("{\"cgroup_root\": \"pods\"}",
            "freezerd.json:1: \"cgroup_root\" must be an absolute path, got \"pods\"");
        ERR("{\"cgroup_root\": \"\"}",
            "freezerd.json:1: \"cgroup_root\" must be an absolute path, got \"\"");
        ERR("{\"cgroup_root\": \"/a\\u0000b\"}",
            "freezerd.json:1: \"cgroup_root\" must not contain a NUL character");

        /* track */
        ERR("{\n\n  \"track\": \"/\"\n}",
            "freezerd.json:3: \"track\" must be an array of strings, got a string");
        ERR("{\"track\": {}}",
            "freezerd.json:1: \"track\" must be an array of strings, got an object");
        ERR("{\"track\": []}",
            "freezerd.json:1: \"track\" must not be empty");
        ERR("{\"track\": [\"/a\", 1]}",
            "freezerd.json:1: \"track\"[1] must be a string, got an integer");
        ERR("{\"track\": [\"/a\",\n null]}",
            "freezerd.json:1: \"track\"[1] must be a string, got null");
        ERR("{\"track\":\n [\"/a/../b\"]}",
            "freezerd.json:1: \"track\"[0] \"/a/../b\" is not a valid path: contains a '..' component");
        ERR("{\"track\": [\"\"]}",
            "freezerd.json:1: \"track\"[0] \"\" is not a valid path: is empty");
        ERR("{\"track\": [\"/a//b\"]}",
            "freezerd.json:1: \"track\"[0] \"/a//b\" is not a valid path: contains an empty component ('//')");
        ERR("{\"track\": [\"/a/./b\"]}",
            "freezerd.json:1: \"track\"[0] \"/a/./b\" is not a valid path: contains a '.' component");
        ERR("{\"track\": [\"/a\\tb\"]}",
            "freezerd.json:1: \"track\"[0] \"/a\\x09b\" is not a valid path: contains a control character");
        ERR("{\"track\": [\"/a\\u0000b\"]}",
            "freezerd.json:1: \"track\"[0] is not a valid path: contains a NUL character");
        {
                char text[600], expected[600];
                char name[257];
                memset(name, 'n', 256);
                name[256] = '\0';
                snprintf(text, sizeof text, "{\"track\": [\"/%s\"]}", name);
                snprintf(expected, sizeof expected,
                         "freezerd.json:1: \"track\"[0] \"/%.63s\"... is not a valid path: has a component longer than NAME_MAX",
                         name);
                ERR(text, expected);
        }

        /* Top level. */
        ERR("[1, 2]", "freezerd.json:1: the top level must be a JSON object, got an array");
        ERR("\n\n  \"x\"", "freezerd.json:3: the top level must be a JSON object, got a string");
        ERR("123", "freezerd.json:1: the top level must be a JSON object, got an integer");
        ERR("null", "freezerd.json:1: the top level must be a JSON object, got null");
        ERR("\ntrue\n", "freezerd.json:2: the top level must be a JSON object, got a boolean");

        /* Bad JSON: line and column. */
        ERR("{\n"
            "  \"track\": [\"/\"],\n"
            "  \"x\": @\n"
            "}",
            "freezerd.json:3:8: invalid JSON: unexpected character");
        ERR("{\n"
            "  \"track\": [\"/\"]\n"
            "  \"default_timeout_usec\": 1\n"
            "}",
            "freezerd.json:3:3: invalid JSON: object value separator ',' expected");
        ERR("{\n \"track\": [",
            "freezerd.json:2:12: invalid JSON: unexpected end of data");
        ERR("", "freezerd.json:1:1: invalid JSON: unexpected end of data");
        ERR("   \n ", "freezerd.json:2:2: invalid JSON: unexpected end of data");
        ERR("{}\n}", "freezerd.json:2:1: invalid JSON: unexpected character");
        ERR("{} {}", "freezerd.json:1:4: invalid JSON: unexpected character");
        ERR("{\"track\": [\"/\"],}", "freezerd.json:1:17: invalid JSON: unexpected character");
        ERR("{\n  /* comment */ \"track\": [\"/\"]}",
            "freezerd.json:2:3: invalid JSON: quoted object property name expected");
        ERR("{\n  \"\xc3\xa9\xc3\xa9\": @}",
            "freezerd.json:2:9: invalid JSON: unexpected character");
        ERR("{\n  'track': [\"/\"]\n}",
            "freezerd.json:2:3: invalid JSON: single-quoted strings are not allowed");
        /* json-c itself refuses single quotes except around object keys. */
        ERR("{\"track\": ['/']}",
            "freezerd.json:1:12: invalid JSON: unexpected character");
        ERR("{\"track\": [{'a': 1}]}",
            "freezerd.json:1:13: invalid JSON: single-quoted strings are not allowed");
        ERR("{\"default_timeout_usec\": NaN}",
            "freezerd.json:1: \"default_timeout_usec\" must be a positive integer (microseconds), got a floating-point number");

        /* A UTF-8 byte order mark (an editor's "UTF-8 with BOM"): said so, at 1:1
         * (json-c's "invalid utf-8 string" blamed the encoding, which is UTF-8). */
        ERR("\xef\xbb\xbf{\"track\": [\"/\"]}",
            "freezerd.json:1:1: invalid JSON: the file starts with a byte order mark (BOM): save it as UTF-8 "
            "without one");

        /* NUL bytes: not visible to strlen(), so test with explicit lengths. */
        {
                static const char nul1[] = "{}\0garbage";
                static const char nul2[] = "{\n\"track\": [\"/a\0\"]}";
                Config c = {};
                char *error = NULL;

                CHECK_R(config_parse(nul1, sizeof nul1 - 1, "f", &c, &error), -EINVAL);
                CHECK_STR(error, "f:1:3: invalid JSON: NUL byte");
                free(error);
                CHECK_R(config_parse(nul2, sizeof nul2 - 1, "f", &c, &error), -EINVAL);
                CHECK_STR(error, "f:2:14: invalid JSON: NUL byte");
                free(error);
        }

        /* Deep nesting is refused by json-c (depth 32), not a crash. */
        {
                char deep[200];
                size_t i = 0;
                deep[i++] = '{';
                memcpy(deep + i, "\"track\":", 8);
                i += 8;
                for (int k = 0; k < 40; k++)
                        deep[i++] = '[';
                deep[i] = '\0';
                Config c = {};
                char *error = NULL;
                CHECK_R(parse(deep, &c, &error), -EINVAL);
                CHECK(error && strstr(error, "invalid JSON"));
                free(error);
        }
}

/* Messages we did not pin down exactly still name the file and the problem. */
static void test_error_substrings(void) {
        static const struct {
                const char *text;
                const char *substring;
        } cases[] = {
                { "{\"track\": [\"/\\ud800\"]}",        "\"track\"[0]" },
                { "{\"track\": [\"/\xff\"]}",           "freezerd.json:1:" },
                { "{\"default_timeout_usec\": 010}",    "freezerd.json:1:" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Config c = {};
                char *error = NULL;
                int r = parse(cases[i].text, &c, &error);

                if (r == 0) {
                        /* \ud800 might be accepted by a future json-c as U+FFFD; then it is a valid path. */
                        config_done(&c);
                        if (i == 0)
                                continue;
                }
                if (r != -EINVAL || !error || !strstr(error, cases[i].substring)) {
                        fprintf(stderr, "%s:%d: case %zu: r=%d error=%s, expected substring %s\n",
                                __FILE__, __LINE__, i, r, error ?: "(null)", cases[i].substring);
                        test_failures++;
                }
                free(error);
        }
}

/* ------------------------------------------------------------------------- */

static void test_load(void) {
        char dir[] = "/tmp/test-config.XXXXXX";
        char path[sizeof dir + 32], missing[sizeof dir + 32], big[sizeof dir + 32];
        Config c = {};
        char *error = NULL;

        if (!mkdtemp(dir)) {
                fprintf(stderr, "mkdtemp: %m\n");
                test_failures++;
                return;
        }
        snprintf(path, sizeof path, "%s/freezerd.json", dir);
        snprintf(missing, sizeof missing, "%s/missing.json", dir);
        snprintf(big, sizeof big, "%s/big.json", dir);

        /* Missing file: defaults, no error. */
        error = (char *) "sentinel";
        CHECK_R(config_load(missing, true, &c, &error), 0);
        CHECK(!error);
        CHECK(is_default(&c));
        config_done(&c);

        /* Missing, but named on the command line: an error naming it (it
         * meant the defaults, track ["/"] among them, silently). */
        CHECK_R(config_load(missing, false, &c, &error), -ENOENT);
        CHECK(error && strstr(error, missing) && strstr(error, strerror(ENOENT)));
        free(error);
        error = NULL;

        /* Valid file. */
        const char *text = "{\n  \"track\": [\"pods\"],\n  \"default_timeout_usec\": 2500000\n}\n";
        CHECK_R(test_write_file(path, text, strlen(text)), 0);
        CHECK_R(config_load(path, true, &c, &error), 0);
        CHECK(!error);
        CHECK(c.n_track == 1 && streq(c.track[0], "/pods") && c.default_timeout_usec == 2500000);
        config_done(&c);

        /* Invalid file: the message names the path as given. */
        text = "{\n  \"track\": [\"pods\"],\n  \"trak\": 1\n}\n";
        CHECK_R(test_write_file(path, text, strlen(text)), 0);
        CHECK_R(config_load(path, true, &c, &error), -EINVAL);
        {
                char expected[sizeof path + 64];
                snprintf(expected, sizeof expected, "%s:3: unknown key \"trak\"", path);
                CHECK_STR(error, expected);
        }
        free(error);
        error = NULL;

        /* 2 MiB file. */
        {
                size_t n = 2 * 1024 * 1024;
                char *blob = malloc(n);
                CHECK(blob);
                if (blob) {
                        memset(blob, ' ', n);
                        blob[0] = '{';
                        blob[n - 2] = '}';
                        blob[n - 1] = '\n';
                        CHECK_R(test_write_file(big, blob, n), 0);
                        CHECK_R(config_load(big, true, &c, &error), -EFBIG);
                        CHECK(error && strstr(error, big) && strstr(error, "larger than 1 MiB"));
                        free(error);
                        error = NULL;
                        CHECK_R(config_load(big, true, &c, NULL), -EFBIG);

                        /* config_parse() refuses it too. */
                        CHECK_R(config_parse(blob, n, "big.json", &c, &error), -EINVAL);
                        CHECK_STR(error, "big.json: file is larger than 1 MiB");
                        free(error);
                        error = NULL;

                        /* Exactly 1 MiB is fine. */
                        n = 1024 * 1024;
                        blob[n - 2] = '}';
                        blob[n - 1] = '\n';
                        CHECK_R(test_write_file(big, blob, n), 0);
                        CHECK_R(config_load(big, true, &c, &error), 0);
                        CHECK(!error);
                        CHECK(is_default(&c));
                        config_done(&c);

                        /* One byte more is not. */
                        blob[n - 1] = ' ';
                        blob[n] = '\n';
                        CHECK_R(test_write_file(big, blob, n + 1), 0);
                        CHECK_R(config_load(big, true, &c, &error), -EFBIG);
                        CHECK(error);
                        free(error);
                        error = NULL;
                        free(blob);
                }
        }

        /* A directory. */
        CHECK_R(config_load(dir, true, &c, &error), -EISDIR);
        CHECK(error && strstr(error, dir) && strstr(error, strerror(EISDIR)));
        free(error);
        error = NULL;

        /* Not a directory in the middle of the path. */
        {
                char notdir[sizeof path + 16];
                snprintf(notdir, sizeof notdir, "%s/x", path);
                CHECK_R(config_load(notdir, true, &c, &error), -ENOTDIR);
                CHECK(error && strstr(error, notdir) && strstr(error, strerror(ENOTDIR)));
                free(error);
                error = NULL;
        }

        /* A FIFO without a writer: refused at once.  Its open() blocked until
         * someone opened it for writing, and freezerd with it (the alarm ends
         * this test instead). */
        {
                char fifo[sizeof dir + 16];
                snprintf(fifo, sizeof fifo, "%s/fifo", dir);
                CHECK(mkfifo(fifo, 0600) == 0);
                alarm(10);
                CHECK_R(config_load(fifo, true, &c, &error), -EINVAL);
                alarm(0);
                CHECK(error && strstr(error, fifo) && strstr(error, "not a regular file (a FIFO)"));
                free(error);
                error = NULL;
                CHECK(unlink(fifo) == 0);
        }

        /* A device: refused as well (/dev/zero read "larger than 1 MiB"). */
        CHECK_R(config_load("/dev/zero", true, &c, &error), -EINVAL);
        CHECK(error && strstr(error, "/dev/zero: not a regular file (a device)"));
        free(error);
        error = NULL;

        CHECK(unlink(path) == 0);
        CHECK(unlink(big) == 0);
        CHECK(rmdir(dir) == 0);
}

int main(void) {
        test_defaults();
        test_valid();
        test_errors();
        test_error_substrings();
        test_load();

        return test_summary("test-config");
}
