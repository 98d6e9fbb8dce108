/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client-util.h"
#include "config-build.h"
#include "freezer.h"

#define PROGRAM "freezectl"

#define EXIT_USAGE 2

typedef enum bus_kind {
        BUS_SYSTEM,
        BUS_USER,
        BUS_ADDRESS,
} bus_kind;

static bus_kind arg_bus = BUS_SYSTEM;
static const char *arg_address = NULL;
static bool arg_json = false;
static uint64_t arg_timeout_usec = 0;
static bool arg_timeout_set = false;
static bool arg_no_wait = false;
static bool arg_rollback = false;

static void help(void) {
        printf("%1$s [OPTIONS...] COMMAND [ARGS...]\n"
               "\n"
               "Freeze, thaw and inspect cgroups through freezerd (org.freezerd.Freezer1).\n"
               "\n"
               "Commands:\n"
               "  freeze PATH...       Freeze each group in turn; wait until the kernel reports\n"
               "                       it frozen\n"
               "  thaw PATH...         Thaw each group in turn; wait until the kernel reports\n"
               "                       it running. Fails if an ancestor still freezes it (the\n"
               "                       group's own freeze flag is cleared nevertheless)\n"
               "  status [PATH]        Show the properties of one group (default: \"/\")\n"
               "  list                 List the tracked groups with their state\n"
               "  tree [PATH]          Show the tracked groups below PATH (default: all) as a\n"
               "                       tree\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help and exit\n"
               "     --version         Show the version and exit\n"
               "     --system          Talk to freezerd on the system bus (default)\n"
               "     --user            Talk to freezerd on the user's session bus\n"
               "     --address=ADDR    Talk to freezerd on the D-Bus bus at ADDR, e.g.\n"
               "                       unix:path=/run/dbus/system_bus_socket\n"
               "     --json            Print JSON on standard output instead of text\n"
               "     --timeout=DURATION\n"
               "                       freeze, thaw: how long the daemon waits for the kernel\n"
               "                       (default, and 0: the daemon's DefaultTimeoutUSec)\n"
               "     --no-wait         freeze, thaw: return as soon as cgroup.freeze is\n"
               "                       written, without waiting for the kernel\n"
               "     --rollback        freeze, thaw: on timeout write the previous\n"
               "                       cgroup.freeze value back before failing\n"
               "\n"
               "PATH names a cgroup relative to freezerd's cgroup root: \"/\", \"/pods/a\".\n"
               "status and tree with a PATH make freezerd track the group's subtree if it\n"
               "does not yet.\n"
               "Options may be given before or after the command; \"--\" ends the options,\n"
               "so that paths starting with \"-\" can be given.\n"
               "DURATION is a number, optionally with a fraction, and a unit: us, ms, s, min\n"
               "(or m), h; a number without a unit means seconds: \"250ms\", \"1.5s\", \"2min\".\n"
               "\n"
               "freeze and thaw handle the paths in the order given and stop at the first\n"
               "failure: the paths after it are left alone. They print nothing on success\n"
               "(unless --json is given). Errors go to standard error as\n"
               "  %1$s: cannot freeze /pods/a: Timeout: <message from freezerd>\n"
               "\n"
               "JSON output (--json):\n"
               "  freeze, thaw  an array with one {\"path\", \"result\"} object per path handled;\n"
               "                \"result\" is \"done\", or \"failed\" with \"error\" and \"message\"\n"
               "  status        {\"path\", \"state\", \"freeze\", \"frozen\", \"populated\",\n"
               "                 \"descendants\", \"frozen_descendants\", \"frozen_usec\"}\n"
               "  list          an array of {\"path\", \"object\", \"state\"}\n"
               "  tree          {\"path\", \"state\", \"children\": [...]}, nested; \"state\" is\n"
               "                null for groups that are not tracked\n"
               "\n"
               "Exit status:\n"
               "  0  success\n"
               "  1  failure: freezerd refused or failed a request, or could not be reached\n"
               "  2  usage error\n"
               "\n"
               "Examples:\n"
               "  %1$s freeze /pods/a /pods/b --timeout=5s\n"
               "  %1$s thaw --no-wait /pods/a\n"
               "  %1$s status /pods/a\n"
               "  %1$s --json list\n"
               "  %1$s tree /pods\n"
               "  %1$s freeze -- -odd-name\n",
               PROGRAM);
}

_printf_(1, 2)
static int usage_error(const char *fmt, ...) {
        va_list ap;

        fputs(PROGRAM ": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (see --help)\n", stderr);
        return -EINVAL;
}

/* Report a failed library call: "freezectl: <what>: <Error>: <message>". */
_printf_(3, 4)
static void log_failure(freezer *f, int r, const char *fmt, ...) {
        const char *name, *message, *s;
        va_list ap;

        fputs(PROGRAM ": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);

        name = freezer_last_error_name(f);
        message = freezer_last_error_message(f);

        if (name) {
                if ((s = startswith(name, "org.freezerd.Freezer1.Error.")) ||
                    (s = startswith(name, "org.freedesktop.DBus.Error.")))
                        name = s;
                else if (startswith(name, "System.Error."))
                        name = NULL; /* the message says it all */
        }

        if (name && message)
                fprintf(stderr, ": %s: %s\n", name, message);
        else if (message)
                fprintf(stderr, ": %s\n", message);
        else if (name)
                fprintf(stderr, ": %s\n", name);
        else
                fprintf(stderr, ": %s\n", strerror(-r));
}

/* ---- durations ---- */

static int parse_duration(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "",     USEC_PER_SEC    },
                { "us",   1               },
                { "usec", 1               },
                { "ms",   USEC_PER_MSEC   },
                { "msec", USEC_PER_MSEC   },
                { "s",    USEC_PER_SEC    },
                { "sec",  USEC_PER_SEC    },
                { "m",    USEC_PER_MINUTE },
                { "min",  USEC_PER_MINUTE },
                { "h",    USEC_PER_HOUR   },
                { "hr",   USEC_PER_HOUR   },
        };
        const char *p = s, *frac = NULL;
        size_t n_int = 0, n_frac = 0;
        uint64_t whole = 0, mul = 0, total, m;
        bool overflow = false;

        for (; *p >= '0' && *p <= '9'; p++, n_int++) {
                unsigned d = *p - '0';

                if (whole > (UINT64_MAX - d) / 10)
                        overflow = true;
                else
                        whole = whole * 10 + d;
        }

        if (*p == '.') {
                frac = ++p;
                for (; *p >= '0' && *p <= '9'; p++)
                        n_frac++;
        }

        if (n_int + n_frac == 0)
                return -EINVAL;

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(p, units[i].suffix)) {
                        mul = units[i].usec;
                        break;
                }
        if (mul == 0)
                return -EINVAL;

        if (overflow || whole > UINT64_MAX / mul)
                return -ERANGE;
        total = whole * mul;

        /* The fraction, digit by digit, without floating point; digits below
         * the microsecond are dropped. */
        m = mul;
        for (size_t i = 0; i < n_frac && m >= 10; i++) {
                uint64_t add;

                m /= 10;
                add = (uint64_t) (frac[i] - '0') * m;
                if (total > UINT64_MAX - add)
                        return -ERANGE;
                total += add;
        }

        *ret = total;
        return 0;
}

/* "0", "123us", "1.5ms", "1.234s", "2min 3.5s", "1h 2min 0.5s" */
static char *format_duration(char *buf, size_t size, uint64_t usec) {
        uint64_t h, min, sec, frac, unit;
        const char *suffix;
        int n = 0;

        if (usec == 0) {
                snprintf(buf, size, "0");
                return buf;
        }

        if (usec < USEC_PER_MSEC) {
                snprintf(buf, size, "%" PRIu64 "us", usec);
                return buf;
        }

        if (usec < USEC_PER_SEC) {
                unit = USEC_PER_MSEC;
                suffix = "ms";
                sec = usec / USEC_PER_MSEC;
                frac = usec % USEC_PER_MSEC;
                h = min = 0;
        } else {
                unit = USEC_PER_SEC;
                suffix = "s";
                h = usec / USEC_PER_HOUR;
                min = usec % USEC_PER_HOUR / USEC_PER_MINUTE;
                sec = usec % USEC_PER_MINUTE / USEC_PER_SEC;
                frac = usec % USEC_PER_SEC;
        }

        if (h > 0)
                n += snprintf(buf + n, size - n, "%" PRIu64 "h ", h);
        if (h > 0 || min > 0)
                n += snprintf(buf + n, size - n, "%" PRIu64 "min ", min);

        if (frac == 0)
                snprintf(buf + n, size - n, "%" PRIu64 "%s", sec, suffix);
        else {
                /* unit is 10^3 or 10^6: print all digits, then drop the
                 * trailing zeros. */
                int width = unit == USEC_PER_SEC ? 6 : 3;
                char digits[8];

                snprintf(digits, sizeof(digits), "%0*" PRIu64, width, frac);
                for (int i = width - 1; i > 0 && digits[i] == '0'; i--)
                        digits[i] = 0;
                snprintf(buf + n, size - n, "%" PRIu64 ".%s%s", sec, digits, suffix);
        }

        return buf;
}

/* ---- output helpers ---- */

static bool getenv_set(const char *name) {
        const char *e = getenv(name);

        return e && *e;
}

/* Like systemd: UTF-8 unless the locale says otherwise. An unset locale (plain
 * "C" without LANG/LC_*) counts as UTF-8 capable. */
static bool is_locale_utf8(void) {
        const char *set;

        set = nl_langinfo(CODESET);
        if (set && streq(set, "UTF-8"))
                return true;

        set = setlocale(LC_CTYPE, NULL);
        if (!set)
                return true;

        return (streq(set, "C") || streq(set, "POSIX")) &&
                !getenv_set("LC_ALL") && !getenv_set("LC_CTYPE") && !getenv_set("LANG");
}

static int print_json(struct json_object *o) {
        const char *s;

        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;

        puts(s);
        return 0;
}

/* Add v to o under key, taking ownership of v in all cases. A NULL v is the
 * failed allocation of a value: use json_object_object_add() for nulls. */
static int json_add(struct json_object *o, const char *key, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Append v to the array a, taking ownership of v in all cases. */
static int json_append(struct json_object *a, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static void log_oom(void) {
        fprintf(stderr, PROGRAM ": out of memory\n");
}

static const char *state_str(freezer_state s) {
        const char *t = freezer_state_to_string(s);

        return t ?: "unknown";
}

/* ---- freeze, thaw ---- */

static int verb_freeze_thaw(freezer *f, bool freeze, char **paths, size_t n_paths) {
        struct json_object *results = NULL;
        uint64_t flags = 0;
        int ret = 0, r;

        if (arg_no_wait)
                flags |= FREEZER_NO_WAIT;
        if (arg_rollback)
                flags |= FREEZER_ROLLBACK_ON_TIMEOUT;

        if (arg_json) {
                results = json_object_new_array();
                if (!results) {
                        log_oom();
                        return EXIT_FAILURE;
                }
        }

        for (size_t i = 0; i < n_paths; i++) {
                struct json_object *o = NULL;

                if (freeze)
                        r = freezer_freeze(f, paths[i], arg_timeout_usec, flags);
                else
                        r = freezer_thaw(f, paths[i], arg_timeout_usec, flags);
                if (r < 0) {
                        log_failure(f, r, "cannot %s %s", freeze ? "freeze" : "thaw", paths[i]);
                        ret = EXIT_FAILURE;
                }

                if (results) {
                        o = json_object_new_object();
                        if (!o ||
                            json_add(o, "path", json_object_new_string(paths[i])) < 0 ||
                            json_add(o, "result", json_object_new_string(r < 0 ? "failed" : "done")) < 0 ||
                            (r < 0 && freezer_last_error_name(f) &&
                             json_add(o, "error", json_object_new_string(freezer_last_error_name(f))) < 0) ||
                            (r < 0 && freezer_last_error_message(f) &&
                             json_add(o, "message", json_object_new_string(freezer_last_error_message(f))) < 0) ||
                            json_append(results, TAKE_PTR(o)) < 0) {
                                json_object_put(o);
                                log_oom();
                                ret = EXIT_FAILURE;
                                break;
                        }
                }

                if (r < 0)
                        break;
        }

        if (results) {
                if (print_json(results) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                }
                json_object_put(results);
        }

        return ret;
}

/* ---- status ---- */

static int verb_status(freezer *f, char **args, size_t n_args) {
        const char *path = n_args > 0 ? args[0] : "/";
        freezer_group g;
        char buf[64];
        int ret = EXIT_SUCCESS, r;

        r = freezer_get_group(f, path, &g);
        if (r < 0) {
                log_failure(f, r, "cannot get status of %s", path);
                return EXIT_FAILURE;
        }

        if (arg_json) {
                struct json_object *o = json_object_new_object();

                if (!o ||
                    json_add(o, "path", json_object_new_string(g.path)) < 0 ||
                    json_add(o, "state", json_object_new_string(state_str(g.state))) < 0 ||
                    json_add(o, "freeze", json_object_new_boolean(g.freeze)) < 0 ||
                    json_add(o, "frozen", json_object_new_boolean(g.frozen)) < 0 ||
                    json_add(o, "populated", json_object_new_boolean(g.populated)) < 0 ||
                    json_add(o, "descendants", json_object_new_int64(g.descendants)) < 0 ||
                    json_add(o, "frozen_descendants", json_object_new_int64(g.frozen_descendants)) < 0 ||
                    json_add(o, "frozen_usec", json_object_new_uint64(g.frozen_usec)) < 0 ||
                    print_json(o) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                }
                json_object_put(o);
        } else {
                printf("%-20s%s\n", "Path:", g.path);
                printf("%-20s%s\n", "State:", state_str(g.state));
                printf("%-20s%s\n", "Freeze:", g.freeze ? "yes" : "no");
                printf("%-20s%s\n", "Frozen:", g.frozen ? "yes" : "no");
                printf("%-20s%s\n", "Populated:", g.populated ? "yes" : "no");
                printf("%-20s%" PRIu32 "\n", "Descendants:", g.descendants);
                printf("%-20s%" PRIu32 "\n", "Frozen descendants:", g.frozen_descendants);
                printf("%-20s%s\n", "Frozen for:", format_duration(buf, sizeof(buf), g.frozen_usec));
        }

        freezer_group_clear(&g);
        return ret;
}

/* ---- list ---- */

static int group_cmp(const void *a, const void *b) {
        const freezer_group *x = a, *y = b;

        return strcmp(x->path, y->path);
}

static int verb_list(freezer *f) {
        freezer_group *groups = NULL;
        size_t n = 0;
        int ret = EXIT_SUCCESS, r;

        r = freezer_list(f, &groups, &n);
        if (r < 0) {
                log_failure(f, r, "cannot list groups");
                return EXIT_FAILURE;
        }

        if (n > 0)
                qsort(groups, n, sizeof(groups[0]), group_cmp);

        if (arg_json) {
                struct json_object *a = json_object_new_array();

                for (size_t i = 0; a && i < n; i++) {
                        struct json_object *o = json_object_new_object();

                        if (!o ||
                            json_add(o, "path", json_object_new_string(groups[i].path)) < 0 ||
                            json_add(o, "object", json_object_new_string(groups[i].object)) < 0 ||
                            json_add(o, "state", json_object_new_string(state_str(groups[i].state))) < 0 ||
                            json_append(a, TAKE_PTR(o)) < 0) {
                                json_object_put(o);
                                json_object_put(a);
                                a = NULL;
                        }
                }

                if (!a || print_json(a) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                }
                json_object_put(a);
        } else {
                int width = 0;

                for (size_t i = 0; i < n; i++) {
                        int l = (int) strlen(state_str(groups[i].state));

                        if (l > width)
                                width = l;
                }

                for (size_t i = 0; i < n; i++)
                        printf("%-*s %s\n", width, state_str(groups[i].state), groups[i].path);
        }

        freezer_group_array_free(groups, n);
        return ret;
}

/* ---- tree ---- */

typedef struct tree_node {
        char *name;                     /* last component; the full path for the root */
        char *path;
        const freezer_group *group;     /* NULL if the daemon does not track it */
        struct tree_node **children;
        size_t n_children;
        size_t n_allocated;
} tree_node;

static tree_node *tree_node_free(tree_node *n) {
        if (!n)
                return NULL;

        for (size_t i = 0; i < n->n_children; i++)
                tree_node_free(n->children[i]);
        free(n->children);
        free(n->name);
        free(n->path);
        free(n);
        return NULL;
}

static tree_node *tree_node_new(const char *name, size_t name_len, const char *path, size_t path_len) {
        tree_node *n;

        n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;

        n->name = strndup(name, name_len);
        n->path = strndup(path, path_len);
        if (!n->name || !n->path)
                return tree_node_free(n);

        return n;
}

static tree_node *tree_node_child(tree_node *parent, const char *name, size_t name_len,
                                  const char *path, size_t path_len) {
        tree_node *c;

        for (size_t i = 0; i < parent->n_children; i++) {
                c = parent->children[i];
                if (strlen(c->name) == name_len && memcmp(c->name, name, name_len) == 0)
                        return c;
        }

        if (parent->n_children >= parent->n_allocated) {
                size_t k = parent->n_allocated > 0 ? parent->n_allocated * 2 : 4;
                tree_node **a;

                a = reallocarray(parent->children, k, sizeof(tree_node *));
                if (!a)
                        return NULL;
                parent->children = a;
                parent->n_allocated = k;
        }

        c = tree_node_new(name, name_len, path, path_len);
        if (!c)
                return NULL;

        parent->children[parent->n_children++] = c;
        return c;
}

/* The part of path below root ("" for root itself), or NULL if path is not
 * root or below it. */
static const char *path_below(const char *path, const char *root) {
        const char *s;

        if (streq(root, "/"))
                return path[0] == '/' ? path + 1 : NULL;

        s = startswith(path, root);
        if (!s)
                return NULL;
        if (*s == 0)
                return s;
        if (*s != '/')
                return NULL;
        return s + 1;
}

static int tree_insert(tree_node *root, const freezer_group *g) {
        const char *rel, *p;
        tree_node *n = root;

        rel = path_below(g->path, root->path);
        if (!rel)
                return 0;

        p = rel;
        while (*p) {
                size_t l = strcspn(p, "/");

                if (l > 0) {
                        n = tree_node_child(n, p, l, g->path, (size_t) (p - g->path) + l);
                        if (!n)
                                return -ENOMEM;
                }

                p += l;
                if (*p == '/')
                        p++;
        }

        n->group = g;
        return 0;
}

static int tree_node_cmp(const void *a, const void *b) {
        const tree_node *const *x = a, *const *y = b;

        return strcmp((*x)->name, (*y)->name);
}

static void tree_sort(tree_node *n) {
        if (n->n_children > 1)
                qsort(n->children, n->n_children, sizeof(tree_node *), tree_node_cmp);
        for (size_t i = 0; i < n->n_children; i++)
                tree_sort(n->children[i]);
}

static void tree_print_line(const char *prefix, const char *connector, const tree_node *n) {
        if (n->group)
                printf("%s%s%s (%s)\n", prefix, connector, n->name, state_str(n->group->state));
        else
                printf("%s%s%s\n", prefix, connector, n->name);
}

static int tree_print_children(const tree_node *n, const char *prefix, bool utf8) {
        for (size_t i = 0; i < n->n_children; i++) {
                bool last = i + 1 == n->n_children;
                const char *connector, *continuation;
                char *p;
                int r;

                if (utf8) {
                        connector = last ? "└─" : "├─";
                        continuation = last ? "  " : "│ ";
                } else {
                        connector = last ? "`-" : "|-";
                        continuation = last ? "  " : "| ";
                }

                tree_print_line(prefix, connector, n->children[i]);

                if (n->children[i]->n_children == 0)
                        continue;

                if (asprintf(&p, "%s%s", prefix, continuation) < 0)
                        return -ENOMEM;
                r = tree_print_children(n->children[i], p, utf8);
                free(p);
                if (r < 0)
                        return r;
        }

        return 0;
}

static struct json_object *tree_to_json(const tree_node *n) {
        struct json_object *o, *children;

        o = json_object_new_object();
        if (!o)
                return NULL;

        if (json_add(o, "path", json_object_new_string(n->path)) < 0)
                goto fail;

        if (n->group) {
                if (json_add(o, "state", json_object_new_string(state_str(n->group->state))) < 0)
                        goto fail;
        } else if (json_object_object_add(o, "state", NULL) < 0)
                goto fail;

        children = json_object_new_array();
        if (json_add(o, "children", children) < 0)
                goto fail;

        for (size_t i = 0; i < n->n_children; i++)
                if (json_append(children, tree_to_json(n->children[i])) < 0)
                        goto fail;

        return o;

fail:
        json_object_put(o);
        return NULL;
}

static int verb_tree(freezer *f, char **args, size_t n_args) {
        freezer_group root_group = {}, *groups = NULL;
        tree_node *root = NULL;
        size_t n = 0;
        int ret = EXIT_FAILURE, r;

        if (n_args > 0) {
                /* Validates and normalizes the path, and makes the daemon
                 * track the subtree if it does not yet. */
                r = freezer_get_group(f, args[0], &root_group);
                if (r < 0) {
                        log_failure(f, r, "cannot show tree of %s", args[0]);
                        return EXIT_FAILURE;
                }
        }

        r = freezer_list(f, &groups, &n);
        if (r < 0) {
                log_failure(f, r, "cannot list groups");
                goto finish;
        }

        root = root_group.path ? tree_node_new(root_group.path, strlen(root_group.path),
                                               root_group.path, strlen(root_group.path))
                               : tree_node_new("/", 1, "/", 1);
        if (!root)
                goto oom;

        for (size_t i = 0; i < n; i++)
                if (tree_insert(root, &groups[i]) < 0)
                        goto oom;

        /* Show the state GetGroup gave if ListGroups raced with a change. */
        if (!root->group && root_group.path)
                root->group = &root_group;

        tree_sort(root);

        if (arg_json) {
                struct json_object *o = tree_to_json(root);

                if (!o || print_json(o) < 0) {
                        json_object_put(o);
                        goto oom;
                }
                json_object_put(o);
        } else {
                tree_print_line("", "", root);
                if (tree_print_children(root, "", is_locale_utf8()) < 0)
                        goto oom;
        }

        ret = EXIT_SUCCESS;
        goto finish;

oom:
        log_oom();
finish:
        tree_node_free(root);
        freezer_group_array_free(groups, n);
        freezer_group_clear(&root_group);
        return ret;
}

/* ---- main ---- */

typedef struct verb {
        const char *name;
        size_t min_args;
        size_t max_args;
        bool takes_freeze_options;
} verb;

static const verb verbs[] = {
        { "freeze", 1, SIZE_MAX, true  },
        { "thaw",   1, SIZE_MAX, true  },
        { "status", 0, 1,        false },
        { "list",   0, 0,        false },
        { "tree",   0, 1,        false },
};

/* Returns > 0 to go on, 0 to exit successfully (--help, --version), < 0 on
 * usage errors. */
static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_SYSTEM,
                ARG_USER,
                ARG_ADDRESS,
                ARG_JSON,
                ARG_TIMEOUT,
                ARG_NO_WAIT,
                ARG_ROLLBACK,
        };
        static const struct option options[] = {
                { "help",     no_argument,       NULL, 'h'          },
                { "version",  no_argument,       NULL, ARG_VERSION  },
                { "system",   no_argument,       NULL, ARG_SYSTEM   },
                { "user",     no_argument,       NULL, ARG_USER     },
                { "address",  required_argument, NULL, ARG_ADDRESS  },
                { "json",     no_argument,       NULL, ARG_JSON     },
                { "timeout",  required_argument, NULL, ARG_TIMEOUT  },
                { "no-wait",  no_argument,       NULL, ARG_NO_WAIT  },
                { "rollback", no_argument,       NULL, ARG_ROLLBACK },
                {}
        };
        int c, r;

        opterr = 0;

        /* No leading '+' in optstring: GNU getopt permutes, so options may
         * follow the command; "--" stops option parsing. */
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {

                case 'h':
                        help();
                        return 0;

                case ARG_VERSION:
                        puts(PROGRAM " " FREEZERD_VERSION);
                        return 0;

                case ARG_SYSTEM:
                        arg_bus = BUS_SYSTEM;
                        break;

                case ARG_USER:
                        arg_bus = BUS_USER;
                        break;

                case ARG_ADDRESS:
                        if (!*optarg)
                                return usage_error("--address= needs a D-Bus address");
                        arg_bus = BUS_ADDRESS;
                        arg_address = optarg;
                        break;

                case ARG_JSON:
                        arg_json = true;
                        break;

                case ARG_TIMEOUT:
                        r = parse_duration(optarg, &arg_timeout_usec);
                        if (r == -ERANGE)
                                return usage_error("duration too large: '%s'", optarg);
                        if (r < 0)
                                return usage_error("invalid duration '%s' (e.g. 5s, 250ms, 2min, 1.5s)", optarg);
                        arg_timeout_set = true;
                        break;

                case ARG_NO_WAIT:
                        arg_no_wait = true;
                        break;

                case ARG_ROLLBACK:
                        arg_rollback = true;
                        break;

                case ':':
                        return usage_error("option '%s' needs an argument", argv[optind - 1]);

                case '?':
                        if (optopt > 0 && optopt < 0x100)
                                return usage_error("invalid option '-%c'", optopt);
                        return usage_error("invalid option '%s'", argv[optind - 1]);

                default:
                        return usage_error("unexpected option");
                }

        return 1;
}

static int connect_bus(freezer **ret) {
        int r;

        switch (arg_bus) {
        case BUS_USER:
                r = freezer_open_user(ret);
                if (r < 0)
                        fprintf(stderr, PROGRAM ": cannot connect to the user bus: %s\n", strerror(-r));
                return r;
        case BUS_ADDRESS:
                r = freezer_open_address(ret, arg_address);
                if (r < 0)
                        fprintf(stderr, PROGRAM ": cannot connect to the bus at %s: %s\n",
                                arg_address, strerror(-r));
                return r;
        case BUS_SYSTEM:
        default:
                r = freezer_open_system(ret);
                if (r < 0)
                        fprintf(stderr, PROGRAM ": cannot connect to the system bus: %s\n", strerror(-r));
                return r;
        }
}

int main(int argc, char *argv[]) {
        const verb *v = NULL;
        freezer *f = NULL;
        char **args;
        size_t n_args;
        int ret, r;

        (void) setlocale(LC_ALL, "");

        r = parse_argv(argc, argv);
        if (r < 0)
                return EXIT_USAGE;
        if (r == 0)
                return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;

        if (optind >= argc) {
                usage_error("missing command");
                return EXIT_USAGE;
        }

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name)) {
                        v = &verbs[i];
                        break;
                }
        if (!v) {
                usage_error("unknown command '%s'", argv[optind]);
                return EXIT_USAGE;
        }

        args = argv + optind + 1;
        n_args = (size_t) (argc - optind - 1);

        if (n_args < v->min_args) {
                usage_error("%s needs at least one PATH", v->name);
                return EXIT_USAGE;
        }
        if (n_args > v->max_args) {
                if (v->max_args == 0)
                        usage_error("%s takes no arguments", v->name);
                else
                        usage_error("%s takes at most one PATH", v->name);
                return EXIT_USAGE;
        }

        if (!v->takes_freeze_options && (arg_timeout_set || arg_no_wait || arg_rollback)) {
                usage_error("%s applies only to freeze and thaw",
                            arg_timeout_set ? "--timeout" : arg_no_wait ? "--no-wait" : "--rollback");
                return EXIT_USAGE;
        }

        for (size_t i = 0; i < n_args; i++)
                if (!*args[i]) {
                        usage_error("empty PATH");
                        return EXIT_USAGE;
                }

        if (connect_bus(&f) < 0)
                return EXIT_FAILURE;

        if (streq(v->name, "freeze"))
                ret = verb_freeze_thaw(f, true, args, n_args);
        else if (streq(v->name, "thaw"))
                ret = verb_freeze_thaw(f, false, args, n_args);
        else if (streq(v->name, "status"))
                ret = verb_status(f, args, n_args);
        else if (streq(v->name, "list"))
                ret = verb_list(f);
        else
                ret = verb_tree(f, args, n_args);

        freezer_close(f);

        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, PROGRAM ": cannot write output: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }

        return ret;
}
