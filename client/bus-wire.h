/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The D-Bus wire protocol, as much of it as freezectl's freeze and thaw need
 * over freezerd's private socket: one peer-to-peer connection (SASL EXTERNAL),
 * method calls whose arguments are (s, t, t), and their replies.
 *
 * Why not sd-bus, which everything else uses: a freeze is mostly process
 * start-up, and loading libsystemd with the libraries it needs (libgcrypt,
 * libgpg-error, liblzma, libzstd, liblz4, libcap) costs about 2 ms of a 6 ms
 * "freezectl freeze" on machines where page faults are dear (README,
 * "freezectl against the container runtimes"). Every other command, and
 * freeze and thaw over a bus, still go through libfreezer, which loads
 * libsystemd on first use (libsystemd-lazy.c).
 *
 * The messages follow the D-Bus specification ("Message Format"): both byte
 * orders are read, anything malformed is an error (-EBADMSG), and messages
 * other than the reply awaited (a signal, should one come) are skipped.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct wire wire;

/* Connect to the socket at path and authenticate (the first call's bytes
 * follow the handshake in the same write). Negative errno on failure, as
 * connect(2) gives it (-ENOENT, -ECONNREFUSED, ...). */
int wire_open(const char *path, wire **ret);
wire *wire_close(wire *w);

/* Call member(s, t1, t2) on interface at path and wait for the reply, at most
 * timeout_usec (0: 25 s, sd-bus' default). 0 on a method return; on an error
 * reply -EIO, with wire_last_error_name()/_message() set (what callers
 * report); -ETIMEDOUT, -ECONNRESET (the peer closed the connection), -EPERM
 * (authentication refused) or -EBADMSG otherwise. */
int wire_call_stt(wire *w, const char *path, const char *interface, const char *member,
                  const char *s, uint64_t t1, uint64_t t2, uint64_t timeout_usec);
const char *wire_last_error_name(const wire *w);
const char *wire_last_error_message(const wire *w);

/* ---- the pure parts, also for the unit test and the fuzz target ---- */

/* The longest message accepted: the specification's 128 MiB would let a
 * broken peer make us allocate that much for a reply of a few bytes. */
#define WIRE_MESSAGE_MAX (1U << 20)

/* Append a METHOD_CALL with body (s, t, t) to buf (size bytes); its length,
 * or -ENOBUFS, or -EINVAL (a string with a NUL or longer than the protocol
 * allows). */
ssize_t wire_build_call_stt(uint8_t *buf, size_t size, uint32_t serial, const char *path,
                            const char *interface, const char *member, const char *s, uint64_t t1,
                            uint64_t t2);

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
} wire_message;

/* Parse a whole message (len as wire_message_length() gave it); the strings
 * point into buf. 0 or -EBADMSG. */
int wire_parse_message(const uint8_t *buf, size_t len, wire_message *ret);
