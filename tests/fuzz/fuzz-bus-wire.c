/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* freezectl's D-Bus wire parser (client/bus-wire.c), which reads what comes
 * over freezerd's private socket. Checked: only the documented return values;
 * a parsed message's strings lie inside it and end there with a NUL (the
 * sanitizers catch reads beyond); and a call built from the input, as its
 * string argument or as ApplyBatch's requests (one path a line), fits in
 * wire_call_size() and parses back (the requests too, read here), or is
 * refused as not UTF-8; and the input read as a bus address gives a socket
 * address that fits, or is refused. */

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include "bus-wire.h"
#include "fuzz-util.h"

#define PATH "/org/freezerd/Freezer1"
#define IFACE "org.freezerd.Freezer1.Manager"

/* The a(sb) at the start of a body we built (host byte order) holds exactly
 * these requests: the parser does not look into arrays, so check here. */
static void check_requests(const uint8_t *msg, size_t len, const freezer_request *v, size_t n) {
        uint32_t body_len, array_len, l, b;
        size_t pos, end;

        memcpy(&body_len, msg + 4, 4);
        FUZZ_CHECK(body_len <= len);
        pos = len - body_len;
        FUZZ_CHECK(pos % 8 == 0 && pos + 4 <= len);
        memcpy(&array_len, msg + pos, 4);
        pos = (pos + 4 + 7) & ~(size_t) 7; /* to the first struct, not counted in the length */
        end = pos + array_len;
        FUZZ_CHECK(end <= len);
        for (size_t k = 0; k < n; k++) {
                pos = (pos + 7) & ~(size_t) 7;
                FUZZ_CHECK(pos + 4 <= end);
                memcpy(&l, msg + pos, 4);
                pos += 4;
                FUZZ_CHECK(l == strlen(v[k].path) && pos + l + 1 <= end);
                FUZZ_CHECK(memcmp(msg + pos, v[k].path, l) == 0 && msg[pos + l] == 0);
                pos = (pos + l + 1 + 3) & ~(size_t) 3;
                FUZZ_CHECK(pos + 4 <= end);
                memcpy(&b, msg + pos, 4);
                FUZZ_CHECK(b == (v[k].freeze ? 1u : 0u));
                pos += 4;
        }
        FUZZ_CHECK(pos == end);
}

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
                        FUZZ_CHECK(m.n_u32 <= 2);
                }
                free(msg);
        }

        /* The input (up to its first NUL) as the string of a call. */
        if (size < 4096) {
                char *s = fuzz_strdup(data, size);
                const wire_arg args[] = {WIRE_STRING(s), WIRE_U64(size), WIRE_U64(7)};
                size_t cap = wire_call_size(PATH, IFACE, "Freeze", args, 3), bad_arg, bad_index;
                bool utf8 = wire_check_utf8(args, 3, &bad_arg, &bad_index) == 0;
                uint8_t *out = malloc(cap);
                ssize_t k = out ? wire_build_call(out, cap, 1, PATH, IFACE, "Freeze", args, 3) : -ENOMEM;

                FUZZ_CHECK(utf8 ? k > 0 : k == -EILSEQ);
                if (k > 0) {
                        FUZZ_CHECK(wire_message_length(out, (size_t) k) == k);
                        FUZZ_CHECK(wire_parse_message(out, (size_t) k, &m) == 0);
                        FUZZ_CHECK(m.type == 1 && m.first_string && strcmp(m.first_string, s) == 0);
                }
                free(out);

                /* The same, one request a line (at most 64), as ApplyBatch's. */
                freezer_request requests[64];
                size_t n_requests = 0;
                for (char *p = s, *nl; p && n_requests < 64; p = nl ? nl + 1 : NULL) {
                        nl = strchr(p, '\n');
                        if (nl)
                                *nl = 0;
                        requests[n_requests] = (freezer_request) {p, n_requests % 2 == 0};
                        n_requests++;
                }
                const wire_arg batch[] = {WIRE_REQUESTS(requests, n_requests), WIRE_STRING("auto"), WIRE_U64(0),
                                          WIRE_U64(0)};
                utf8 = wire_check_utf8(batch, 4, &bad_arg, &bad_index) == 0;
                FUZZ_CHECK(utf8 || (bad_arg == 0 && bad_index < n_requests));
                cap = wire_call_size(PATH, IFACE, "ApplyBatch", batch, 4);
                out = malloc(cap);
                k = out ? wire_build_call(out, cap, 2, PATH, IFACE, "ApplyBatch", batch, 4) : -ENOMEM;
                FUZZ_CHECK(utf8 ? k > 0 : k == -EILSEQ);
                if (k > 0) {
                        FUZZ_CHECK(wire_message_length(out, (size_t) k) == k);
                        FUZZ_CHECK(wire_parse_message(out, (size_t) k, &m) == 0);
                        FUZZ_CHECK(m.type == 1 && m.signature && strcmp(m.signature, "a(sb)stt") == 0);
                        check_requests(out, (size_t) k, requests, n_requests);
                }
                free(out);

                /* The input as a bus address (--address=, DBUS_SYSTEM_BUS_ADDRESS):
                 * a socket address inside sun_path, or refused. */
                struct sockaddr_un sa;
                socklen_t sa_len = 0;
                char guid[WIRE_GUID_SIZE];
                int r = wire_parse_address(s, &sa, &sa_len, guid);

                FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EAFNOSUPPORT);
                if (r == 0)
                        FUZZ_CHECK(sa.sun_family == AF_UNIX && sa_len > offsetof(struct sockaddr_un, sun_path) &&
                                   sa_len <= sizeof sa && strncmp(s, "unix:", 5) == 0 &&
                                   (guid[0] == '\0' || strlen(guid) == WIRE_GUID_SIZE - 1));
                free(s);
        }
        free(copy);
        return 0;
}
