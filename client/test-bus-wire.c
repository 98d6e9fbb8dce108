/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * Unit tests of bus-wire.c: the client against a real sd-bus server (a child
 * process serving a socket in a temporary directory, as freezerd serves its
 * private socket), and the parser on messages built by hand. No bus daemon,
 * no cgroups. Exit status 0 if all pass, 1 otherwise.
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-wire.h"
#include "test-bus-server.h"
#include "test-util.h"

#define PATH "/org/freezerd/Freezer1"
#define INTERFACE "org.freezerd.Freezer1.Manager"

/* ---- the server (child process) ---- */

static bool drop_connection;

/* Freeze(s, t, t): what it does depends on s.
 *   /echo...  error test.Echo with message "<s> <t1> <t2>" (shows what arrived)
 *   /ok       an empty method return
 *   /enoent   sd-bus' errno error (org.freedesktop.DBus.Error.FileNotFound)
 *   /signal   a signal first, then the method return
 *   /hang     no reply, ever
 *   /close    the connection is closed without a reply */
static int method_freeze(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *s;
        uint64_t t1, t2;
        int r;

        r = sd_bus_message_read(m, "stt", &s, &t1, &t2);
        if (r < 0)
                return r;
        if (strncmp(s, "/echo", 5) == 0)
                return sd_bus_error_setf(error, "test.Echo", "%s %" PRIu64 " %" PRIu64, s, t1, t2);
        if (streq(s, "/enoent"))
                return sd_bus_reply_method_errno(m, ENOENT, NULL);
        if (streq(s, "/signal")) {
                r = sd_bus_emit_signal(sd_bus_message_get_bus(m), PATH, INTERFACE, "Noise", "s", "not a reply");
                if (r < 0)
                        return r;
                return sd_bus_reply_method_return(m, NULL);
        }
        if (streq(s, "/hang")) {
                sd_bus_message_ref(m); /* held: the reply never goes */
                return 1;
        }
        if (streq(s, "/close")) {
                drop_connection = true;
                return 1;
        }
        return sd_bus_reply_method_return(m, NULL);
}

/* ApplyBatch(a(sb), s, t, t) -> (u, u): the number of requests and of those
 * that freeze; with order "echo" instead the error test.Echo with message
 * "<path>=<0|1> ... <t1> <t2>" (shows what arrived). */
static int method_apply_batch(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *echo = NULL;
        size_t echo_len = 0;
        FILE *f = open_memstream(&echo, &echo_len);
        uint32_t n = 0, frozen = 0;
        const char *path, *order;
        uint64_t t1, t2;
        int freeze, r;

        if (!f)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "(sb)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(sb)", &path, &freeze)) > 0) {
                fprintf(f, "%s=%d ", path, freeze);
                n++;
                frozen += !!freeze;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_read(m, "stt", &order, &t1, &t2);
        fprintf(f, "%" PRIu64 " %" PRIu64, r >= 0 ? t1 : 0, r >= 0 ? t2 : 0);
        fclose(f);
        if (r < 0)
                return r;
        if (streq(order, "echo"))
                return sd_bus_error_setf(error, "test.Echo", "%s", echo);
        return sd_bus_reply_method_return(m, "uu", n, frozen);
}

static int property_get_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", "/sys/fs/cgroup/ö/root");
}

static int property_get_u32(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "u", 7);
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Root", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Count", "u", property_get_u32, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD("Freeze", "stt", "", method_freeze, 0),
        SD_BUS_METHOD("ApplyBatch", "a(sb)stt", "uu", method_apply_batch, 0),
        SD_BUS_SIGNAL("Noise", "s", 0),
        SD_BUS_VTABLE_END,
};

_Noreturn static void serve(int listen_fd) {
        test_bus_serve(listen_fd, PATH, INTERFACE, vtable, &drop_connection);
}

/* ---- the client side ---- */

static char socket_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];

static int call(wire *w, const char *s, uint64_t t1, uint64_t t2, uint64_t timeout_usec) {
        return wire_call(w, PATH, INTERFACE, "Freeze", (const wire_arg[]) {WIRE_STRING(s), WIRE_U64(t1), WIRE_U64(t2)},
                         3, timeout_usec, NULL, 0);
}

static int batch(wire *w, const freezer_request *v, size_t n, const char *order, uint32_t ret[2]) {
        return wire_call(w, PATH, INTERFACE, "ApplyBatch",
                         (const wire_arg[]) {WIRE_REQUESTS(v, n), WIRE_STRING(order), WIRE_U64(7), WIRE_U64(8)}, 4, 0,
                         ret, 2);
}

static void test_batches(void) {
        static const freezer_request some[] = {
                {"/a", true}, {"/bb", false}, {"/ccc", true}, {"/dddd", true}, {"/eeeee", false},
                {"/ffffff", false}, {"/ggggggg", true}, {"/hhhhhhhh", true}, {"/ö/€/𝄞", true},
        };
        freezer_request *many = NULL;
        uint32_t reply[2] = {};
        char (*paths)[16] = NULL;
        wire *w = NULL;

        CHECK_R(wire_open(socket_path, &w), 0);
        if (!w)
                return;

        /* Every path length modulo 8 (the structs' padding), UTF-8; the reply's (u, u). */
        CHECK_R(batch(w, some, ELEMENTSOF(some), "auto", reply), 0);
        CHECK_R(reply[0], ELEMENTSOF(some));
        CHECK_R(reply[1], 6);
        CHECK_R(batch(w, some, 3, "echo", reply), -EIO);
        CHECK_STR(wire_last_error_name(w), "test.Echo");
        CHECK_STR(wire_last_error_message(w), "/a=1 /bb=0 /ccc=1 7 8");

        /* No requests: an empty array, still padded to its first struct. */
        CHECK_R(batch(w, NULL, 0, "auto", reply), 0);
        CHECK_R(reply[0], 0);
        CHECK_R(batch(w, NULL, 0, "echo", reply), -EIO);
        CHECK_STR(wire_last_error_message(w), "7 8");

        /* 10,000 requests: a 250 kB message. */
        many = calloc(10000, sizeof *many);
        paths = calloc(10000, sizeof *paths);
        if (many && paths) {
                for (size_t i = 0; i < 10000; i++) {
                        snprintf(paths[i], sizeof paths[i], "/g%zu", i);
                        many[i] = (freezer_request) {paths[i], i % 3 == 0};
                }
                CHECK_R(batch(w, many, 10000, "auto", reply), 0);
                CHECK_R(reply[0], 10000);
                CHECK_R(reply[1], 3334);
        }

        /* Not valid UTF-8: refused here, with libfreezer's words, and nothing sent. */
        freezer_request bad[] = {{"/ok", true}, {"/\xc0\xaf", true}};
        CHECK_R(batch(w, bad, 2, "auto", reply), -EINVAL);
        CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.InvalidArgs");
        CHECK_STR(wire_last_error_message(w), "Request 1: the path is not valid UTF-8");
        CHECK_R(call(w, "/\xff", 0, 0, 0), -EINVAL);
        CHECK_STR(wire_last_error_message(w), "The path is not valid UTF-8");
        CHECK_R(call(w, "/ok", 0, 0, 0), 0); /* the connection goes on */

        /* A reply without the uint32s asked for (Freeze returns nothing). */
        CHECK_R(wire_call(w, PATH, INTERFACE, "Freeze", (const wire_arg[]) {WIRE_STRING("/ok"), WIRE_U64(0), WIRE_U64(0)},
                          3, 0, reply, 2),
                -EBADMSG);

        free(many);
        free(paths);
        wire_close(w);
}

static void test_utf8(void) {
        static const struct {
                const char *s;
                bool valid;
        } cases[] = {
                {"", true},          {"/plain", true},      {"/é", true},          {"/€", true},
                {"/𝄞", true},        {"/\xc3", false},      {"/\xe2\x82", false},  {"/\xc0\xaf", false},
                {"/\xe0\x80\xaf", false}, {"/\xed\xa0\x80", false}, {"/\xf4\x90\x80\x80", false},
                {"/\xff", false},     {"/\x80", false},      {"/\xf4\x8f\xbf\xbd", true},
                /* Noncharacters, which sd-bus refuses: U+FFFF, U+FFFE, U+FDD0, U+1FFFE, U+10FFFF. */
                {"/\xef\xbf\xbf", false}, {"/\xef\xbf\xbe", false}, {"/\xef\xb7\x90", false},
                {"/\xf0\x9f\xbf\xbe", false}, {"/\xf4\x8f\xbf\xbf", false}, {"/\xef\xb7\xb0", true},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                wire_arg a = WIRE_STRING(cases[i].s);
                size_t arg = 99, index = 99;

                CHECK_R(wire_check_utf8(&a, 1, &arg, &index), cases[i].valid ? 0 : -EILSEQ);
                if (!cases[i].valid)
                        CHECK(arg == 0 && index == 0);
        }
}

static void test_calls(void) {
        _cleanup_free_ char *long_path = NULL, *expected = NULL;
        wire *w = NULL;

        CHECK_R(wire_open(socket_path, &w), 0);
        if (!w)
                return;

        /* The arguments arrive as sent, the handshake once for all calls. */
        CHECK_R(call(w, "/echo", 5, UINT64_MAX, 0), -EIO);
        CHECK_STR(wire_last_error_name(w), "test.Echo");
        CHECK_STR(wire_last_error_message(w), "/echo 5 18446744073709551615");
        CHECK_R(call(w, "/ok", 0, 0, 0), 0);
        CHECK(!wire_last_error_name(w) && !wire_last_error_message(w));

        /* A string property (freezectl reads CgroupRoot so); not a string,
         * or none, is said. */
        {
                _cleanup_free_ char *root = NULL, *none = NULL, *count = NULL;

                CHECK_R(wire_get_string_property(w, PATH, INTERFACE, "Root", 0, &root), 0);
                CHECK_STR(root, "/sys/fs/cgroup/ö/root");
                CHECK_R(wire_get_string_property(w, PATH, INTERFACE, "Count", 0, &count), -EBADMSG);
                CHECK(!count);
                CHECK_R(wire_get_string_property(w, PATH, INTERFACE, "Nope", 0, &none), -EIO);
                CHECK(!none);
                CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.UnknownProperty");
                CHECK_R(call(w, "/ok", 0, 0, 0), 0);
        }

        /* A uint32 property (freezectl's thaw reads FrozenDescendants so);
         * not a uint32, or none, is said. */
        {
                uint32_t count = 1;

                CHECK_R(wire_get_u32_property(w, PATH, INTERFACE, "Count", 0, &count), 0);
                CHECK(count == 7);
                CHECK_R(wire_get_u32_property(w, PATH, INTERFACE, "Root", 0, &count), -EBADMSG);
                CHECK(count == 0);
                CHECK_R(wire_get_u32_property(w, PATH, INTERFACE, "Nope", 0, &count), -EIO);
                CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.UnknownProperty");
                CHECK_R(call(w, "/ok", 0, 0, 0), 0);
        }

        /* An object path over 255 bytes (a group's, whose whole path is one
         * escaped label: "/" is "_2f") goes out, and sd-bus takes it: it
         * answers that it has no such object, naming it (the wire refused to
         * send it, -EINVAL, so freezectl's thaw said nothing of the groups
         * frozen below a long path). */
        {
                _cleanup_free_ char *object = NULL, *want = NULL;
                char id[301];
                uint32_t count = 1;

                for (size_t i = 0; i < sizeof id - 1; i++)
                        id[i] = i % 100 == 0 ? '/' : 'y';
                id[sizeof id - 1] = 0;
                CHECK_R(wire_path_encode(PATH "/group", id, &object), 0);
                CHECK(object && strlen(object) > 300);
                CHECK_R(wire_get_u32_property(w, object, INTERFACE, "Count", 0, &count), -EIO);
                CHECK(count == 0);
                CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.UnknownObject");
                CHECK(asprintf(&want, "Unknown object '%s'.", object) > 0);
                CHECK_STR(wire_last_error_message(w), want);
                CHECK_R(call(w, "/ok", 0, 0, 0), 0);
        }

        /* Strings of every length modulo 8 (padding), UTF-8, and a long one. */
        for (size_t n = 0; n < 9; n++) {
                char s[32] = "/echo", msg[64];
                memset(s + 5, 'x', n);
                s[5 + n] = 0;
                snprintf(msg, sizeof msg, "%s 1 2", s);
                CHECK_R(call(w, s, 1, 2, 0), -EIO);
                CHECK_STR(wire_last_error_message(w), msg);
        }
        CHECK_R(call(w, "/echo/ö/€", 3, 4, 0), -EIO);
        CHECK_STR(wire_last_error_message(w), "/echo/ö/€ 3 4");
        long_path = malloc(70000);
        expected = malloc(70100);
        if (long_path && expected) {
                memcpy(long_path, "/echo", 5);
                memset(long_path + 5, 'y', 70000 - 6);
                long_path[70000 - 1] = 0;
                snprintf(expected, 70100, "%s 7 8", long_path);
                CHECK_R(call(w, long_path, 7, 8, 0), -EIO);
                CHECK_STR(wire_last_error_message(w), expected);
        }

        /* An error sd-bus made of an errno, with its message. */
        CHECK_R(call(w, "/enoent", 0, 0, 0), -EIO);
        CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.FileNotFound");
        CHECK(wire_last_error_message(w) && strlen(wire_last_error_message(w)) > 0);

        /* A signal before the reply is skipped. */
        CHECK_R(call(w, "/signal", 0, 0, 0), 0);
        CHECK_R(call(w, "/ok", 0, 0, 0), 0);

        /* No reply: the timeout. */
        CHECK_R(call(w, "/hang", 0, 0, 200 * USEC_PER_MSEC), -ETIMEDOUT);
        /* A failure of our own is named as sd-bus names it, with its words. */
        CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.Timeout");
        CHECK_STR(wire_last_error_message(w), strerror(ETIMEDOUT));
        w = wire_close(w);

        /* The server closes the connection instead of replying. */
        CHECK_R(wire_open(socket_path, &w), 0);
        if (w) {
                CHECK_R(call(w, "/close", 0, 0, 5 * USEC_PER_SEC), -ECONNRESET);
                CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.Disconnected");
                CHECK_STR(wire_last_error_message(w), strerror(ECONNRESET));
        }
        w = wire_close(w);

        /* A bus address naming another server's id: refused at its OK, before
         * anything is read as a reply. */
        {
                char address[sizeof "unix:path=" + 108 + sizeof ",guid=" + 32];

                snprintf(address, sizeof address, "unix:path=%s,guid=00000000000000000000000000000000", socket_path);
                CHECK_R(wire_open_bus(address, "org.example.Nobody", &w), 0);
                if (w) {
                        CHECK_R(call(w, "/ok", 0, 0, 5 * USEC_PER_SEC), -EPERM);
                        CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.AccessDenied");
                }
                w = wire_close(w);
        }

        /* On a bus Hello() goes first, with the first call that is sent: one
         * refused before sending (not UTF-8) sends neither, and the next one
         * sends both.  This server is no bus: it refuses Hello() (an object
         * it lacks) and serves the call all the same, whose answer counts;
         * so does the next call's.  Where the connection closes instead of
         * an answer, Hello's refusal is the error (-EPROTO). */
        {
                char address[sizeof "unix:path=" + 108];

                snprintf(address, sizeof address, "unix:path=%s", socket_path);
                CHECK_R(wire_open_bus(address, "org.example.Nobody", &w), 0);
                if (w) {
                        CHECK_R(call(w, "/\xff", 0, 0, 0), -EINVAL);
                        CHECK_R(call(w, "/ok", 0, 0, 5 * USEC_PER_SEC), 0);
                        CHECK(!wire_last_error_name(w) && !wire_last_error_message(w));
                        CHECK_R(call(w, "/echo", 1, 2, 5 * USEC_PER_SEC), -EIO);
                        CHECK_STR(wire_last_error_name(w), "test.Echo");
                }
                w = wire_close(w);
                CHECK_R(wire_open_bus(address, "org.example.Nobody", &w), 0);
                if (w) {
                        CHECK_R(call(w, "/echo", 1, 2, 5 * USEC_PER_SEC), -EIO);
                        CHECK_STR(wire_last_error_name(w), "test.Echo"); /* the call's error, not Hello's */
                }
                w = wire_close(w);
                CHECK_R(wire_open_bus(address, "org.example.Nobody", &w), 0);
                if (w) {
                        CHECK_R(call(w, "/close", 0, 0, 5 * USEC_PER_SEC), -EPROTO);
                        CHECK_STR(wire_last_error_name(w), "org.freedesktop.DBus.Error.UnknownObject");
                }
                w = wire_close(w);
        }

        /* Nobody listening. */
        CHECK_R(wire_open("/nonexistent/freezerd/private", &w), -ENOENT);
}

/* ---- the parser on messages made by hand ---- */

typedef struct msgbuf {
        uint8_t b[512];
        size_t n;
        bool big;
        size_t fields_end, body_start;
} msgbuf;

static void pad_to(msgbuf *m, size_t a) {
        while (m->n % a)
                m->b[m->n++] = 0;
}

static void put_u32(msgbuf *m, uint32_t v) {
        pad_to(m, 4);
        for (int i = 0; i < 4; i++)
                m->b[m->n++] = (uint8_t) (m->big ? v >> (24 - 8 * i) : v >> (8 * i));
}

static void put_str(msgbuf *m, const char *s) {
        put_u32(m, (uint32_t) strlen(s));
        memcpy(m->b + m->n, s, strlen(s) + 1);
        m->n += strlen(s) + 1;
}

static void put_field(msgbuf *m, uint8_t code, const char *sig) {
        pad_to(m, 8);
        m->b[m->n++] = code;
        m->b[m->n++] = (uint8_t) strlen(sig);
        memcpy(m->b + m->n, sig, strlen(sig) + 1);
        m->n += strlen(sig) + 1;
}

/* A reply to serial 7 (type 2 method return, 3 error, with error_name), in
 * either byte order, up to the start of its body of signature sig. */
static void begin_reply(msgbuf *m, bool big, uint8_t type, uint32_t serial, const char *error_name, const char *sig) {
        *m = (msgbuf) {.big = big};
        m->b[0] = big ? 'B' : 'l';
        m->b[1] = type;
        m->b[3] = 1;
        m->n = 4;
        put_u32(m, 0); /* body length, set by end_message() */
        put_u32(m, serial);
        put_u32(m, 0); /* length of the field array, likewise */
        if (error_name) {
                put_field(m, 4, "s");
                put_str(m, error_name);
        }
        put_field(m, 5, "u");
        put_u32(m, 7);
        put_field(m, 8, "g");
        m->b[m->n++] = (uint8_t) strlen(sig);
        memcpy(m->b + m->n, sig, strlen(sig) + 1);
        m->n += strlen(sig) + 1;
        m->fields_end = m->n;
        pad_to(m, 8);
        m->body_start = m->n;
}

/* Set the lengths in the fixed header; the message's length. */
static size_t end_message(msgbuf *m) {
        msgbuf fix = {.big = m->big};

        put_u32(&fix, (uint32_t) (m->n - m->body_start));
        put_u32(&fix, (uint32_t) (m->fields_end - 16));
        memcpy(m->b + 4, fix.b, 4);
        memcpy(m->b + 12, fix.b + 4, 4);
        return m->n;
}

/* An error reply (to serial 7) with name and message, in either byte order. */
static size_t make_error(msgbuf *m, bool big, const char *name, const char *message) {
        begin_reply(m, big, 3, 42, name, "s");
        put_str(m, message);
        return end_message(m);
}

/* A name of n letters (static: one at a time). */
static const char *long_name(size_t n) {
        static char buf[512];

        memset(buf, 'a', n);
        buf[n] = 0;
        return buf;
}

/* wire_path_encode() names a group's object as freezerd does (sd-bus'). */
static void test_path_encode(void) {
        static const char *const ids[] = {"", "/", "/pods/a", "/a-b.c/d_e", "/1/x2", "9", "/ö", "/sp ace"};

        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                _cleanup_free_ char *ours = NULL, *theirs = NULL;

                CHECK_R(wire_path_encode("/org/freezerd/Freezer1/group", ids[i], &ours), 0);
                CHECK_R(sd_bus_path_encode("/org/freezerd/Freezer1/group", ids[i], &theirs), 0);
                CHECK_STR(ours, theirs);
        }
}

static void test_address(void) {
        char guid[WIRE_GUID_SIZE];
        struct sockaddr_un sa;
        socklen_t len;

        CHECK_R(wire_parse_address("unix:path=/run/dbus/system_bus_socket", &sa, &len, guid), 0);
        CHECK_STR(sa.sun_path, "/run/dbus/system_bus_socket");
        CHECK_R(len, offsetof(struct sockaddr_un, sun_path) + strlen("/run/dbus/system_bus_socket") + 1);
        /* guid= is for checking the server, %-escapes are bytes. */
        CHECK_R(wire_parse_address("unix:guid=0123456789abcdef0123456789abcdef,path=/tmp/a%2cb%3D", &sa, &len, guid), 0);
        CHECK_STR(sa.sun_path, "/tmp/a,b=");
        CHECK_STR(guid, "0123456789abcdef0123456789abcdef");
        CHECK_R(wire_parse_address("unix:path=/x", &sa, &len, guid), 0);
        CHECK_STR(guid, "");
        CHECK_R(wire_parse_address("unix:path=/x,guid=0123", &sa, &len, guid), -EINVAL);
        CHECK_R(wire_parse_address("unix:path=/x,guid=0123456789abcdef0123456789abcdeg", &sa, &len, guid), -EINVAL);
        /* What is wrong, for freezectl to say. */
        char why[200];
        CHECK_STR(wire_address_defect("unix:path=/x,guid=0123", why, sizeof why) ?: "(null)",
                  "guid=0123 is not 32 hex digits");
        CHECK_STR(wire_address_defect("unix:path=/x%2", why, sizeof why) ?: "(null)",
                  "\"%2\" is no %-escape of two hex digits");
        /* The bad escape as far as its value goes, not into the next key. */
        CHECK_STR(wire_address_defect("unix:path=/x%2,guid=0123456789abcdef0123456789abcdef", why, sizeof why)
                          ?: "(null)",
                  "\"%2\" is no %-escape of two hex digits");
        CHECK_STR(wire_address_defect("unix:path=/x%,guid=0123456789abcdef0123456789abcdef", why, sizeof why)
                          ?: "(null)",
                  "\"%\" is no %-escape of two hex digits");
        CHECK_STR(wire_address_defect("unix:path=/x%zz,guid=0123456789abcdef0123456789abcdef", why, sizeof why)
                          ?: "(null)",
                  "\"%zz\" is no %-escape of two hex digits");
        CHECK(!wire_address_defect("unix:path=/x", why, sizeof why));
        CHECK(!wire_address_defect("tcp:host=localhost,port=1", why, sizeof why));
        CHECK_R(wire_parse_address("unix:abstract=/tmp/dbus-x", &sa, &len, guid), 0);
        CHECK(sa.sun_path[0] == 0 && memcmp(sa.sun_path + 1, "/tmp/dbus-x", 11) == 0);
        CHECK_R(len, offsetof(struct sockaddr_un, sun_path) + 1 + 11); /* no NUL after an abstract name */
        static const struct {
                const char *address;
                int r;
        } refused[] = {
                /* What libsystemd is left to do. */
                {"tcp:host=localhost,port=1234", -EAFNOSUPPORT},
                {"unix:path=/a;unix:path=/b", -EAFNOSUPPORT},
                {"unix:tmpdir=/tmp", -EAFNOSUPPORT},
                {"unixexec:path=/bin/sh", -EAFNOSUPPORT},
                {"unix:guid=0123456789abcdef0123456789abcdef", -EAFNOSUPPORT},
                /* Malformed. */
                {"unix:path", -EINVAL},
                {"unix:path=", -EINVAL},
                {"unix:path=/a,path=/b", -EINVAL},
                {"unix:path=/a%2", -EINVAL},
                {"unix:path=/a%zz", -EINVAL},
                {"unix:path=/a%00b", -EINVAL},
                {"unix:abstract=", -EINVAL},
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                CHECK_R(wire_parse_address(refused[i].address, &sa, &len, guid), refused[i].r);
        {
                char a[600];

                snprintf(a, sizeof a, "unix:path=/%s", long_name(107)); /* 108 bytes and a NUL: too long */
                CHECK_R(wire_parse_address(a, &sa, &len, guid), -EINVAL);
                snprintf(a, sizeof a, "unix:path=/%s", long_name(106));
                CHECK_R(wire_parse_address(a, &sa, &len, guid), 0);
        }
}

static void test_parse(void) {
        uint8_t call_buf[1024];
        wire_message msg;
        msgbuf m;
        ssize_t n;

        for (int big = 0; big <= 1; big++) {
                size_t len = make_error(&m, big, "org.freezerd.Freezer1.Error.Timeout", "took too long");

                CHECK_R(wire_message_length(m.b, 15), 0);
                CHECK_R(wire_message_length(m.b, len), (long) len);
                CHECK_R(wire_parse_message(m.b, len, &msg), 0);
                CHECK_R(msg.type, 3);
                CHECK_R(msg.serial, 42);
                CHECK_R(msg.reply_serial, 7);
                CHECK_STR(msg.error_name, "org.freezerd.Freezer1.Error.Timeout");
                CHECK_STR(msg.signature, "s");
                CHECK_STR(msg.first_string, "took too long");

                /* Cut short, or one byte more: not a message of that length. */
                CHECK_R(wire_parse_message(m.b, len - 1, &msg), -EBADMSG);
                m.b[len] = 0;
                CHECK_R(wire_parse_message(m.b, len + 1, &msg), -EBADMSG);
        }

        /* Not D-Bus, another protocol version, a huge length. */
        make_error(&m, false, "a.B", "c");
        m.b[0] = 'x';
        CHECK_R(wire_message_length(m.b, m.n), -EBADMSG);
        make_error(&m, false, "a.B", "c");
        m.b[3] = 2;
        CHECK_R(wire_message_length(m.b, m.n), -EBADMSG);
        make_error(&m, false, "a.B", "c");
        memset(m.b + 4, 0xff, 4);
        CHECK_R(wire_message_length(m.b, m.n), -EBADMSG);

        /* A string without its NUL, non-zero padding, an error without a name's field type. */
        make_error(&m, false, "a.B", "c");
        m.b[m.n - 1] = 'x';
        CHECK_R(wire_parse_message(m.b, m.n, &msg), -EBADMSG);
        make_error(&m, false, "a.B", "c");
        m.b[16 + 8 + 4] = 1; /* the padding after "a.B\0" */
        CHECK_R(wire_parse_message(m.b, m.n, &msg), -EBADMSG);
        make_error(&m, false, "a.B", "c");
        m.b[16 + 2] = 'u'; /* ERROR_NAME typed as a uint32 */
        CHECK_R(wire_parse_message(m.b, m.n, &msg), -EBADMSG);

        /* A call we build parses back, within the size said, and does not fit where it cannot. */
        const wire_arg stt[] = {WIRE_STRING("/a/b"), WIRE_U64(1), WIRE_U64(2)};
        n = wire_build_call(call_buf, sizeof call_buf, 9, PATH, INTERFACE, "Thaw", stt, 3);
        CHECK(n > 0 && (size_t) n <= wire_call_size(PATH, INTERFACE, "Thaw", stt, 3));
        if (n > 0) {
                CHECK_R(wire_message_length(call_buf, (size_t) n), n);
                CHECK_R(wire_parse_message(call_buf, (size_t) n, &msg), 0);
                CHECK_R(msg.type, 1);
                CHECK_R(msg.serial, 9);
                CHECK_STR(msg.signature, "stt");
                CHECK_STR(msg.first_string, "/a/b");
        }
        CHECK_R(wire_build_call(call_buf, 100, 9, PATH, INTERFACE, "Thaw", stt, 3), -ENOBUFS);
        CHECK_R(wire_build_call(call_buf, sizeof call_buf, 0, PATH, INTERFACE, "Thaw", stt, 3), -EINVAL);
        CHECK_R(wire_build_call(call_buf, sizeof call_buf, 9, PATH, INTERFACE, "Thaw",
                                (const wire_arg[]) {{.type = 'x'}}, 1), -EINVAL);
        CHECK_R(wire_build_call(call_buf, sizeof call_buf, 9, PATH, INTERFACE, "Thaw",
                                (const wire_arg[]) {WIRE_STRING("/\xff")}, 1), -EILSEQ);

        /* On a bus a call names its destination: field 6, a string. */
        n = wire_build_call_to(call_buf, sizeof call_buf, 9, "org.freezerd.Freezer1", PATH, INTERFACE, "Thaw", stt, 3);
        CHECK(n > 0 && (size_t) n <= wire_call_size(PATH, INTERFACE, "Thaw", stt, 3));
        if (n > 0) {
                static const char field[] = "\6\1s\0\25\0\0\0org.freezerd.Freezer1";

                CHECK_R(wire_parse_message(call_buf, (size_t) n, &msg), 0);
                CHECK_STR(msg.signature, "stt");
                CHECK(memmem(call_buf, (size_t) n, field, sizeof field) != NULL);
        }
        CHECK_R(wire_build_call_to(call_buf, sizeof call_buf, 9, long_name(256), PATH, INTERFACE, "Thaw", stt, 3),
                -EINVAL);
        /* An object path has no 255-byte bound: 400 bytes go out whole. */
        {
                char object[401] = "/";

                memset(object + 1, 'a', sizeof object - 2);
                object[sizeof object - 1] = 0;
                n = wire_build_call(call_buf, sizeof call_buf, 9, object, INTERFACE, "Thaw", stt, 3);
                CHECK(n > 0 && (size_t) n <= wire_call_size(object, INTERFACE, "Thaw", stt, 3));
                if (n > 0) {
                        CHECK_R(wire_parse_message(call_buf, (size_t) n, &msg), 0);
                        CHECK(memmem(call_buf, (size_t) n, object, sizeof object) != NULL);
                }
        }

        static const freezer_request two[] = {{"/x", true}, {"/yy", false}};
        const wire_arg batch_args[] = {WIRE_REQUESTS(two, 2), WIRE_STRING("auto"), WIRE_U64(0), WIRE_BOOL(true)};
        n = wire_build_call(call_buf, sizeof call_buf, 10, PATH, INTERFACE, "ApplyBatch", batch_args, 4);
        CHECK(n > 0 && (size_t) n <= wire_call_size(PATH, INTERFACE, "ApplyBatch", batch_args, 4));
        if (n > 0) {
                CHECK_R(wire_parse_message(call_buf, (size_t) n, &msg), 0);
                CHECK_STR(msg.signature, "a(sb)stb");
        }

        /* A method return of (u, u), in either byte order, gives both numbers. */
        for (int big = 0; big <= 1; big++) {
                begin_reply(&m, big, 2, 43, NULL, "uu");
                put_u32(&m, 123456);
                put_u32(&m, 7);
                end_message(&m);
                CHECK_R(wire_parse_message(m.b, m.n, &msg), 0);
                CHECK(msg.n_u32 == 2 && msg.u32[0] == 123456 && msg.u32[1] == 7);
        }
}


/* A peer that takes nothing (a stopped freezerd: the kernel queues what the
 * socket buffer holds, then the writer waits) gets a call larger than that
 * buffer: the call still ends at its timeout, as libfreezer's does.  It used
 * to wait in send() for ever.  The call runs in a child, so that the old
 * behaviour fails the test instead of hanging it. */
static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static void test_send_stall(const char *dir) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t n = 20000;
        _cleanup_free_ freezer_request *v = calloc(n, sizeof *v);
        char path[200];
        int fd, status = -1;
        pid_t pid;

        snprintf(sa.sun_path, sizeof sa.sun_path, "%s/stalled", dir);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof sa) >= 0 && listen(fd, 8) >= 0);
        CHECK(v);
        if (fd < 0 || !v)
                return;
        memset(path, 'x', sizeof path - 1);
        path[0] = '/';
        path[sizeof path - 1] = 0;
        for (size_t i = 0; i < n; i++)
                v[i] = (freezer_request) {path, true};

        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                wire *w = NULL;
                uint64_t start = mono_usec();
                int r;

                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (wire_open(sa.sun_path, &w) < 0)
                        _exit(2);
                r = wire_call(w, PATH, INTERFACE, "ApplyBatch",
                              (const wire_arg[]) {WIRE_REQUESTS(v, n), WIRE_STRING("auto"), WIRE_U64(0), WIRE_U64(0)},
                              4, 300 * USEC_PER_MSEC, (uint32_t[2]) {}, 2);
                if (r != -ETIMEDOUT)
                        _exit(3);
                if (!wire_last_error_name(w) || strcmp(wire_last_error_name(w), "org.freedesktop.DBus.Error.Timeout"))
                        _exit(4);
                _exit(mono_usec() - start < 3 * USEC_PER_SEC ? 0 : 5);
        }
        for (uint64_t deadline = mono_usec() + 10 * USEC_PER_SEC; pid > 0 && mono_usec() < deadline;) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                        break;
                (void) usleep(10000);
                status = -1;
        }
        if (pid > 0 && status == -1) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                fprintf(stderr, "a call to a peer that reads nothing did not end at its timeout\n");
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(fd);
        unlink(sa.sun_path);
}

int main(void) {
        char dir[] = "/tmp/test-bus-wire-XXXXXX";
        pid_t pid = test_serve_fork(dir, socket_path, sizeof socket_path, serve);
        int status;

        if (pid < 0)
                return 1;
        test_calls();
        test_batches();
        test_utf8();
        test_address();
        test_path_encode();
        test_parse();
        test_send_stall(dir);

        kill(pid, SIGKILL);
        (void) waitpid(pid, &status, 0);
        unlink(socket_path);
        rmdir(dir);

        return test_summary("test-bus-wire");
}
