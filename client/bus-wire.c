/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* See bus-wire.h for what this is and why. */

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bus-wire.h"
#include "cgroup-util.h"
#include "client-util.h"

/* D-Bus specification, "Message Format". */
#define MSG_METHOD_CALL 1
#define MSG_METHOD_RETURN 2
#define MSG_ERROR 3
#define MSG_SIGNAL 4

#define FIELD_PATH 1
#define FIELD_INTERFACE 2
#define FIELD_MEMBER 3
#define FIELD_ERROR_NAME 4
#define FIELD_REPLY_SERIAL 5
#define FIELD_DESTINATION 6
#define FIELD_SENDER 7
#define FIELD_SIGNATURE 8
#define FIELD_UNIX_FDS 9

#define FIXED_HEADER 16

#define DBUS_SERVICE "org.freedesktop.DBus"
#define DBUS_PATH "/org/freedesktop/DBus"
#define DBUS_INTERFACE "org.freedesktop.DBus"
/* The longest header field array the specification allows (an array's limit). */
#define FIELDS_MAX (1U << 26)

/* sd-bus gives up on a server that does not answer AUTH within 90 s, whatever
 * the call's own timeout (which may be a day): so do we. */
#define AUTH_TIMEOUT_USEC (90 * USEC_PER_SEC)

/* The server's answer to AUTH ("OK <guid>\r\n"), or its REJECTED line, fit well below this. */
#define AUTH_LINE_MAX 512

struct wire {
        int fd;
        uint32_t serial;
        bool authenticated;
        bool begin_pending;      /* authenticated apart (guid=): BEGIN goes with the first call */
        const char *destination; /* on a bus: the service called; NULL on a peer connection */
        uint32_t hello_serial;   /* on a bus: our Hello's, once sent */
        bool hello_answered;     /* on a bus: Hello's reply came (the bus let us in) */
        bool unsent;             /* the last call was not sent whole (send_all() timed out) */
        bool cut;                /* the peer closed the connection while the last call was written */
        char guid[WIRE_GUID_SIZE]; /* the server's the address names ("" if none): OK must give it */
        uint8_t *buf; /* received, not yet consumed */
        size_t len, allocated;
        char *error_name, *error_message;
};

static size_t align_to(size_t n, size_t a) {
        return (n + a - 1) & ~(a - 1);
}

static bool host_big_endian(void) {
        const uint16_t one = 1;
        return *(const uint8_t *) &one == 0;
}

/* ---- building a call ---- */

typedef struct builder {
        uint8_t *buf;
        size_t size, len;
        bool failed;   /* out of room */
        bool too_long; /* an array over the protocol's limit */
} builder;

static void put(builder *b, const void *p, size_t n) {
        if (b->failed || n > b->size - b->len) {
                b->failed = true;
                return;
        }
        memcpy(b->buf + b->len, p, n);
        b->len += n;
}

static void pad(builder *b, size_t a) {
        static const uint8_t zeros[8] = {};
        put(b, zeros, align_to(b->len, a) - b->len);
}

static void put_u8(builder *b, uint8_t v) {
        put(b, &v, 1);
}

static void put_u32(builder *b, uint32_t v) {
        pad(b, 4);
        put(b, &v, 4); /* host order: the first byte of the message says which */
}

static void put_u64(builder *b, uint64_t v) {
        pad(b, 8);
        put(b, &v, 8);
}

static void put_string(builder *b, const char *s) {
        put_u32(b, (uint32_t) strlen(s));
        put(b, s, strlen(s) + 1);
}

static void put_signature(builder *b, const char *s) {
        put_u8(b, (uint8_t) strlen(s));
        put(b, s, strlen(s) + 1);
}

static void put_field_string(builder *b, uint8_t code, char type, const char *s) {
        const char sig[2] = {type, 0};

        pad(b, 8);
        put_u8(b, code);
        put_signature(b, sig);
        if (type == 'g')
                put_signature(b, s);
        else
                put_string(b, s);
}

/* Valid UTF-8 as freezerd's sd-bus takes it: no overlong forms, no
 * surrogates, nothing above U+10FFFF, and no noncharacters (U+FDD0..U+FDEF,
 * U+xFFFE, U+xFFFF), which sd-bus refuses although the specification allows
 * them since 0.21: its error for them would be a vague InconsistentMessage.
 * The decoder is the daemon's (cgroup-util.h), which freezectl links. */
static bool utf8_valid(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                size_t n = cg_utf8_char_len(p, true);

                if (n == 0)
                        return false;
                p += n;
        }
        return true;
}

int wire_check_utf8(const wire_arg *args, size_t n_args, size_t *ret_arg, size_t *ret_index) {
        for (size_t i = 0; i < n_args; i++) {
                if (args[i].type == 's' && !utf8_valid(args[i].s)) {
                        *ret_arg = i;
                        *ret_index = 0;
                        return -EILSEQ;
                }
                if (args[i].type == 'R')
                        for (size_t k = 0; k < args[i].requests.n; k++)
                                if (!utf8_valid(args[i].requests.v[k].path)) {
                                        *ret_arg = i;
                                        *ret_index = k;
                                        return -EILSEQ;
                                }
        }
        return 0;
}

/* A string's bytes in a message at most: length, bytes, NUL, padding before. */
static size_t string_size(const char *s) {
        return 8 + strlen(s) + 1;
}

size_t wire_call_size(const char *path, const char *interface, const char *member, const wire_arg *args,
                      size_t n_args) {
        /* Fixed header, four fields (code, signature, padding), the signature
         * (at most 5 characters an argument), the padding before the body. */
        size_t n = 16 + 5 * 8 + string_size(path) + string_size(interface) + string_size(member) + 8 +
                   5 * n_args + 8 + 256 + 5; /* a fifth field: the destination, up to 255 bytes */

        for (size_t i = 0; i < n_args; i++)
                switch (args[i].type) {
                case 's':
                        n += string_size(args[i].s);
                        break;
                case 't':
                        n += 16;
                        break;
                case 'b':
                        n += 8;
                        break;
                case 'R':
                        n += 16; /* length, padding to the first struct */
                        for (size_t k = 0; k < args[i].requests.n; k++)
                                n += 8 + string_size(args[i].requests.v[k].path) + 8; /* struct padding, s, b */
                        break;
                default:
                        break; /* wire_build_call() refuses it */
                }
        return n;
}

/* The D-Bus limit on an array's length in bytes. */
#define ARRAY_MAX (1U << 26)

static void put_requests(builder *b, const freezer_request *v, size_t n) {
        size_t length_at, start;
        uint32_t length;

        pad(b, 4);
        length_at = b->len;
        put_u32(b, 0); /* set below */
        pad(b, 8);     /* to the first struct, even with none: not part of the length */
        start = b->len;
        for (size_t k = 0; k < n; k++) {
                pad(b, 8);
                put_string(b, v[k].path);
                put_u32(b, v[k].freeze ? 1 : 0);
        }
        if (b->failed)
                return;
        if (b->len - start > ARRAY_MAX) {
                b->too_long = true;
                return;
        }
        length = (uint32_t) (b->len - start);
        memcpy(b->buf + length_at, &length, 4);
}

/* An argument type's D-Bus signature, NULL for none we know. */
static const char *arg_signature(char type) {
        switch (type) {
        case 's':
                return "s";
        case 't':
                return "t";
        case 'b':
                return "b";
        case 'R':
                return "a(sb)";
        default:
                return NULL;
        }
}

ssize_t wire_build_call(uint8_t *buf, size_t size, uint32_t serial, const char *path, const char *interface,
                        const char *member, const wire_arg *args, size_t n_args) {
        return wire_build_call_to(buf, size, serial, NULL, path, interface, member, args, n_args);
}

ssize_t wire_build_call_to(uint8_t *buf, size_t size, uint32_t serial, const char *destination, const char *path,
                           const char *interface, const char *member, const wire_arg *args, size_t n_args) {
        builder b = {.buf = buf, .size = size};
        size_t fields_start, fields_end, body_start, ignored;
        char signature[256];
        size_t sig_len = 0;
        uint32_t v;

        /* Names have at most 255 bytes (the specification's "Valid Names"); an
         * object path has no such bound (only the message's size bounds it):
         * a group's object is its whole path, escaped (wire_path_encode(), up
         * to 3 bytes a byte), often longer. */
        if (serial == 0 || strlen(interface) > 255 || strlen(member) > 255 ||
            (destination && strlen(destination) > 255))
                return -EINVAL;
        for (size_t i = 0; i < n_args; i++) {
                const char *t = arg_signature(args[i].type);

                if (!t || sig_len + strlen(t) >= sizeof signature)
                        return -EINVAL;
                memcpy(signature + sig_len, t, strlen(t));
                sig_len += strlen(t);
                if (args[i].type == 's' && strlen(args[i].s) > UINT32_MAX / 2)
                        return -EINVAL;
        }
        signature[sig_len] = 0;
        if (wire_check_utf8(args, n_args, &ignored, &ignored) < 0)
                return -EILSEQ;

        put_u8(&b, host_big_endian() ? 'B' : 'l');
        put_u8(&b, MSG_METHOD_CALL);
        put_u8(&b, 0); /* flags: a reply is expected */
        put_u8(&b, 1); /* protocol version */
        put_u32(&b, 0); /* body length, set below */
        put_u32(&b, serial);
        put_u32(&b, 0); /* length of the field array, set below */
        fields_start = b.len;
        put_field_string(&b, FIELD_PATH, 'o', path);
        put_field_string(&b, FIELD_INTERFACE, 's', interface);
        put_field_string(&b, FIELD_MEMBER, 's', member);
        if (destination)
                put_field_string(&b, FIELD_DESTINATION, 's', destination);
        if (sig_len > 0)
                put_field_string(&b, FIELD_SIGNATURE, 'g', signature);
        fields_end = b.len;
        pad(&b, 8);
        body_start = b.len;
        for (size_t i = 0; i < n_args; i++)
                switch (args[i].type) {
                case 's':
                        put_string(&b, args[i].s);
                        break;
                case 't':
                        put_u64(&b, args[i].t);
                        break;
                case 'b':
                        put_u32(&b, args[i].b ? 1 : 0);
                        break;
                default:
                        put_requests(&b, args[i].requests.v, args[i].requests.n);
                        break;
                }
        if (b.too_long)
                return -EINVAL;
        if (b.failed)
                return -ENOBUFS;

        v = (uint32_t) (b.len - body_start);
        memcpy(buf + 4, &v, 4);
        v = (uint32_t) (fields_end - fields_start);
        memcpy(buf + 12, &v, 4);
        return (ssize_t) b.len;
}

/* ---- reading a message ---- */

typedef struct reader {
        const uint8_t *buf;
        size_t pos, end;
        bool big;
} reader;

static int skip_padding(reader *r, size_t a) {
        size_t to = align_to(r->pos, a);

        if (to > r->end)
                return -EBADMSG;
        for (; r->pos < to; r->pos++)
                if (r->buf[r->pos] != 0)
                        return -EBADMSG;
        return 0;
}

static uint32_t load_u32(const uint8_t *p, bool big) {
        return big ? (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3]
                   : (uint32_t) p[3] << 24 | (uint32_t) p[2] << 16 | (uint32_t) p[1] << 8 | p[0];
}

/* A fixed-size item of n bytes, aligned to n; its value only for n = 1 or 4
 * (the 2- and 8-byte types are skipped, never read). */
static int read_fixed(reader *r, size_t n, uint32_t *ret) {
        if (skip_padding(r, n) < 0 || r->end - r->pos < n)
                return -EBADMSG;
        if (ret)
                *ret = n == 1 ? r->buf[r->pos] : load_u32(r->buf + r->pos, r->big);
        r->pos += n;
        return 0;
}

/* A string of length n at r->pos: n bytes without NUL, then a NUL. */
static int read_bytes_nul(reader *r, size_t n, const char **ret) {
        if (r->end - r->pos < n + 1 || r->buf[r->pos + n] != 0 || memchr(r->buf + r->pos, 0, n))
                return -EBADMSG;
        if (ret)
                *ret = (const char *) r->buf + r->pos;
        r->pos += n + 1;
        return 0;
}

static int read_string(reader *r, const char **ret) {
        uint32_t n;

        if (read_fixed(r, 4, &n) < 0)
                return -EBADMSG;
        return read_bytes_nul(r, n, ret);
}

static int read_signature(reader *r, const char **ret) {
        uint32_t n;

        if (read_fixed(r, 1, &n) < 0)
                return -EBADMSG;
        return read_bytes_nul(r, n, ret);
}

/* One value of a basic type; header fields of other types are refused rather
 * than skipped (no sender puts any there). */
static int read_basic(reader *r, char type, const char **ret_string, uint32_t *ret_u32) {
        switch (type) {
        case 'y':
                return read_fixed(r, 1, NULL);
        case 'n':
        case 'q':
                return read_fixed(r, 2, NULL);
        case 'b':
        case 'i':
        case 'u':
        case 'h':
                return read_fixed(r, 4, ret_u32);
        case 'x':
        case 't':
        case 'd':
                return read_fixed(r, 8, NULL);
        case 's':
        case 'o':
                return read_string(r, ret_string);
        case 'g':
                return read_signature(r, ret_string);
        default:
                return -EBADMSG;
        }
}

ssize_t wire_message_length(const uint8_t *buf, size_t len) {
        uint64_t total;
        uint32_t body, fields;
        bool big;

        if (len < FIXED_HEADER)
                return 0;
        if ((buf[0] != 'l' && buf[0] != 'B') || buf[3] != 1)
                return -EBADMSG;
        big = buf[0] == 'B';
        body = load_u32(buf + 4, big);
        fields = load_u32(buf + 12, big);
        if (fields > FIELDS_MAX)
                return -EBADMSG;
        total = align_to(FIXED_HEADER + (uint64_t) fields, 8) + body;
        if (total > WIRE_MESSAGE_MAX)
                return -EBADMSG;
        return (ssize_t) total;
}

int wire_parse_message(const uint8_t *buf, size_t len, wire_message *ret) {
        static const char field_type[] = {
                [FIELD_PATH] = 'o',        [FIELD_INTERFACE] = 's',    [FIELD_MEMBER] = 's',
                [FIELD_ERROR_NAME] = 's',  [FIELD_REPLY_SERIAL] = 'u', [FIELD_DESTINATION] = 's',
                [FIELD_SENDER] = 's',      [FIELD_SIGNATURE] = 'g',    [FIELD_UNIX_FDS] = 'u',
        };
        wire_message m = {};
        ssize_t total = wire_message_length(buf, len);
        reader r;

        if (total <= 0 || (size_t) total != len)
                return -EBADMSG;
        r = (reader) {.buf = buf, .pos = FIXED_HEADER, .big = buf[0] == 'B'};
        r.end = FIXED_HEADER + load_u32(buf + 12, r.big);
        m.type = buf[1];
        m.serial = load_u32(buf + 8, r.big);
        if (m.type < MSG_METHOD_CALL || m.type > MSG_SIGNAL || m.serial == 0)
                return -EBADMSG;

        while (r.pos < r.end) {
                const char *sig, *s = NULL;
                uint32_t code, u = 0;

                if (read_fixed(&r, 1, &code) < 0)
                        return -EBADMSG;
                if (read_signature(&r, &sig) < 0 || strlen(sig) != 1)
                        return -EBADMSG;
                if (code < ELEMENTSOF(field_type) && field_type[code] && sig[0] != field_type[code])
                        return -EBADMSG;
                if (read_basic(&r, sig[0], &s, &u) < 0)
                        return -EBADMSG;
                if (code == FIELD_ERROR_NAME)
                        m.error_name = s;
                else if (code == FIELD_REPLY_SERIAL)
                        m.reply_serial = u;
                else if (code == FIELD_SIGNATURE)
                        m.signature = s;
                if (r.pos < r.end && skip_padding(&r, 8) < 0)
                        return -EBADMSG;
        }

        /* The body, after the header's padding to 8. */
        r.end = len;
        if (skip_padding(&r, 8) < 0)
                return -EBADMSG;
        if (r.pos < len && !m.signature)
                return -EBADMSG; /* a body needs a signature */
        if (m.signature && m.signature[0] == 's' && read_string(&r, &m.first_string) < 0)
                return -EBADMSG;
        if (m.signature && m.signature[0] == 'v') {
                const char *inner;

                if (read_signature(&r, &inner) < 0)
                        return -EBADMSG;
                if (streq(inner, "s") && read_string(&r, &m.variant_string) < 0)
                        return -EBADMSG;
                if (streq(inner, "u")) {
                        if (read_fixed(&r, 4, &m.variant_u32) < 0)
                                return -EBADMSG;
                        m.has_variant_u32 = true;
                }
        }
        for (; m.signature && m.signature[m.n_u32] == 'u' && m.n_u32 < ELEMENTSOF(m.u32); m.n_u32++)
                if (read_fixed(&r, 4, &m.u32[m.n_u32]) < 0)
                        return -EBADMSG;

        if ((m.type == MSG_METHOD_RETURN || m.type == MSG_ERROR) && m.reply_serial == 0)
                return -EBADMSG;
        if (m.type == MSG_ERROR && !m.error_name)
                return -EBADMSG;
        *ret = m;
        return 0;
}

/* ---- the connection ---- */

static int open_sockaddr(const struct sockaddr_un *sa, socklen_t sa_len, const char *destination, wire **ret) {
        wire *w = calloc(1, sizeof *w);

        if (!w)
                return -ENOMEM;
        w->destination = destination;
        w->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (w->fd < 0 || connect(w->fd, (const struct sockaddr *) sa, sa_len) < 0) {
                int r = -errno;
                wire_close(w);
                return r;
        }
        *ret = w;
        return 0;
}

int wire_open_bus_at(const char *path, const char *destination, wire **ret) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        return open_sockaddr(&sa, sizeof sa, destination, ret);
}

int wire_open(const char *path, wire **ret) {
        /* No destination: a peer, no Hello. */
        return wire_open_bus_at(path, NULL, ret);
}

int wire_open_bus(const char *address, const char *destination, wire **ret) {
        char guid[WIRE_GUID_SIZE];
        struct sockaddr_un sa;
        socklen_t sa_len;
        int r = wire_parse_address(address, &sa, &sa_len, guid);

        if (r < 0)
                return r;
        r = open_sockaddr(&sa, sa_len, destination, ret);
        if (r >= 0)
                memcpy((*ret)->guid, guid, sizeof guid);
        return r;
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* -EINVAL, with what is wrong in why (if not NULL). */
_printf_(3, 4)
static int address_defect(char *why, size_t why_size, const char *fmt, ...) {
        va_list ap;

        if (why && why_size > 0) {
                va_start(ap, fmt);
                (void) vsnprintf(why, why_size, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

/* The bytes of the %-escaped socket name [v, end) once unescaped. */
static size_t socket_name_length(const char *v, const char *end) {
        size_t n = 0;

        for (; v < end; v++, n++)
                if (*v == '%' && end - v > 2)
                        v += 2;
        return n;
}

/* wire_parse_address(), and for -EINVAL what is wrong with the address, in
 * why (of size why_size; may be NULL). */
static int parse_address(const char *address, struct sockaddr_un *ret, socklen_t *ret_len, char *ret_guid, char *why,
                         size_t why_size) {
        /* D-Bus specification, "Server Addresses": transport:key=value,...
         * with values %-escaped; entries separated by ';' are alternatives. */
        const char *p;
        size_t n = 0, start = 0;
        bool found = false, abstract = false;

        *ret = (struct sockaddr_un) {.sun_family = AF_UNIX};
        ret_guid[0] = '\0';
        if (strncmp(address, "unix:", 5) != 0 || strchr(address, ';'))
                return -EAFNOSUPPORT;
        p = address + 5;
        while (*p) {
                const char *key = p, *eq = strchr(p, '='), *end;
                bool is_path, is_abstract;

                if (!eq)
                        return address_defect(why, why_size, "\"%.*s\" is no key=value pair",
                                              (int) strcspn(key, ","), key);
                end = strchr(eq, ',') ?: eq + strlen(eq);
                is_path = eq - key == 4 && memcmp(key, "path", 4) == 0;
                is_abstract = eq - key == 8 && memcmp(key, "abstract", 8) == 0;
                if (is_path || is_abstract) {
                        if (found)
                                return address_defect(why, why_size, "it names more than one socket: path= or "
                                                                     "abstract= is given twice");
                        found = true;
                        abstract = is_abstract;
                        start = n = abstract ? 1 : 0; /* an abstract name starts with a NUL */
                        for (const char *v = eq + 1; v < end; v++) {
                                int c = (unsigned char) *v;

                                if (c == '%') {
                                        int hi = v + 2 < end ? hex_digit(v[1]) : -1, lo = hi >= 0 ? hex_digit(v[2]) : -1;

                                        if (lo < 0) /* up to 3 bytes, of this value only */
                                                return address_defect(why, why_size, "\"%.*s\" is no %%-escape "
                                                                      "of two hex digits",
                                                                      (int) (end - v < 3 ? end - v : 3), v);
                                        c = hi * 16 + lo;
                                        v += 2;
                                }
                                if (c == 0)
                                        return address_defect(why, why_size, "its socket name holds a NUL (%%00)");
                                if (n >= sizeof ret->sun_path - 1)
                                        return address_defect(why, why_size,
                                                              "its socket %s is %zu bytes, longer than the %zu "
                                                              "a unix socket address takes",
                                                              abstract ? "name" : "path",
                                                              socket_name_length(eq + 1, end),
                                                              sizeof ret->sun_path - 1 - (abstract ? 1 : 0));
                                ret->sun_path[n++] = (char) c;
                        }
                        if (n == start)
                                return address_defect(why, why_size, "%.*s= names no socket",
                                                      (int) (eq - key), key);
                } else if (eq - key == 4 && memcmp(key, "guid", 4) == 0) {
                        /* The server's id, which its OK must give (as sd-bus
                         * checks): 32 hex digits. */
                        if (ret_guid[0])
                                return address_defect(why, why_size, "guid= is given twice");
                        if (end - eq - 1 != WIRE_GUID_SIZE - 1)
                                return address_defect(why, why_size, "guid=%.*s is not 32 hex digits",
                                                      (int) (end - eq - 1), eq + 1);
                        for (const char *v = eq + 1; v < end; v++)
                                if (hex_digit(*v) < 0)
                                        return address_defect(why, why_size, "guid=%.*s is not 32 hex digits",
                                                              (int) (end - eq - 1), eq + 1);
                        memcpy(ret_guid, eq + 1, WIRE_GUID_SIZE - 1);
                        ret_guid[WIRE_GUID_SIZE - 1] = '\0';
                } else
                        /* tmpdir=, dir=, runtime= (listening only) and the like */
                        return -EAFNOSUPPORT;
                p = *end ? end + 1 : end;
        }
        if (!found)
                return -EAFNOSUPPORT;
        *ret_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + (abstract ? 0 : 1));
        return 0;
}

int wire_parse_address(const char *address, struct sockaddr_un *ret, socklen_t *ret_len, char *ret_guid) {
        return parse_address(address, ret, ret_len, ret_guid, NULL, 0);
}

const char *wire_address_defect(const char *address, char *buf, size_t size) {
        struct sockaddr_un sa;
        socklen_t len;
        char guid[WIRE_GUID_SIZE];

        if (size == 0)
                return NULL;
        buf[0] = '\0';
        if (parse_address(address, &sa, &len, guid, buf, size) != -EINVAL || !buf[0])
                return NULL;
        return buf;
}

wire *wire_close(wire *w) {
        if (!w)
                return NULL;
        if (w->fd >= 0)
                close(w->fd);
        free(w->buf);
        free(w->error_name);
        free(w->error_message);
        free(w);
        return NULL;
}

bool wire_call_unsent(const wire *w) {
        return w->unsent;
}

bool wire_call_cut(const wire *w) {
        return w->cut;
}

bool wire_authenticated(const wire *w) {
        return w->authenticated;
}

bool wire_bus_refused(const wire *w) {
        /* Not when it closed while the call was written: a bus reads Hello
         * and the call's header together and drops both, unanswered, when
         * the call is larger than it takes (max_message_size), though it
         * lets us in. */
        return w->destination && !w->hello_answered && !w->cut;
}

const char *wire_last_error_name(const wire *w) {
        return w->error_name;
}

const char *wire_last_error_message(const wire *w) {
        return w->error_message;
}

/* Until deadline (CLOCK_MONOTONIC µs): a peer that reads nothing (freezerd
 * stopped) lets the kernel queue what the socket buffer holds and no more,
 * and a blocking send() of a large batch waited for it for ever, whatever the
 * call's timeout.  A message cut short by the deadline would make the peer
 * read the next one as its rest: the connection is shut then, and the peer
 * drops the part it has. */
static int send_all(int fd, const void *p, size_t n, uint64_t deadline) {
        bool partial = false;

        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        struct pollfd pfd = {.fd = fd, .events = POLLOUT};

                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        if (now_usec() >= deadline) {
                                if (partial)
                                        (void) shutdown(fd, SHUT_RDWR);
                                return -ETIMEDOUT;
                        }
                        if (poll(&pfd, 1, poll_timeout_ms(deadline)) < 0 && errno != EINTR)
                                return -errno;
                        continue;
                }
                p = (const uint8_t *) p + k;
                n -= (size_t) k;
                partial = true;
        }
        return 0;
}

/* send_all() on w's socket, noting what went wrong for the error the caller
 * makes of it: not sent whole by the deadline (unsent), or the peer gone
 * (cut, reported as ECONNRESET). */
static int wire_send(wire *w, const void *p, size_t n, uint64_t deadline) {
        int r = send_all(w->fd, p, n, deadline);

        if (r == -ETIMEDOUT)
                w->unsent = true;
        if (r == -EPIPE || r == -ECONNRESET)
                w->cut = true;
        return r == -EPIPE ? -ECONNRESET : r;
}

/* Read what comes, until deadline (CLOCK_MONOTONIC µs). */
static int receive(wire *w, uint64_t deadline) {
        struct pollfd p = {.fd = w->fd, .events = POLLIN};
        uint64_t now;
        ssize_t n;
        int r;

        /* We read only while the one message we wait for is incomplete, so
         * the buffer never needs much more than WIRE_MESSAGE_MAX. */
        if (w->allocated - w->len < 4096) {
                size_t a = w->allocated ? w->allocated * 2 : 8192;
                uint8_t *b;

                if (a > 2 * WIRE_MESSAGE_MAX)
                        return -EBADMSG;
                b = realloc(w->buf, a);
                if (!b)
                        return -ENOMEM;
                w->buf = b;
                w->allocated = a;
        }

        for (;;) {
                now = now_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;

                r = poll(&p, 1, poll_timeout_ms(deadline));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                n = recv(w->fd, w->buf + w->len, w->allocated - w->len, 0);
                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -ECONNRESET;
                w->len += (size_t) n;
                return 0;
        }
}

static void consume(wire *w, size_t n) {
        memmove(w->buf, w->buf + n, w->len - n);
        w->len -= n;
}

/* The server's answer to AUTH: "OK <guid>" goes on, anything else
 * (REJECTED, ERROR) means we may not talk to it. */
static int read_auth_reply(wire *w, uint64_t deadline) {
        for (;;) {
                uint8_t *nl = w->len > 0 ? memchr(w->buf, '\n', w->len) : NULL;
                int r;

                if (nl) {
                        size_t n = (size_t) (nl - w->buf) + 1;
                        bool ok = n >= 5 && memcmp(w->buf, "OK ", 3) == 0 && nl[-1] == '\r';

                        /* Another server than the address names. */
                        if (ok && w->guid[0] &&
                            (n != 3 + WIRE_GUID_SIZE - 1 + 2 || strncasecmp((char *) w->buf + 3, w->guid, WIRE_GUID_SIZE - 1) != 0))
                                ok = false;
                        consume(w, n);
                        if (!ok)
                                return -EPERM;
                        w->authenticated = true;
                        return 0;
                }
                if (w->len > AUTH_LINE_MAX)
                        return -EBADMSG;
                r = receive(w, deadline);
                if (r < 0)
                        return r;
        }
}

static int set_string(char **p, const char *s) {
        free(*p);
        *p = s ? strdup(s) : NULL;
        return !s || *p ? 0 : -ENOMEM;
}

/* sd_bus_error_set_errno()'s names for the errnos a call here can fail with
 * (the others it names "System.Error.<ERRNO>"). */
static const char *errno_bus_name(int e) {
        switch (e) {
        case ETIMEDOUT:
                return "org.freedesktop.DBus.Error.Timeout";
        case ECONNRESET:
                return "org.freedesktop.DBus.Error.Disconnected";
        case EPERM:
        case EACCES:
                return "org.freedesktop.DBus.Error.AccessDenied";
        case EBADMSG:
                return "org.freedesktop.DBus.Error.InconsistentMessage";
        case EIO:
                return "org.freedesktop.DBus.Error.IOError";
        case ENOENT:
                return "org.freedesktop.DBus.Error.FileNotFound";
        case EINVAL:
                return "org.freedesktop.DBus.Error.InvalidArgs";
        default:
                return NULL;
        }
}

/* A NUL and "AUTH EXTERNAL <our uid, as hex of its decimal digits>\r\n" at
 * out (64 bytes are plenty); its length. */
static size_t auth_line(uint8_t *out) {
        char uid[16];
        int l = snprintf(uid, sizeof uid, "%u", (unsigned) geteuid());
        size_t n;

        memcpy(out, "\0AUTH EXTERNAL ", 15);
        n = 15;
        for (int i = 0; i < l; i++)
                n += (size_t) snprintf((char *) out + n, 3, "%02x", (unsigned char) uid[i]);
        memcpy(out + n, "\r\n", 2);
        return n + 2;
}

/* With guid= in the address: AUTH alone, and the server's OK (its id checked)
 * before anything else goes out.  Pipelined with BEGIN and the call, the call
 * reached whatever server answered and was carried out there, while we said
 * we could not connect.  One more round trip, only where guid= is given. */
static int authenticate_apart(wire *w, uint64_t deadline) {
        uint64_t auth_deadline = usec_add(now_usec(), AUTH_TIMEOUT_USEC);
        uint8_t out[64];
        int r;

        if (auth_deadline < deadline)
                deadline = auth_deadline;
        r = wire_send(w, out, auth_line(out), deadline);
        if (r < 0)
                return r;
        r = read_auth_reply(w, deadline);
        if (r < 0)
                return r;
        w->begin_pending = true;
        return 0;
}

static int call_once(wire *w, const char *path, const char *interface, const char *member, const wire_arg *args,
                     size_t n_args, uint64_t timeout_usec, uint32_t *ret, size_t n_ret, char **ret_string,
                     uint32_t *ret_variant_u32) {
        /* A NUL, EXTERNAL with our uid (as hex of its decimal digits) and
         * BEGIN, then the call, in one write: the specification lets a client
         * pipeline them, and it saves a round trip to the server. */
        size_t size = 64 + wire_call_size(path, interface, member, args, n_args) +
                      (w->destination && !w->hello_serial ? wire_call_size(DBUS_PATH, DBUS_INTERFACE, "Hello", NULL, 0) : 0);
        uint64_t deadline = usec_add(now_usec(), timeout_usec ?: SD_BUS_DEFAULT_TIMEOUT_USEC), send_deadline;
        _cleanup_free_ uint8_t *out = NULL;
        size_t n = 0, bad_arg, bad_index;
        uint32_t hello_serial = 0;
        bool hello_refused = false;
        ssize_t k;
        int r;

        (void) set_string(&w->error_name, NULL);
        (void) set_string(&w->error_message, NULL);
        w->unsent = w->cut = false;
        if (n_ret > ELEMENTSOF(((wire_message *) NULL)->u32))
                return -EINVAL;

        out = malloc(size);
        if (!out)
                return -ENOMEM;
        if (!w->authenticated && w->guid[0] && wire_check_utf8(args, n_args, &bad_arg, &bad_index) >= 0) {
                r = authenticate_apart(w, deadline);
                if (r < 0)
                        return r;
        }
        if (!w->authenticated) {
                n = auth_line(out);
                memcpy(out + n, "BEGIN\r\n", 7);
                n += 7;
        } else if (w->begin_pending) {
                memcpy(out, "BEGIN\r\n", 7);
                n = 7;
        }
        if (w->destination && !w->hello_serial) {
                /* A bus takes nothing before Hello(); its reply (our unique
                 * name) and the NameAcquired signal after it are skipped below
                 * as messages that are not the reply awaited.  Sent once it
                 * is sent (a call refused below sends nothing). */
                k = wire_build_call_to(out + n, size - n, ++w->serial, DBUS_SERVICE, DBUS_PATH, DBUS_INTERFACE,
                                       "Hello", NULL, 0);
                if (k < 0)
                        return (int) k;
                hello_serial = w->serial;
                n += (size_t) k;
        }
        k = wire_build_call_to(out + n, size - n, ++w->serial, w->destination, path, interface, member, args,
                               n_args);
        if (k == -EILSEQ && wire_check_utf8(args, n_args, &bad_arg, &bad_index) < 0) {
                /* As libfreezer says it (sd-bus refuses to append such a
                 * string); freezerd's own sd-bus would refuse the message,
                 * with a vaguer error.  Nothing was sent. */
                char msg[64];

                if (args[bad_arg].type == 'R')
                        snprintf(msg, sizeof msg, MESSAGE_REQUEST_NOT_UTF8, bad_index);
                else
                        snprintf(msg, sizeof msg, MESSAGE_PATH_NOT_UTF8);
                if (set_string(&w->error_name, "org.freedesktop.DBus.Error.InvalidArgs") < 0 ||
                    set_string(&w->error_message, msg) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }
        if (k < 0)
                return (int) k;
        /* Not written within the handshake's time either: the server
         * takes nothing, not even our AUTH. */
        send_deadline = w->authenticated ? deadline : usec_add(now_usec(), AUTH_TIMEOUT_USEC);
        r = wire_send(w, out, n + (size_t) k, send_deadline < deadline ? send_deadline : deadline);
        if (r == -ECONNRESET && !w->authenticated) {
                /* Whether the server let us in before it closed: what it
                 * said is in our buffer already (the second is for a peer
                 * that shut its reading side only).  If not, the connection
                 * never was up (freezerd at its limit of connections closes
                 * a new one at once): wire_authenticated() tells. */
                int q = read_auth_reply(w, usec_add(now_usec(), USEC_PER_SEC));
                if (q == -EPERM)
                        return q;
        }
        if (r < 0)
                return r;
        if (hello_serial)
                w->hello_serial = hello_serial;
        w->begin_pending = false;

        if (!w->authenticated) {
                uint64_t auth_deadline = usec_add(now_usec(), AUTH_TIMEOUT_USEC);

                r = read_auth_reply(w, auth_deadline < deadline ? auth_deadline : deadline);
                if (r < 0)
                        return r;
        }

        for (;;) {
                wire_message m;
                ssize_t l = wire_message_length(w->buf, w->len);

                if (l < 0)
                        return (int) l;
                if (l == 0 || (size_t) l > w->len) {
                        r = receive(w, deadline);
                        if (r < 0)
                                return hello_refused ? -EPROTO : r; /* the error names Hello's refusal */
                        continue;
                }
                r = wire_parse_message(w->buf, (size_t) l, &m);
                if (r < 0)
                        return r;
                if (m.type == MSG_ERROR && w->hello_serial && m.reply_serial == w->hello_serial) {
                        /* The bus refused us, or the peer is no bus (freezerd's
                         * private socket answers UnknownObject).  A bus then
                         * drops the call and closes the connection; a peer that
                         * is no bus may serve the call all the same, and then
                         * its answer is the truth of what was done. */
                        if (set_string(&w->error_name, m.error_name) < 0 ||
                            set_string(&w->error_message, m.first_string) < 0)
                                return -ENOMEM;
                        hello_refused = true;
                        consume(w, (size_t) l);
                        continue;
                }
                if (m.type == MSG_METHOD_RETURN && w->hello_serial && m.reply_serial == w->hello_serial)
                        w->hello_answered = true;
                if ((m.type != MSG_METHOD_RETURN && m.type != MSG_ERROR) || m.reply_serial != w->serial) {
                        consume(w, (size_t) l); /* not ours: a signal, or a call we do not serve */
                        continue;
                }
                if (hello_refused) { /* answered after all: Hello's error is not the call's */
                        (void) set_string(&w->error_name, NULL);
                        (void) set_string(&w->error_message, NULL);
                }
                if (m.type == MSG_ERROR) {
                        r = -EIO;
                        if (set_string(&w->error_name, m.error_name) < 0 ||
                            set_string(&w->error_message, m.first_string) < 0)
                                r = -ENOMEM;
                } else if (m.n_u32 < n_ret || (ret_string && !m.variant_string) ||
                           (ret_variant_u32 && !m.has_variant_u32))
                        r = -EBADMSG; /* not the reply this method gives */
                else if (ret_string && !(*ret_string = strdup(m.variant_string)))
                        r = -ENOMEM;
                else {
                        if (ret_variant_u32)
                                *ret_variant_u32 = m.variant_u32;
                        for (size_t i = 0; i < n_ret; i++)
                                ret[i] = m.u32[i];
                        r = 0;
                }
                consume(w, (size_t) l);
                return r;
        }
}

/* r, the failure of a call on w, named where the peer did not name it. */
static int call_failed(wire *w, int r) {
        /* A failure of our own gets the names sd-bus gives it (libfreezer
         * reports the same failure so): callers print an error name and a
         * message for every failure, and --json promises both. */
        if (r < 0 && !w->error_name && r != -ENOMEM) {
                char name[64];

                if (errno_bus_name(-r))
                        snprintf(name, sizeof name, "%s", errno_bus_name(-r));
                else
                        snprintf(name, sizeof name, "System.Error.%s", strerrorname_np(-r) ?: "EIO");
                if (set_string(&w->error_name, name) < 0 || set_string(&w->error_message, strerror(-r)) < 0)
                        return -ENOMEM;
        }
        return r;
}

int wire_call(wire *w, const char *path, const char *interface, const char *member, const wire_arg *args,
              size_t n_args, uint64_t timeout_usec, uint32_t *ret, size_t n_ret) {
        return call_failed(w, call_once(w, path, interface, member, args, n_args, timeout_usec, ret, n_ret, NULL, NULL));
}

/* Properties.Get of a string (ret_string) or a uint32 (ret_u32) property. */
static int get_property(wire *w, const char *path, const char *interface, const char *name, uint64_t timeout_usec,
                        char **ret_string, uint32_t *ret_u32) {
        return call_failed(w, call_once(w, path, "org.freedesktop.DBus.Properties", "Get",
                                        (const wire_arg[]) {WIRE_STRING(interface), WIRE_STRING(name)}, 2,
                                        timeout_usec, NULL, 0, ret_string, ret_u32));
}

int wire_get_string_property(wire *w, const char *path, const char *interface, const char *name,
                             uint64_t timeout_usec, char **ret) {
        *ret = NULL;
        return get_property(w, path, interface, name, timeout_usec, ret, NULL);
}

int wire_get_u32_property(wire *w, const char *path, const char *interface, const char *name,
                          uint64_t timeout_usec, uint32_t *ret) {
        *ret = 0;
        return get_property(w, path, interface, name, timeout_usec, NULL, ret);
}

/* As sd_bus_path_encode(): id as one label, each byte that is not a letter
 * (nor a digit after the first) as "_" and two lowercase hex digits, "_"
 * for an empty id. */
int wire_path_encode(const char *prefix, const char *id, char **ret) {
        size_t n = strlen(prefix);
        char *p = malloc(n + 2 + 3 * strlen(id) + 1), *q;

        if (!p)
                return -ENOMEM;
        memcpy(p, prefix, n);
        q = p + n;
        *q++ = '/';
        if (!*id)
                *q++ = '_';
        for (const char *c = id; *c; c++) {
                if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (c > id && *c >= '0' && *c <= '9'))
                        *q++ = *c;
                else {
                        *q++ = '_';
                        *q++ = "0123456789abcdef"[(uint8_t) *c >> 4];
                        *q++ = "0123456789abcdef"[(uint8_t) *c & 15];
                }
        }
        *q = 0;
        *ret = p;
        return 0;
}
