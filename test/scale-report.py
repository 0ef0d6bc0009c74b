#!/usr/bin/env python3
# test/scale.sh's report: gathers the JSON Lines of points into one JSON document and prints the
# table and issue 44's targets (met or missed: a missed target is reported, never a failure).
#   scale-report.py POINTS.jsonl OUT.json KNOBS_JSON COMMIT
import datetime, json, os, sys

points_path, out_path, knobs, commit = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
points = []
with open(points_path) as f:
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line:
            continue
        try:
            p = json.loads(line)
        except ValueError as e:
            sys.exit("scale-report: %s line %d is not JSON: %s" % (points_path, n, e))
        for k in ("row", "case", "side", "x", "x_unit", "metric", "value", "unit"):
            if k not in p:
                sys.exit("scale-report: %s line %d has no %r" % (points_path, n, k))
        points.append(p)

OURS = ("agent", "xet-server")  # the project's side; every other side is a baseline
ROW_ORDER = ["many-files", "big-file", "history", "clients", "index"]


def order(row):
    return ROW_ORDER.index(row) if row in ROW_ORDER else len(ROW_ORDER)


def fmt(v, unit):
    if unit == "bytes":
        return "%.1f MB" % (v / 1e6) if v >= 1e6 else "%.1f KB" % (v / 1e3)
    if unit == "s":
        return "%.2f s" % v
    return "%g %s" % (v, "" if unit == "1" else unit)


by = {}  # (row, case, x, metric) -> {side: point}
for p in points:
    by.setdefault((p["row"], p["case"], p["x"], p["metric"]), {})[p["side"]] = p


def value(row, case, side, x, metric):
    p = by.get((row, case, x, metric), {}).get(side)
    return None if p is None else p["value"]


print()
print("%-11s %-9s %10s  %-26s %14s %14s %8s" % ("row", "case", "size", "metric", "ours", "baseline", "ratio"))
for key in sorted(by, key=lambda k: (order(k[0]), k[0], k[1], k[2], k[3])):
    sides = by[key]
    ours = [s for s in sides if s in OURS]
    base = [s for s in sides if s not in OURS]
    p = next(iter(sides.values()))
    o = sides[ours[0]]["value"] if ours else None
    b = sides[base[0]]["value"] if base else None
    ratio = "%.2fx" % (o / b) if o is not None and b else "-"
    print("%-11s %-9s %10s  %-26s %14s %14s %8s" % (key[0], key[1], "%g %s" % (p["x"], p["x_unit"]), key[3],
          fmt(o, p["unit"]) if o is not None else "-", fmt(b, p["unit"]) if b is not None else "-", ratio))

targets = []


def target(name, figure, limit, met):
    """met: True or False against limit, None where the figure is only shown (a baseline's, or no limit)."""
    targets.append({"target": name, "figure": figure, "limit": limit, "met": met})


# Linear or better: the cost per unit at the largest size against the smallest (rows 1 and 2).
sizes = {}
for p in points:
    if p["row"] in ("many-files", "big-file"):
        sizes.setdefault((p["row"], p["case"], p["side"], p["metric"]), set()).add(p["x"])
for (row, case, side, metric), xs in sorted(sizes.items()):
    if not metric.endswith("_s") or len(xs) < 2:
        continue
    lo, hi = min(xs), max(xs)
    a, b = value(row, case, side, lo, metric), value(row, case, side, hi, metric)
    if a and b is not None:
        g = (b / hi) / (a / lo)
        target("%s %s %s: %s per unit, %g against %g" % (row, case, side, metric, hi, lo),
               "%.2fx" % g, "<= 1.2x" if side in OURS else "(baseline)", g <= 1.2 if side in OURS else None)
# A push at the last version costs what a push at version 2 costs (row 3).
for case, side in sorted({(p["case"], p["side"]) for p in points if p["row"] == "history" and p["metric"] == "push_s"}):
    vs = sorted(p["x"] for p in points if p["row"] == "history" and p["side"] == side and p["metric"] == "push_s")
    if len(vs) >= 3:
        for metric in ("push_s", "push_bytes_sent"):
            a, b = value("history", case, side, 2, metric), value("history", case, side, vs[-1], metric)
            if a and b is not None:
                target("history %s %s: %s at version %g against version 2" % (case, side, metric, vs[-1]),
                       "%.2fx" % (b / a), "<= 1.2x" if side in OURS else "(baseline)", b / a <= 1.2 if side in OURS else None)
    fa = value("history", case, side, vs[-1], "fetch_all_bytes_received") if vs else None
    st = value("history", case, side, vs[-1], "store_bytes") if vs else None
    if fa is not None and st:
        target("history %s %s: fetch --all bytes against the remote's store" % (case, side),
               "%.2fx (%s of %s)" % (fa / st, fmt(fa, "bytes"), fmt(st, "bytes")), "(shown)", None)
# Memory: the agent's peak RSS at every size.
rss = [p for p in points if p["side"] == "agent" and p["metric"].endswith("peak_rss_mb")]
if rss:
    top = max(rss, key=lambda p: p["value"])
    target("agent peak RSS, every row and size (largest: %s %s %g %s, %s)" % (top["row"], top["case"], top["x"], top["x_unit"], top["metric"]),
           "%.1f MB" % top["value"], "<= 256 MB", top["value"] <= 256)
# Many files at the largest size: push <= 1.3x, clone <= 1.2x plain git-lfs.
for case in sorted({p["case"] for p in points if p["row"] == "many-files"}):
    xs = [p["x"] for p in points if p["row"] == "many-files" and p["case"] == case]
    hi = max(xs)
    for metric, limit in (("push_s", 1.3), ("clone_s", 1.2)):
        a, b = value("many-files", case, "agent", hi, metric), value("many-files", case, "git-lfs", hi, metric)
        if a is not None and b:
            target("many-files %s at %g files: %s agent / git-lfs" % (case, hi, metric), "%.2fx" % (a / b),
                   "<= %.1fx" % limit, a / b <= limit)

print()
print("targets (issue 44, rows 1-3; a missed target is reported, not a failure):")
for t in targets:
    status = {True: "met", False: "missed", None: "-"}[t["met"]]
    print("  %-8s %-78s %-30s %s" % (status, t["target"], t["figure"], t["limit"]))

mem = 0
with open("/proc/meminfo") as f:
    for line in f:
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) * 1024
doc = {
    "run": {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "machine": {"nproc": os.cpu_count(), "mem_bytes": mem},
        "knobs": knobs,
    },
    "points": points,
    "targets": targets,
}
tmp = out_path + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
os.replace(tmp, out_path)
print()
print("points: %d, written to %s" % (len(points), out_path))
