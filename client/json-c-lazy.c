/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * json-c for freezectl, loaded on first use (see lazy-load.h): freezectl
 * needs it for --json and for batch files only; linked against it, every
 * start would pay about a third of a millisecond for it.
 */

#include <json-c/json.h>

#include "lazy-load.h"

/* The soname of json-c's ABI since 0.15, the oldest json-c we build with. */
#define JSON_C_SONAME "libjson-c.so.5"

LAZY_LIBRARY(json_c_symbol, JSON_C_SONAME)

#define FORWARD(ret, name, params, args) LAZY_FORWARD(json_c_symbol, ret, name, params, args)
#define FORWARD_VOID(name, params, args) LAZY_FORWARD_VOID(json_c_symbol, name, params, args)

FORWARD(struct json_object *, json_object_new_object, (void), ())
FORWARD(struct json_object *, json_object_new_array, (void), ())
FORWARD(struct json_object *, json_object_new_string, (const char *s), (s))
FORWARD(struct json_object *, json_object_new_boolean, (json_bool b), (b))
FORWARD(struct json_object *, json_object_new_int64, (int64_t i), (i))
FORWARD(struct json_object *, json_object_new_uint64, (uint64_t i), (i))
FORWARD(struct json_object *, json_object_new_double_s, (double d, const char *ds), (d, ds))
FORWARD(int, json_object_put, (struct json_object *obj), (obj))
FORWARD(int, json_object_object_add, (struct json_object *obj, const char *key, struct json_object *val),
        (obj, key, val))
FORWARD(json_bool, json_object_object_get_ex,
        (const struct json_object *obj, const char *key, struct json_object **value), (obj, key, value))
FORWARD(int, json_object_array_add, (struct json_object *obj, struct json_object *val), (obj, val))
FORWARD(size_t, json_object_array_length, (const struct json_object *obj), (obj))
FORWARD(struct json_object *, json_object_array_get_idx, (const struct json_object *obj, size_t idx),
        (obj, idx))
FORWARD(enum json_type, json_object_get_type, (const struct json_object *obj), (obj))
FORWARD(int, json_object_is_type, (const struct json_object *obj, enum json_type type), (obj, type))
FORWARD(json_bool, json_object_get_boolean, (const struct json_object *obj), (obj))
FORWARD(const char *, json_object_get_string, (struct json_object *obj), (obj))
FORWARD(int, json_object_get_string_len, (const struct json_object *obj), (obj))
FORWARD(const char *, json_object_to_json_string_ext, (struct json_object *obj, int flags), (obj, flags))

FORWARD(struct json_object_iterator, json_object_iter_begin, (struct json_object *obj), (obj))
FORWARD(struct json_object_iterator, json_object_iter_end, (const struct json_object *obj), (obj))
FORWARD(json_bool, json_object_iter_equal,
        (const struct json_object_iterator *iter1, const struct json_object_iterator *iter2), (iter1, iter2))
FORWARD_VOID(json_object_iter_next, (struct json_object_iterator *iter), (iter))
FORWARD(const char *, json_object_iter_peek_name, (const struct json_object_iterator *iter), (iter))

FORWARD(struct json_tokener *, json_tokener_new, (void), ())
FORWARD_VOID(json_tokener_free, (struct json_tokener *tok), (tok))
FORWARD_VOID(json_tokener_set_flags, (struct json_tokener *tok, int flags), (tok, flags))
FORWARD(struct json_object *, json_tokener_parse_ex, (struct json_tokener *tok, const char *str, int len),
        (tok, str, len))
FORWARD(enum json_tokener_error, json_tokener_get_error, (struct json_tokener *tok), (tok))
FORWARD(size_t, json_tokener_get_parse_end, (struct json_tokener *tok), (tok))
FORWARD(const char *, json_tokener_error_desc, (enum json_tokener_error jerr), (jerr))
