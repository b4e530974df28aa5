#!/usr/bin/env python3
"""Validates a ferry --json document (stdin) against docs/ferry-json.7.

usage: json_check.py FERRY-JSON.7 COMMAND   ("ferry pool list")
Prints "ok", or one line per mismatch: a member not described, a member
described (not optional) but missing, or a value of the wrong type.
"""
import json
import re
import sys

TYPES = {
    'string': lambda v: isinstance(v, str),
    'integer': lambda v: isinstance(v, int) and not isinstance(v, bool),
    'number': lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    'boolean': lambda v: isinstance(v, bool),
    'null': lambda v: v is None,
    'object': lambda v: isinstance(v, dict),
    'array': lambda v: isinstance(v, list),
}


def parse(man):
    """{schema name: tree}; a tree is {member: (types, optional, subtree)}."""
    schemas, lines = {}, open(man).read().split('\n')
    i = 0
    while i < len(lines):
        names = []
        while i < len(lines) and lines[i].startswith('.\\" schema: '):
            names.append(lines[i][len('.\\" schema: '):].strip())
            i += 1
        if not names:
            i += 1
            continue
        root = {}
        stack = [(-1, root)]
        while i < len(lines) and lines[i] != '.fi':
            m = re.match(r'^( *)(\S+)\s+(\S+)(.*)$', lines[i])
            if not m:
                raise SystemExit('bad schema line: %r' % lines[i])
            depth = len(m.group(1)) // 2
            while stack[-1][0] >= depth:
                stack.pop()
            sub = {}
            stack[-1][1][m.group(2)] = (m.group(3).split('|'), 'optional' in m.group(4), sub)
            stack.append((depth, sub))
            i += 1
        for n in names:
            schemas[n] = root
    return schemas


def check(v, tree, path, errs):
    """v against tree, v being an object or array described by tree."""
    if isinstance(v, list):
        d = tree.get('[]')
        for k, e in enumerate(v):
            if d is None:
                errs.append('%s[%d]: no element description' % (path, k))
            else:
                one(e, d, '%s[%d]' % (path, k), errs)
        return
    for k, e in v.items():
        d = tree.get(k, tree.get('*'))
        if d is None:
            errs.append('%s.%s: not in ferry-json(7)' % (path, k))
        else:
            one(e, d, '%s.%s' % (path, k), errs)
    for k, (t, opt, sub) in tree.items():
        if k not in ('*', '[]') and not opt and k not in v:
            errs.append('%s.%s: missing' % (path, k))


def one(e, d, path, errs):
    types, _, sub = d
    if not any(TYPES[t](e) for t in types):
        errs.append('%s: %r is not %s' % (path, e, '|'.join(types)))
    elif isinstance(e, (dict, list)) and sub:
        check(e, sub, path, errs)


def main():
    schemas = parse(sys.argv[1])
    cmd = sys.argv[2]
    doc = json.load(sys.stdin)
    tree = dict(schemas['common'])
    tree.update(schemas[cmd])
    errs = []
    check(doc, tree, '', errs)
    if not errs and doc['output_version']['command'] != cmd:
        errs.append('output_version.command is %r' % doc['output_version']['command'])
    print('\n'.join(errs) if errs else 'ok')


main()
