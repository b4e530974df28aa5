#!/usr/bin/env python3
"""Helpers of the scrub tests (tests/cli/15x): damage a pool, and check
what `ferry scrub --json` says against an oracle that knows the source
trees, independent of ferry's own walk.

  scrub_lib.py flip-blocks POOLDIR N SEED   flips one bit in each of N distinct
      blocks (a random byte of its header or payload in its pack); prints
      "block HEX" per block
  scrub_lib.py flip-nodes POOLDIR N SEED [TYPE]   flips one bit of N distinct
      node rows of the catalogue (of that node type only, with TYPE: 2, the
      blocklists, are leaves, so none hides another); prints "node HEX" each
  scrub_lib.py check FLIPS RECSIZE POOL SNAP=DIR... < SCRUB_JSON
      every flipped block is reported (kind block) with exactly the files
      whose content has that record, as POOL/DS@SNAP:/PATH, every flipped
      node is reported (kind node) with at least one path, and nothing
      else is reported ("known HEX" lines: damage that may be reported,
      unchecked); prints "ok" or one line per mismatch
"""
import hashlib
import json
import os
import random
import sqlite3
import sys


def flip_blocks(pooldir, n, seed):
    rnd = random.Random(seed)
    db = sqlite3.connect(os.path.join(pooldir, 'catalog.db'))
    rows = db.execute('SELECT k.name, b.offset, b.psize, b.hash FROM blocks b JOIN packs k'
                      ' ON k.id = b.pack_id ORDER BY b.id').fetchall()
    db.close()
    for name, off, psize, h in rnd.sample(rows, min(n, len(rows))):
        pos = off + rnd.randrange(48 + psize)
        with open(os.path.join(pooldir, 'packs', name), 'r+b') as f:
            f.seek(pos)
            b = f.read(1)
            f.seek(pos)
            f.write(bytes([b[0] ^ (1 << rnd.randrange(8))]))
        print('block', h.hex())


def flip_nodes(pooldir, n, seed, ntype=None):
    rnd = random.Random(seed)
    db = sqlite3.connect(os.path.join(pooldir, 'catalog.db'))
    rows = db.execute('SELECT hash, data FROM nodes WHERE ?1 IS NULL OR type = ?1 ORDER BY hash',
                      (ntype,)).fetchall()
    for h, data in rnd.sample(rows, min(n, len(rows))):
        d = bytearray(data)
        i = rnd.randrange(len(d))
        d[i] ^= 1 << rnd.randrange(8)
        db.execute('UPDATE nodes SET data = ? WHERE hash = ?', (bytes(d), h))
        print('node', h.hex())
    db.commit()
    db.close()


def record_users(recsize, trees):
    """{record hash hex: set of 'SNAP:/path'} over the kept trees."""
    users = {}
    for snap, top in trees:
        for dirpath, _, files in os.walk(top):
            for fn in files:
                p = os.path.join(dirpath, fn)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                rel = '/' + os.path.relpath(p, top)
                with open(p, 'rb') as f:
                    while True:
                        rec = f.read(recsize)
                        if not rec:
                            break
                        if rec.count(0) == len(rec):
                            continue  # a hole
                        h = hashlib.blake2b(rec, digest_size=32).hexdigest()
                        users.setdefault(h, set()).add(snap + ':' + rel)
    return users


def check(flipsf, recsize, pool, specs):
    trees = [tuple(s.split('=', 1)) for s in specs]
    doc = json.load(sys.stdin)
    errs = doc['pools'][pool]['errors']
    flips = [l.split() for l in open(flipsf).read().split('\n') if l.strip()]
    users = record_users(recsize, trees)
    bad = []
    byhash = {}
    for e in errs:
        byhash.setdefault(e.get('hash', ''), []).append(e)
    wanted = set()
    for kind, h in flips:
        wanted.add(h)
        if kind == 'known':
            continue  # damaged earlier: may be reported, not checked
        got = [e for e in byhash.get(h, []) if e['kind'] == kind]
        if not got:
            bad.append('%s %s not reported' % (kind, h[:16]))
            continue
        files = set(f for e in got for f in e['files'])
        if kind == 'block':
            want = users.get(h, set())
            if files != want:
                bad.append('block %s: files %s, want %s' % (h[:16], sorted(files), sorted(want)))
        elif not files:
            bad.append('node %s reported with no path' % h[:16])
    for e in errs:
        if e.get('hash', '') not in wanted:
            bad.append('reported but not damaged: %s %s' % (e['kind'], e.get('detail')))
    print('\n'.join(bad) if bad else 'ok')


def main():
    cmd = sys.argv[1]
    if cmd == 'flip-blocks':
        flip_blocks(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == 'flip-nodes':
        flip_nodes(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                   int(sys.argv[5]) if len(sys.argv) > 5 else None)
    elif cmd == 'check':
        check(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:])
    else:
        raise SystemExit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
