/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The D-Bus wire protocol, as much of it as freezectl's freeze, thaw and batch
 * need, over freezerd's private socket (a peer-to-peer connection) or a bus
 * reached by a unix socket (with Hello() first): SASL EXTERNAL, method calls
 * whose arguments are strings, uint64s, booleans and ApplyBatch's requests
 * (a(sb)), and replies made of uint32s (or nothing), or a string or uint32
 * property's value (Properties.Get: freezerd's CgroupRoot, a group's
 * FrozenDescendants).
 *
 * Why not sd-bus, which everything else uses: a freeze is mostly process
 * start-up, and loading libsystemd with the libraries it needs (libgcrypt,
 * libgpg-error, liblzma, libzstd, liblz4, libcap) costs about 2 ms of a 6 ms
 * "freezectl freeze" on machines where page faults are dear (README,
 * "freezectl against the container runtimes"). Every other command, and
 * freeze, thaw and batch over a bus this does not reach (the user bus, tcp:),
 * still go through libfreezer, which loads libsystemd on first use
 * (libsystemd-lazy.c). Grow this file for a new use rather than writing a
 * second one.
 *
 * The messages follow the D-Bus specification ("Message Format"): both byte
 * orders are read, anything malformed is an error (-EBADMSG), and messages
 * other than the reply awaited (a signal, should one come) are skipped.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "freezer.h" /* freezer_request: ApplyBatch's a(sb) */

typedef struct wire wire;

/* Connect to the socket at path, a peer (freezerd's private socket): the
 * handshake is sent with the first call, in the same write. Negative errno on
 * failure, as connect(2) gives it (-ENOENT, -ECONNREFUSED, ...). */
int wire_open(const char *path, wire **ret);

/* Connect to the bus at address (D-Bus address syntax), whose calls go to
 * destination (kept, not copied): the first call's write carries the
 * handshake and Hello() too; but with a guid= in address AUTH goes alone
 * first, and the server's OK must name that id, or the call fails with -EPERM
 * with nothing of it sent.  -EAFNOSUPPORT for an address the wire does
 * not speak (anything but one unix:path= or unix:abstract=: libsystemd's to
 * handle), -EINVAL for a malformed one, else as wire_open(). */
int wire_open_bus(const char *address, const char *destination, wire **ret);
/* The same for the bus on the unix socket at path (no address to parse). */
int wire_open_bus_at(const char *path, const char *destination, wire **ret);
wire *wire_close(wire *w);

/* One argument of a call: its type, and its value. */
typedef struct wire_arg {
        char type; /* 's' string, 't' uint64, 'b' boolean, 'R' requests: a(sb) */
        union {
                const char *s;
                uint64_t t;
                bool b;
                struct {
                        const freezer_request *v;
                        size_t n;
                } requests;
        };
} wire_arg;

#define WIRE_STRING(x) ((wire_arg) {.type = 's', .s = (x)})
#define WIRE_U64(x) ((wire_arg) {.type = 't', .t = (x)})
#define WIRE_BOOL(x) ((wire_arg) {.type = 'b', .b = (x)})
#define WIRE_REQUESTS(x, k) ((wire_arg) {.type = 'R', .requests = {.v = (x), .n = (k)}})

/* Call member(args) on interface at path and wait for the reply, at most
 * timeout_usec (0: 25 s, sd-bus' default). The reply's first n_ret arguments
 * must be uint32s: they are stored in ret (NULL if n_ret is 0), and anything
 * else is -EBADMSG. 0 on a method return; on an error reply -EIO, with
 * wire_last_error_name()/_message() set (what callers report); -EINVAL with
 * them set to InvalidArgs if a string is not valid UTF-8 (nothing is sent,
 * as libfreezer); -EPROTO if the bus answered our Hello() with an error
 * and the call got no answer (the connection closed, or the deadline
 * passed), with Hello's error as the name and message (a peer that is no
 * bus may refuse Hello and serve the call: then the call's answer counts);
 * -ETIMEDOUT, -ECONNRESET (the peer closed the connection),
 * -EPERM (authentication refused) or -EBADMSG otherwise, with the names
 * sd-bus gives those ("org.freedesktop.DBus.Error.Timeout",
 * "org.freedesktop.DBus.Error.Disconnected", ...) and strerror()'s words as
 * the message. */
int wire_call(wire *w, const char *path, const char *interface, const char *member, const wire_arg *args,
              size_t n_args, uint64_t timeout_usec, uint32_t *ret, size_t n_ret);
/* Read the string property name of interface at path (org.freedesktop.DBus.
 * Properties.Get), into *ret (to free); the rest as wire_call(), and -EBADMSG
 * if the reply holds no string. */
int wire_get_string_property(wire *w, const char *path, const char *interface, const char *name,
                             uint64_t timeout_usec, char **ret);
/* The same for a uint32 property (a group's FrozenDescendants, which
 * freezectl's thaw reads), into *ret (0 on failure). */
int wire_get_u32_property(wire *w, const char *path, const char *interface, const char *name,
                          uint64_t timeout_usec, uint32_t *ret);
/* The object path of id below prefix as sd_bus_path_encode() makes it (and
 * freezerd names a group's object so), into *ret (to free); -ENOMEM. */
int wire_path_encode(const char *prefix, const char *id, char **ret);
/* Whether the server accepted our authentication (its OK read, also after
 * the call's write failed): a connection closed before that never was up,
 * and nothing of a call on it was done. */
bool wire_authenticated(const wire *w);
/* On a bus, whether Hello() has not been answered yet: a connection closed
 * then was the bus refusing us (another user's session bus does so after
 * authentication), not the loss of a connection it had let in. */
bool wire_bus_refused(const wire *w);
/* Whether the last call timed out before it was sent whole (a peer that
 * reads nothing, such as a stopped freezerd): the peer never gets it, as
 * the connection is shut if part of it went out. */
bool wire_call_unsent(const wire *w);
/* Whether the peer closed the connection while the last call was written:
 * it never got the call whole (a bus drops a call larger than its
 * max_message_size so, Hello unanswered). */
bool wire_call_cut(const wire *w);
const char *wire_last_error_name(const wire *w);
const char *wire_last_error_message(const wire *w);

/* ---- the pure parts, also for the unit test and the fuzz target ---- */

/* The longest message accepted: the specification's 128 MiB would let a
 * broken peer make us allocate that much for a reply of a few bytes. */
#define WIRE_MESSAGE_MAX (1U << 20)

/* Write a METHOD_CALL with body args to buf (size bytes); its length, or
 * -ENOBUFS, or -EINVAL (serial 0, an interface, member or destination name
 * over the protocol's 255 bytes (an object path has no such bound), an
 * argument of an unknown type, or an array over its 64 MiB), or
 * -EILSEQ (a string that is not valid UTF-8: wire_check_utf8() says which). */
ssize_t wire_build_call(uint8_t *buf, size_t size, uint32_t serial, const char *path, const char *interface,
                        const char *member, const wire_arg *args, size_t n_args);

/* The same with a DESTINATION field (NULL: none), as calls on a bus have. */
ssize_t wire_build_call_to(uint8_t *buf, size_t size, uint32_t serial, const char *destination, const char *path,
                           const char *interface, const char *member, const wire_arg *args, size_t n_args);

/* The socket address of a D-Bus address as wire_open_bus() takes it, its
 * length for connect(2), and the server id its guid= names (32 hex digits
 * and a NUL, "" without one: wire_open_bus() then requires the server's OK
 * to name it, or fails with -EPERM); -EAFNOSUPPORT or -EINVAL as there. */
#define WIRE_GUID_SIZE 33
struct sockaddr_un;
int wire_parse_address(const char *address, struct sockaddr_un *ret, socklen_t *ret_len, char *ret_guid);

/* For an address that wire_parse_address() refuses with -EINVAL, what is
 * wrong with it ("guid=zz is not 32 hex digits"), in buf; NULL for any other. */
const char *wire_address_defect(const char *address, char *buf, size_t size);

/* The most bytes wire_build_call() or wire_build_call_to() need for that call. */
size_t wire_call_size(const char *path, const char *interface, const char *member, const wire_arg *args,
                      size_t n_args);

/* 0 if every string of args is valid UTF-8 as sd-bus takes it (the D-Bus
 * specification's, without noncharacters); else -EILSEQ, with the argument's
 * index in *ret_arg and, for requests, the request's in *ret_index. */
int wire_check_utf8(const wire_arg *args, size_t n_args, size_t *ret_arg, size_t *ret_index);

/* The length of the message at the start of buf once its fixed header (16
 * bytes) is there: 0 if len is shorter, -EBADMSG if it is not a D-Bus message
 * or longer than WIRE_MESSAGE_MAX. */
ssize_t wire_message_length(const uint8_t *buf, size_t len);

typedef struct wire_message {
        uint8_t type;           /* 1 call, 2 method return, 3 error, 4 signal */
        uint32_t serial;
        uint32_t reply_serial;  /* 0 if none */
        const char *error_name; /* pointers into the message, NULL if absent */
        const char *signature;
        const char *first_string; /* the body's first argument, if it is a string */
        const char *variant_string; /* the body's first argument, if it is a variant holding a string
                                     * (a string property's Get) */
        uint32_t variant_u32;     /* the body's first argument, if it is a variant holding a uint32 */
        bool has_variant_u32;
        uint32_t u32[2];          /* the body's leading uint32 arguments, up to 2 */
        unsigned n_u32;
} wire_message;

/* Parse a whole message (len as wire_message_length() gave it); the strings
 * point into buf. 0 or -EBADMSG. */
int wire_parse_message(const uint8_t *buf, size_t len, wire_message *ret);
