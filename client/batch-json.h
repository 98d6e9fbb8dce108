/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The JSON batch format of "freezectl batch": an array of request objects,
 *
 *     [ {"path": "/pods/a", "freeze": true}, {"path": "/pods/b", "freeze": false} ]
 *
 * each with exactly the keys "path" (a non-empty string without NUL
 * characters) and "freeze" (a boolean). The parser is strict: the text must be
 * one RFC 8259 JSON value in UTF-8 (no byte order mark, comments, single-quoted
 * strings, trailing commas, raw control characters in strings, \uXXXX escapes
 * of UTF-16 surrogates outside a pair, or trailing data), keys must not repeat, and the array must hold between 1 and
 * BATCH_JSON_REQUESTS_MAX requests. The text itself may be at most
 * BATCH_JSON_SIZE_MAX bytes.
 *
 * Pure: no I/O, no global state (besides json-c's), so it can be unit-tested
 * and fuzzed on its own. */

#include <stddef.h>

#include "freezer.h"

/* The daemon's limit of requests per ApplyBatch. */
#define BATCH_JSON_REQUESTS_MAX 65536
#define BATCH_JSON_SIZE_MAX (64U * 1024U * 1024U)

/* Parse text[0, len) (it need not be NUL-terminated). On success returns 0,
 * *ret an array of *ret_n >= 1 requests in text order, and *ret_error NULL;
 * free *ret with batch_json_free(): the paths live in the same allocation.
 *
 * On failure *ret is NULL, *ret_n 0, and returns
 *   -EINVAL  malformed input; *ret_error is a one-line description, such as
 *            "line 3, column 7: unexpected character" or
 *            "element 2 (line 4): missing key \"freeze\"" (elements are counted
 *            from 0)
 *   -E2BIG   more than BATCH_JSON_SIZE_MAX bytes or BATCH_JSON_REQUESTS_MAX
 *            requests; *ret_error says which
 *   -ENOMEM  out of memory; *ret_error is NULL.
 * *ret_error must be freed with free(). ret_error may be NULL if the caller
 * does not want the message. */
int batch_json_parse(const char *text, size_t len, freezer_request **ret, size_t *ret_n, char **ret_error);

/* Free what batch_json_parse() returned (NULL is fine). Returns NULL. */
freezer_request *batch_json_free(freezer_request *requests);
