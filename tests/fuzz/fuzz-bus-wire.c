/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* freezectl's D-Bus wire parser (client/bus-wire.c), which reads what comes
 * over freezerd's private socket. Checked: only the documented return values;
 * a parsed message's strings lie inside it and end there with a NUL (the
 * sanitizers catch reads beyond); and a call built from the input as its
 * string argument parses back to that string. */

#include <errno.h>
#include <string.h>

#include "bus-wire.h"
#include "fuzz-util.h"

static void check_string(const char *s, const uint8_t *buf, size_t len) {
        if (!s)
                return;
        FUZZ_CHECK((const uint8_t *) s >= buf && (const uint8_t *) s < buf + len);
        FUZZ_CHECK(memchr(s, 0, len - (size_t) ((const uint8_t *) s - buf)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The message alone in its own allocation, so that ASan sees any read past it. */
        uint8_t *copy = (uint8_t *) fuzz_copy(data, size);
        ssize_t n = wire_message_length(copy, size);
        wire_message m;

        FUZZ_CHECK(n >= 0 || n == -EBADMSG);
        FUZZ_CHECK(n <= (ssize_t) WIRE_MESSAGE_MAX);
        if (n > 0 && (size_t) n <= size) {
                uint8_t *msg = (uint8_t *) fuzz_copy(data, (size_t) n);
                int r = wire_parse_message(msg, (size_t) n, &m);

                FUZZ_CHECK(r == 0 || r == -EBADMSG);
                if (r == 0) {
                        FUZZ_CHECK(m.type >= 1 && m.type <= 4 && m.serial != 0);
                        FUZZ_CHECK(m.type != 3 || m.error_name);
                        check_string(m.error_name, msg, (size_t) n);
                        check_string(m.signature, msg, (size_t) n);
                        check_string(m.first_string, msg, (size_t) n);
                }
                free(msg);
        }

        /* The input (up to its first NUL) as the string of a call. */
        if (size < 4096) {
                char *s = fuzz_strdup(data, size);
                size_t cap = 256 + strlen(s);
                uint8_t *out = malloc(cap);
                ssize_t k = out ? wire_build_call_stt(out, cap, 1, "/org/freezerd/Freezer1",
                                                      "org.freezerd.Freezer1.Manager", "Freeze", s, size, 7)
                                : -ENOMEM;

                FUZZ_CHECK(k > 0);
                if (k > 0) {
                        FUZZ_CHECK(wire_message_length(out, (size_t) k) == k);
                        FUZZ_CHECK(wire_parse_message(out, (size_t) k, &m) == 0);
                        FUZZ_CHECK(m.type == 1 && m.first_string && strcmp(m.first_string, s) == 0);
                }
                free(out);
                free(s);
        }
        free(copy);
        return 0;
}
