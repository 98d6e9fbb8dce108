/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the targets whose round trip writes what was parsed back as JSON. */

#include <json-c/json.h>

#include "fuzz-util.h"

/* o as one line of JSON text on the heap, as journal_write() writes it; takes
 * o. Aborts on allocation failure: not a finding. */
static inline char *fuzz_json_text(json_object *o) {
        char *text;

        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        FUZZ_CHECK(text);
        json_object_put(o);
        return text;
}
