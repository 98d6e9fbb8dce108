/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pieces of the error messages about JSON input that freezerd's configuration
 * parser (config.c) and freezectl's batch parser (client/batch-json.c) both
 * give: a user reading either should see the same words. */

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/* Longest part of a key or value quoted in a message. */
#define JSON_QUOTE_MAX 64
#define JSON_QUOTE_BUF_SIZE (JSON_QUOTE_MAX * 4 + 8)

/* s[0, n) in double quotes: printable ASCII and UTF-8 as is, '"' and '\' and
 * control characters escaped, cut after JSON_QUOTE_MAX bytes (then "..."). */
const char *json_quote(const char *s, size_t n, char buf[static JSON_QUOTE_BUF_SIZE]);

/* "null", "a boolean", "an integer", ...: what v is, for "must be X, got Y". */
const char *json_type_phrase(struct json_object *v);

/* 1-based line and column (in characters, a UTF-8 sequence counting as one) of
 * the byte at offset off (clamped to len). */
void json_offset_to_line_column(const char *text, size_t len, size_t off, unsigned *ret_line,
                                unsigned *ret_column);

/* JSON's whitespace (RFC 8259), nothing else. */
static inline bool json_is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
