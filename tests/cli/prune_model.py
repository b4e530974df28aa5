#!/usr/bin/env python3
"""An independent model of restic's retention rules (restic forget,
internal/restic/snapshot_policy.go: ApplyPolicy), in UTC, for the tests of
ferry prune and ferry sync. Written from restic's rules, not from ferry's
code:

  - snapshots are taken newest first;
  - keep-last N: the N newest;
  - keep-hourly/daily/weekly/monthly/yearly N: walking newest to oldest, a
    snapshot whose bucket (hour, day, ISO week, month, year) differs from
    the last kept one's in that rule is kept while the rule has counts left
    (-1: unlimited), and the oldest snapshot is kept too while counts are
    left;
  - keep-within DURATION (y m d h): everything strictly newer than the
    newest snapshot's time minus the duration (calendar months and days,
    normalised as Go's time.AddDate does);
  - ferry adds: a held snapshot, the dataset's newest, a sync base are kept
    whatever the rules say.

  prune_model.py expect POLICY [--protect NAME]... < NAME<TAB>SECONDS lines
      prints the names kept, one per line, sorted
  prune_model.py simulate HOURS START SRC_POLICY DST_POLICY
      prints "src NAME" and "dst NAME" lines: the sets left after hourly
      snapshot --auto, sync (every snapshot since the base) and prune on
      both sides, the source's sync base (its newest) held

POLICY: comma-separated last=N,hourly=N,daily=N,weekly=N,monthly=N,yearly=N,
within=1y2m3d4h, prefix=P (only snapshots so named are looked at).
"""
import datetime
import re
import sys

UTC = datetime.timezone.utc


def parse_policy(s):
    p = {"prefix": ""}
    for item in filter(None, s.split(",")):
        k, v = item.split("=", 1)
        if k == "within":
            m = re.fullmatch(r"(?:(\d+)y)?(?:(\d+)m)?(?:(\d+)d)?(?:(\d+)h)?", v)
            p[k] = tuple(int(x or 0) for x in m.groups())
        elif k == "prefix":
            p[k] = v
        else:
            p[k] = int(v)
    return p


def add_date(t, years, months, days):
    # Go's AddDate: year and month first (the month normalised into the
    # year), then the day, whose overflow rolls over by plain day count
    y = t.year + years
    mo = t.month + months
    y += (mo - 1) // 12
    mo = (mo - 1) % 12 + 1
    base = datetime.datetime(y, mo, 1, t.hour, t.minute, t.second, t.microsecond, tzinfo=UTC)
    return base + datetime.timedelta(days=t.day - 1 + days)


def bucket(kind, t, nr):
    if kind == "last":
        return nr
    if kind == "hourly":
        return (t.year, t.month, t.day, t.hour)
    if kind == "daily":
        return (t.year, t.month, t.day)
    if kind == "weekly":
        iy, iw, _ = t.isocalendar()
        return (iy, iw)
    if kind == "monthly":
        return (t.year, t.month)
    return t.year


def apply(snaps, policy):
    """snaps: list of (name, seconds); returns the names the rules keep."""
    snaps = [s for s in snaps if s[0].split("@", 1)[1].startswith(policy.get("prefix", ""))]
    snaps.sort(key=lambda s: -s[1])  # newest first (stable)
    keep = set()
    if not snaps:
        return keep
    times = [datetime.datetime.fromtimestamp(s[1], UTC) for s in snaps]
    counts = {k: policy.get(k, 0) for k in ("last", "hourly", "daily", "weekly", "monthly", "yearly")}
    last = {k: None for k in counts}
    limit = None
    if "within" in policy:
        y, m, d, h = policy["within"]
        limit = add_date(times[0], -y, -m, -d) - datetime.timedelta(hours=h)
    for nr, (name, _) in enumerate(snaps):
        t = times[nr]
        if limit is not None and t > limit:
            keep.add(name)
        for k in counts:
            if counts[k] == 0:
                continue
            v = bucket(k, t, nr)
            if last[k] is None or v != last[k] or nr == len(snaps) - 1:
                keep.add(name)
                last[k] = v
                if counts[k] > 0:
                    counts[k] -= 1
    return keep


def prune(snaps, policy, protect):
    """What ferry prune leaves: the rules' set, the protected and the
    newest snapshot, and everything the prefix does not select."""
    pre = policy.get("prefix", "")
    kept = apply(list(snaps), policy) | set(protect)
    if snaps:
        kept.add(max(snaps, key=lambda s: s[1])[0])
    return [s for s in snaps if s[0] in kept or not s[0].split("@", 1)[1].startswith(pre)]


def auto_name(ds, t):
    return "%s@auto-%s" % (ds, t.strftime("%Y%m%dT%H%M%SZ"))


def main():
    cmd = sys.argv[1]
    if cmd == "expect":
        policy = parse_policy(sys.argv[2])
        protect = []
        args = sys.argv[3:]
        while args:
            if args[0] == "--protect":
                protect.append(args[1])
                args = args[2:]
            else:
                sys.exit("bad argument " + args[0])
        snaps = []
        for line in sys.stdin:
            name, secs = line.rstrip("\n").split("\t")
            snaps.append((name, int(secs)))
        for name in sorted(s[0] for s in prune(snaps, policy, protect)):
            print(name)
    elif cmd == "simulate":
        hours = int(sys.argv[2])
        start = datetime.datetime.strptime(sys.argv[3], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        sp, dp = parse_policy(sys.argv[4]), parse_policy(sys.argv[5])
        src, dst = [], []
        for h in range(hours):
            t = start + datetime.timedelta(hours=h)
            secs = int(t.timestamp())
            src.append((auto_name("S", t), secs))
            # sync: every source snapshot newer than the destination's newest
            newest = max((s[1] for s in dst), default=-1)
            dst.extend(("D@" + n.split("@")[1], s) for n, s in src if s > newest)
            base = src[-1][0]  # the source holds what it just sent
            src = prune(src, sp, [base])
            dst = prune(dst, dp, [])
        for n, _ in src:
            print("src", n.split("@")[1])
        for n, _ in dst:
            print("dst", n.split("@")[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
