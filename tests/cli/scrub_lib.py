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
  scrub_lib.py flip-any POOLDIR SEED [KIND]   flips one bit at a uniformly
      random byte of the pool's pack files (each byte of every pack equally
      likely: file headers, block headers, payloads and CRCs, node
      records, checkpoints), or with KIND (pack, block, node, state) of
      the bytes of that kind only; prints what it hit, parsed from the clean
      bytes: "block HEX", "record PACK OFFSET node HEX",
      "record PACK OFFSET state" or "pack PACK"
  scrub_lib.py check-any HIT RECSIZE POOL SNAP=DIR... < SCRUB_JSON
      a "block" as check does; a record: exactly one error, of kind
      record at that pack and offset (a node record's with a path when
      its node's hash is the one reported); a pack header: exactly one
      error, of kind pack, naming the pack
  scrub_lib.py flip-at PACKFILE AT [OFF PSIZE]   flips bit 4 of the byte at
      AT; with OFF PSIZE (a block record of a version-3 pack: 48 bytes of
      header, PSIZE of payload, then its CRC-32C), checks that the record's
      CRC matched before and makes it match the flipped bytes after, as
      bytes wrong before they were written would be
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
        pos = off + rnd.randrange(48 + psize + pack_tail(os.path.join(pooldir, 'packs', name)))
        with open(os.path.join(pooldir, 'packs', name), 'r+b') as f:
            f.seek(pos)
            b = f.read(1)
            f.seek(pos)
            f.write(bytes([b[0] ^ (1 << rnd.randrange(8))]))
        print('block', h.hex())


def pack_tail(path):
    """The CRC tail of each record of the pack at path: 4 in version 3."""
    with open(path, 'rb') as f:
        h = f.read(16)
    return 4 if int.from_bytes(h[8:12], 'little') >= 3 else 0


def pack_records(b):
    """(offset, length, kind, hash or None) of each record of pack bytes b."""
    tail = 4 if int.from_bytes(b[8:12], 'little') >= 3 else 0
    off, out = 16, []
    while off + 4 <= len(b):
        m = b[off:off + 4]
        if m == b'FBLK':
            n, kind, h = 48 + int.from_bytes(b[off + 12:off + 16], 'little'), 'block', b[off + 16:off + 48]
        elif m == b'FNOD':
            n, kind, h = 44 + int.from_bytes(b[off + 8:off + 12], 'little'), 'node', b[off + 12:off + 44]
        elif m == b'FCAT':
            n, kind, h = 56 + int.from_bytes(b[off + 16:off + 20], 'little'), 'state', None
        else:
            raise SystemExit('pack does not parse at %d' % off)
        out.append((off, n + tail, kind, h))
        off += n + tail
    if off != len(b):
        raise SystemExit('pack has %d trailing bytes' % (len(b) - off))
    return out


def flip_any(pooldir, seed, only=None):
    rnd = random.Random(seed)
    d = os.path.join(pooldir, 'packs')
    names = sorted(n for n in os.listdir(d) if n.endswith('.pack'))
    db = sqlite3.connect(os.path.join(pooldir, 'catalog.db'))
    indexed = set(db.execute('SELECT k.name, b.offset FROM blocks b JOIN packs k ON k.id = b.pack_id'))
    db.close()
    # the byte ranges flips may land in: whole files, or (only) the bytes
    # of one kind (pack, block, node, state), each byte equally likely
    ranges = []
    for n in names:
        path = os.path.join(d, n)
        if only is None:
            ranges.append((n, 0, os.path.getsize(path)))
            continue
        if only == 'pack':
            ranges.append((n, 0, 16))
            continue
        for off, ln, kind, h in pack_records(open(path, 'rb').read()):
            if kind == only:
                ranges.append((n, off, off + ln))
    at = rnd.randrange(sum(hi - lo for _, lo, hi in ranges))
    for name, lo, hi in ranges:
        if at < hi - lo:
            at += lo
            break
        at -= hi - lo
    path = os.path.join(d, name)
    b = open(path, 'rb').read()
    hit = None
    if at < 16:
        hit = 'pack %s' % name
    else:
        for off, n, kind, h in pack_records(b):
            if off <= at < off + n:
                if kind == 'block':
                    if (name, off) not in indexed:
                        raise SystemExit('an unindexed block (garbage) at %s %d' % (name, off))
                    hit = 'block %s' % h.hex()
                elif kind == 'node':
                    hit = 'record %s %d node %s' % (name, off, h.hex())
                else:
                    hit = 'record %s %d state' % (name, off)
                break
    with open(path, 'r+b') as f:
        f.seek(at)
        f.write(bytes([b[at] ^ (1 << rnd.randrange(8))]))
    print(hit)


def check_any(hit, recsize, pool, specs):
    w = hit.split()
    if w[0] == 'block':
        import tempfile
        with tempfile.NamedTemporaryFile('w', delete=False) as t:
            t.write(hit + '\n')
        try:
            check(t.name, recsize, pool, specs)
        finally:
            os.unlink(t.name)
        return
    errs = json.load(sys.stdin)['pools'][pool]['errors']
    bad = []
    if len(errs) != 1:
        bad.append('%d errors reported, want 1: %s' % (len(errs), [e.get('detail') for e in errs]))
    elif w[0] == 'pack':
        e = errs[0]
        if e['kind'] != 'pack' or w[1] not in e['detail']:
            bad.append('want a pack error naming %s, got %s %s' % (w[1], e['kind'], e['detail']))
    else:
        e = errs[0]
        if e['kind'] != 'record' or e.get('pack') != w[1] or e.get('offset') != int(w[2]):
            bad.append('want a record error at %s %s, got %s %s %s %s' % (
                w[1], w[2], e['kind'], e.get('pack'), e.get('offset'), e['detail']))
        elif w[3] == 'node' and e.get('hash') == w[4] and not e['files']:
            bad.append('node record %s reported with no path' % w[4][:16])
    print('\n'.join(bad) if bad else 'ok')


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


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def check_crcs(pooldir):
    """Every record of every version-3 pack in pooldir against its CRC tail,
    computed here bit by bit: prints 'N records, M blocks, 0 bad' or the
    first bad record."""
    d = os.path.join(pooldir, 'packs')
    n = nb = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith('.pack'):
            continue
        with open(os.path.join(d, name), 'rb') as f:
            b = f.read()
        if not pack_tail(os.path.join(d, name)):
            continue
        for off, ln, kind, h in pack_records(b):
            rec, tail = b[off:off + ln - 4], b[off + ln - 4:off + ln]
            if int.from_bytes(tail, 'little') != crc32c(rec):
                print('bad CRC: %s record at %d (%s)' % (name, off, kind))
                return
            n += 1
            nb += kind == 'block'
    print('%d records, %d blocks, 0 bad' % (n, nb))


def flip_at(path, at, off=None, psize=None):
    with open(path, 'r+b') as f:
        if off is not None:
            f.seek(off)
            rec = f.read(48 + psize)
            if int.from_bytes(f.read(4), 'little') != crc32c(rec):
                raise SystemExit('the record at %d has no matching CRC tail' % off)
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))
        if off is not None:
            f.seek(off)
            rec = f.read(48 + psize)
            f.seek(off + 48 + psize)
            f.write(crc32c(rec).to_bytes(4, 'little'))


def main():
    cmd = sys.argv[1]
    if cmd == 'flip-blocks':
        flip_blocks(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == 'flip-nodes':
        flip_nodes(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                   int(sys.argv[5]) if len(sys.argv) > 5 else None)
    elif cmd == 'flip-any':
        flip_any(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    elif cmd == 'check-any':
        check_any(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:])
    elif cmd == 'check-crcs':
        check_crcs(sys.argv[2])
    elif cmd == 'flip-at':
        flip_at(sys.argv[2], int(sys.argv[3]),
                *(int(x) for x in sys.argv[4:6]))
    elif cmd == 'check':
        check(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:])
    else:
        raise SystemExit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
