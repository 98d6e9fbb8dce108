/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* /etc/freezerd/freezerd.json, parsed with json-c.
 *
 *   {
 *     "cgroup_root": "/sys/fs/cgroup/unified/pods",   (optional; default: the cgroup2 mount)
 *     "track": ["/"],                                   (optional; API paths below the root)
 *     "default_timeout_usec": 10000000,                 (optional; > 0)
 *     "realtime_writes": true                           (optional; see freeze-writer.h)
 *   }
 *
 * A missing file means defaults (at the default path only: see config_load()).  Bad JSON, an unknown key, a wrong type or an
 * invalid value is an error whose message names the file, the line and the key,
 * e.g. "freezerd.json:3: unknown key \"trak\"". */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_DEFAULT_TIMEOUT_USEC (10ULL * 1000000ULL)
#define CONFIG_DEFAULT_PATH "/etc/freezerd/freezerd.json"

typedef struct Config {
        char *cgroup_root;             /* NULL: not set */
        char **track;                  /* normalized API paths; NULL-terminated; default {"/"} */
        size_t n_track;
        uint64_t default_timeout_usec; /* default CONFIG_DEFAULT_TIMEOUT_USEC */
        bool realtime_writes;          /* big cgroup.freeze writes from a SCHED_FIFO thread; default true */
} Config;

/* Fill *c with defaults. */
int config_init_defaults(Config *c);
void config_done(Config *c);

/* Parse text (not necessarily NUL-terminated).  filename is used in messages.
 * On error returns -EINVAL (or -ENOMEM) and *ret_error is a malloc'ed message. */
int config_parse(const char *text, size_t len, const char *filename, Config *ret, char **ret_error);

/* Load a file; with missing_ok, one that does not exist is not an error
 * (defaults: the default path), else it is -ENOENT with a message (a file
 * named on the command line, a typo in it).  Errors as config_parse(),
 * plus I/O errors with a message; anything but a regular file (a FIFO, a
 * device) is -EINVAL, without waiting on it. */
int config_load(const char *path, bool missing_ok, Config *ret, char **ret_error);
