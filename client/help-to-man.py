#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Make a man page of a program's --help, so that the help stays the one text
to keep up to date (freezectl(1) and freezerd(8) are built this way).

usage: help-to-man.py --section=N --summary=TEXT --output=FILE -- PROGRAM

It runs PROGRAM --help and PROGRAM --version (the version's last word names
the release). The help is read as freezerd's programs write it:

  - the first line is the synopsis ("Usage: " is dropped), the paragraphs
    after it the description;
  - a line "Title:" alone at the start of a line opens a section, and so does
    a paragraph "Title: text" whose title is at most three words (freezerd's
    "Signals: ...", "See also: ...");
  - a paragraph whose lines are indented is a list: "  TERM  description"
    with continuation lines further in (nested lines, further in than the
    description, keep their own line);
  - a paragraph at the left margin is prose; its indented lines are a list
    where they read as one (freezerd's "Keys:": each line a "TERM  description"
    or a continuation of one), else shown as they are (an example of output);
  - prose after the Options list, past a blank line, opens a section DETAILS
    (freezectl's notes after its options);
  - the lines of Examples are shown as they are.

Anything else is kept as prose. Lines shown as they are (no fill) are set in
from the text as far as they fit an 80-column terminal (man at MANWIDTH=80):
the help's lines are 80 columns at most, but the page's text starts 7 in, and
such a block 7 further. Standard library only.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys

TITLE_LINE = re.compile(r'^([A-Z][A-Za-z ()-]*(?:\(--[a-z]+\))?):$')
TITLE_PARAGRAPH = re.compile(r'^([A-Z][a-z]*(?: [a-z]+){0,2}): (.*)$')
ITEM = re.compile(r'^( +)(\S+(?: \S+)*)(?: {2,}(\S.*))?$')  # words apart by one space, then 2+


def escape(text):
    """Text for troff: backslashes and dashes escaped, no control character first."""
    text = text.replace('\\', '\\e').replace('-', '\\-')
    if text.startswith(('.', "'")):
        text = '\\&' + text
    return text


def escape_arg(text):
    """A macro's argument: also no double quote, which would end or start one."""
    return escape(text).replace('"', '\\(dq')


def upper_title(title):
    """"JSON output (--json)" -> "JSON OUTPUT (--json)": what is in parentheses stays as it is."""
    head, paren, rest = title.partition('(')
    return head.upper() + paren + rest


def indent_of(line):
    return len(line) - len(line.lstrip(' '))


# The columns of the terminal a page is read on (man's MANWIDTH=80), the column
# where man sets a section's text (its indent, IN: 7n), and how much further in
# .RS sets a block (IN again).
WIDTH = 80
TEXT_INDENT = 7
RS_INDENT = 7


def render_nofill(lines, out):
    """Lines shown as they are, .RS in from the text where they fit within WIDTH,
    else as far in as they fit: at the text's indent, or out from it (.in -N,
    undone by .in), so that no line runs past a terminal of that width.  A line
    the help itself made wider than WIDTH would run past it anyway."""
    widest = max(len(x) for x in lines)
    body = [escape(x) for x in lines]
    if TEXT_INDENT + RS_INDENT + widest <= WIDTH:
        out += ['.RS', '.nf'] + body + ['.fi', '.RE']
    elif TEXT_INDENT + widest <= WIDTH:
        out += ['.nf'] + body + ['.fi']
    else:
        out += [f'.in -{TEXT_INDENT - max(0, WIDTH - widest)}n', '.nf'] + body + ['.fi', '.in']


def is_list(run):
    """Whether indented lines read as a list: each either "TERM  description"
    (TERM's words one space apart, two or more before the description), all
    TERMs at one indentation, or a continuation at its description's column or
    further in; two items at least.  A table whose rows have no description
    (freezectl's watch lines) is not one, nor a row alone (freezectl's
    example of a pressure row, "cpu      not available: ...")."""
    desc_col = None
    items = 0
    for line in run:
        ind = indent_of(line)
        if desc_col is not None and ind >= desc_col:
            continue
        m = ITEM.match(line)
        if not m or not m.group(3) or ind != indent_of(run[0]):
            return False
        desc_col = len(line) - len(m.group(3))
        items += 1
    return items >= 2


def split_sections(lines):
    """[(title, [lines])], the first one DESCRIPTION."""
    sections = [['DESCRIPTION', []]]
    prev_blank = True
    for line in lines:
        m = TITLE_LINE.match(line)
        p = TITLE_PARAGRAPH.match(line) if prev_blank else None
        if m:
            sections.append([upper_title(m.group(1)), []])
        elif p:
            sections.append([upper_title(p.group(1)), [p.group(2)]])
        else:
            sections[-1][1].append(line)
        prev_blank = not line.strip()
    return [(t, body) for t, body in sections if any(x.strip() for x in body)]


def chunks(lines):
    """The paragraphs: runs of lines between blank lines."""
    out, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def render_list(chunk, out):
    """TERM  description items; returns the lines after the list (prose at the margin)."""
    desc_col = None
    i = 0
    while i < len(chunk):
        line = chunk[i]
        ind = indent_of(line)
        if ind == 0:
            return chunk[i:]
        if desc_col is not None and (ind >= desc_col or ind > 6):
            # A continuation: further in than the description, its own line.
            if ind > desc_col:
                out.append('.br')
                out.append('\\ ' * (ind - desc_col) + escape(line.strip()))
            else:
                out.append(escape(line.strip()))
            i += 1
            continue
        m = ITEM.match(line)
        if not m:
            out.append(escape(line.strip()))  # not TERM  description: kept as text
            i += 1
            continue
        term, desc = m.group(2), m.group(3)
        out.append('.TP')
        out.append('.B ' + escape_arg(term))
        if desc:
            desc_col = len(line) - len(desc)
            out.append(escape(desc))
        else:
            # A long term alone: its description is the next lines, wherever they start.
            desc_col = indent_of(chunk[i + 1]) if i + 1 < len(chunk) else ind + 2
        i += 1
    return []


def render_prose(chunk, out):
    """Text at the margin, filled; runs of indented lines a list set in from it
    (is_list(): filled, as the Options are, so that it fits any width), else
    shown as they are (their indentation relative to the run's least kept:
    render_nofill())."""
    out.append('.PP')
    i = 0
    while i < len(chunk):
        if indent_of(chunk[i]) == 0:
            out.append(escape(chunk[i]))
            i += 1
            continue
        j = i
        while j < len(chunk) and indent_of(chunk[j]) > 0:
            j += 1
        if is_list(chunk[i:j]):
            out.append('.RS')
            render_list(chunk[i:j], out)
            out.append('.RE')
            if j < len(chunk):  # the prose goes on below the list, as a paragraph of its own
                out.append('.PP')
        else:
            least = min(indent_of(x) for x in chunk[i:j])
            render_nofill([x[least:].rstrip() for x in chunk[i:j]], out)
        i = j


def render(prog, section, summary, version, help_text):
    lines = [x.expandtabs().rstrip() for x in help_text.rstrip('\n').split('\n')]
    synopsis = re.sub(r'^Usage: ', '', lines[0])
    # Reproducible builds set SOURCE_DATE_EPOCH.
    date = datetime.datetime.fromtimestamp(int(os.environ.get('SOURCE_DATE_EPOCH') or datetime.datetime.now().timestamp()),
                                           datetime.timezone.utc)
    out = [
        f'.\\" Made by client/help-to-man.py from "{prog} --help": change the help, not this file.',
        f'.TH {prog.upper()} {section} "{date:%B %Y}" "{escape(prog)} {escape(version)}" "freezerd"',
        '.SH NAME',
        f'{escape(prog)} \\- {escape(summary)}',
        '.SH SYNOPSIS',
        '.B ' + escape_arg(synopsis),
    ]
    for title, body in split_sections(lines[1:]):
        out.append('.SH ' + escape(title))
        if title == 'EXAMPLES':
            out.append('.PP')
            render_nofill([x.strip() for x in body if x.strip()], out)
            continue
        after_list = False
        for chunk in chunks(body):
            if indent_of(chunk[0]) > 0:
                rest = render_list(chunk, out)
                if rest:
                    render_prose(rest, out)
                after_list = True
            else:
                if after_list and title == 'OPTIONS':
                    out.append('.SH DETAILS')
                render_prose(chunk, out)
                after_list = False
    return '\n'.join(out) + '\n'


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--section', required=True)
    p.add_argument('--summary', required=True)
    p.add_argument('--output', required=True)
    p.add_argument('program')
    args = p.parse_args()
    env = dict(os.environ, LC_ALL='C', ASAN_OPTIONS='detect_leaks=0')
    help_text = subprocess.run([args.program, '--help'], check=True, capture_output=True, text=True, env=env).stdout
    version = subprocess.run([args.program, '--version'], check=True, capture_output=True, text=True,
                             env=env).stdout.split()[-1]
    prog = os.path.basename(args.program)
    page = render(prog, args.section, args.summary, version, help_text)
    with open(args.output + '.tmp', 'w') as f:
        f.write(page)
    os.replace(args.output + '.tmp', args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
