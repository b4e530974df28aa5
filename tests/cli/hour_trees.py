#!/usr/bin/env python3
"""tests/cli/hour_trees.py: the source trees of the hourly tests
(95-sync-year.t, 182-cron-faults.t), hour by hour.

  hour_trees.py trees NAMES DIR BIG [blob]
      for each snapshot name in the file NAMES (...@auto-YYYYmmddTHHMMSSZ,
      hours counted from 2024-01-01T00:00:00Z), the tree the source had at
      that hour, in DIR/NAME (with "/" as "_"): f0 to f7 as the tests write
      them, the file BIG copied as big and, with "blob", blob as it was
      last written (every eighth hour)
  hour_trees.py blob H
      the bytes of blob from hour H on, on stdout: 600,000 random bytes
      seeded with H

At hour h the tests write "hour h" into f(h mod 5) and "hour h padded"
into f(5 + h mod 3); f(k) starts as "init k".
"""
import datetime
import os
import random
import shutil
import sys

START = datetime.datetime(2024, 1, 1)


def blob(h):
    return random.Random(h).randbytes(600000)


def f_text(h, k):
    for j in range(h, -1, -1):
        if (j % 5 == k) if k < 5 else (j % 3 == k - 5):
            return "hour %d%s\n" % (j, "" if k < 5 else " padded")
    return "init %d\n" % k


def trees(names, top, big, with_blob):
    for line in open(names):
        name = line.strip()
        t = datetime.datetime.strptime(name.split("@auto-")[1], "%Y%m%dT%H%M%SZ")
        h = int((t - START).total_seconds() // 3600)
        d = os.path.join(top, name.replace("/", "_"))
        os.makedirs(d)
        for k in range(8):
            with open(os.path.join(d, "f%d" % k), "w") as f:
                f.write(f_text(h, k))
        shutil.copyfile(big, os.path.join(d, "big"))
        if with_blob:
            with open(os.path.join(d, "blob"), "wb") as f:
                f.write(blob(h - h % 8))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "blob":
        sys.stdout.buffer.write(blob(int(sys.argv[2])))
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "trees":
        trees(sys.argv[2], sys.argv[3], sys.argv[4], len(sys.argv) == 6 and sys.argv[5] == "blob")
    else:
        sys.exit("usage: hour_trees.py trees NAMES DIR BIG [blob] | blob H")
