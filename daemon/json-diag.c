/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "json-diag.h"

const char *json_quote(const char *s, size_t n, char buf[static JSON_QUOTE_BUF_SIZE]) {
        size_t j = 0;

        buf[j++] = '"';
        for (size_t i = 0; i < n && i < JSON_QUOTE_MAX; i++) {
                unsigned char c = (unsigned char) s[i];

                if (c == '"' || c == '\\') {
                        buf[j++] = '\\';
                        buf[j++] = (char) c;
                } else if (c < 0x20 || c == 0x7f)
                        j += (size_t) snprintf(buf + j, 5, "\\x%02x", c);
                else
                        buf[j++] = (char) c;
        }
        buf[j++] = '"';
        if (n > JSON_QUOTE_MAX) {
                memcpy(buf + j, "...", 3);
                j += 3;
        }
        buf[j] = '\0';
        return buf;
}

const char *json_type_phrase(struct json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_null:
                return "null";
        case json_type_boolean:
                return "a boolean";
        case json_type_double:
                return "a floating-point number";
        case json_type_int:
                return "an integer";
        case json_type_object:
                return "an object";
        case json_type_array:
                return "an array";
        case json_type_string:
                return "a string";
        }
        return "an unknown type";
}

void json_offset_to_line_column(const char *text, size_t len, size_t off, unsigned *ret_line,
                                unsigned *ret_column) {
        unsigned line = 1, column = 1;

        if (off > len)
                off = len;

        for (size_t i = 0; i < off; i++) {
                unsigned char c = (unsigned char) text[i];

                if (c == '\n') {
                        line++;
                        column = 1;
                } else if ((c & 0xc0) != 0x80)
                        column++;
        }

        *ret_line = line;
        *ret_column = column;
}
