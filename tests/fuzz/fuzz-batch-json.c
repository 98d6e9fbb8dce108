/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* batch_json_parse(): the JSON batch file that "freezectl batch" reads.
 * Checked: the documented return values and outputs on failure (NULL, 0, a
 * one-line message for -EINVAL/-E2BIG); on success 1..BATCH_JSON_REQUESTS_MAX
 * requests with non-empty paths; the same result without a message pointer;
 * and a round trip: the accepted requests, written back as JSON by json-c,
 * parse to the same requests. */

#include <errno.h>
#include <json-c/json.h>

#include "batch-json.h"
#include "fuzz-json.h"
#include "fuzz-util.h"

static char *serialize(const freezer_request *req, size_t n) {
        json_object *a = json_object_new_array();

        FUZZ_CHECK(a);
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "path", json_object_new_string(req[i].path));
                json_object_object_add(o, "freeze", json_object_new_boolean(req[i].freeze));
                json_object_array_add(a, o);
        }
        return fuzz_json_text(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_copy(data, size), *error = (char *) "unset";
        freezer_request *req = (freezer_request *) 0x1, *req2 = NULL, *req3 = NULL;
        size_t n = 4242, n2 = 0, n3 = 0;
        int r, r2;

        r = batch_json_parse(text, size, &req, &n, &error);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -E2BIG || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(!req && n == 0);
                if (r != -ENOMEM) {
                        FUZZ_CHECK(error && error[0] != '\0');
                        FUZZ_CHECK(!strchr(error, '\n'));
                        free(error);
                }
        } else {
                FUZZ_CHECK(!error);
                FUZZ_CHECK(req);
                FUZZ_CHECK(n >= 1 && n <= BATCH_JSON_REQUESTS_MAX);
                for (size_t i = 0; i < n; i++)
                        FUZZ_CHECK(req[i].path && req[i].path[0] != '\0');
        }

        r2 = batch_json_parse(text, size, &req2, &n2, NULL);
        FUZZ_CHECK(r2 == r);
        FUZZ_CHECK(n2 == n);
        for (size_t i = 0; i < n2; i++) {
                FUZZ_CHECK(strcmp(req[i].path, req2[i].path) == 0);
                FUZZ_CHECK(req[i].freeze == req2[i].freeze);
        }

        if (r == 0) {
                char *again = serialize(req, n);
                r = batch_json_parse(again, strlen(again), &req3, &n3, &error);
                if (r != 0)
                        fprintf(stderr, "round trip of %s failed: %s\n", again, error ?: "(no message)");
                FUZZ_CHECK(r == 0);
                FUZZ_CHECK(n3 == n);
                for (size_t i = 0; i < n3; i++) {
                        FUZZ_CHECK(strcmp(req[i].path, req3[i].path) == 0);
                        FUZZ_CHECK(req[i].freeze == req3[i].freeze);
                }
                free(again);
                batch_json_free(req3);
                batch_json_free(req);
        }
        batch_json_free(req2);
        free(text);
        return 0;
}
