/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The static front of freezectl (built with FREEZECTL_FRONT, see
 * client/meson.build).
 *
 * `freezectl freeze` and `thaw` over freezerd's private socket need nothing
 * but libc (bus-wire.h), and there most of the command's time is process
 * start-up: on the 2-vCPU VMs of the benchmarks the dynamic loader mapping
 * and relocating libc alone is 0.2 ms of a 1.2 ms freeze.  So the installed
 * `freezectl` is linked statically (-static-pie) and does exactly those
 * itself, plus --help, --version and every usage error.  A static program
 * cannot dlopen() libsystemd or json-c (the library would bring a second
 * libc into the process), so every other command is handed, before anything
 * is read, written or sent, to the same program linked dynamically,
 * `freezectl-dynamic`, with the same arguments.
 */

#include <stdbool.h>

/* Remember the command line as given, before getopt() permutes it. */
void front_save_argv(int argc, char *argv[]);

/* Run freezectl-dynamic with the saved command line, in place of this
 * process: next to this program (a build tree), else in freezerd's libexec
 * directory (an installation).  Returns only if neither can be run, having
 * said so ("freezectl: <why> is for ... to do, which cannot be run: ..."); the
 * caller exits 1. */
void front_exec_dynamic(const char *why);
