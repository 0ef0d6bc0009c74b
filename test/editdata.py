#!/usr/bin/env python3
# The benchmarks' data: versions of a random file with scattered edits (test/versions.sh,
# test/netbench.sh).
#   editdata.py versions DIR PREFIX N BYTES PERCENT   writes DIR/PREFIX1..N, each the previous with
#       64 KiB blocks adding up to PERCENT % of it rewritten at random places;
#   editdata.py patch SRC DST COUNT BYTES              writes DST, SRC with COUNT blocks of BYTES
#       rewritten at random places;
#   editdata.py unrelated DIR PREFIX N BYTES           writes DIR/PREFIX1..N, N random files that
#       share nothing (test/netbench.sh's many row).
# The randomness is seeded (VERSIONS_SEED, default 1, and the arguments): every run makes the same files.
import os, random, sys
# Seeded (VERSIONS_SEED) with the mode and the prefix or the files' base names, not directories (a run's
# temp dir): the same data and the same edit places in every run, so that two runs (two builds)
# compare on the same workload.
names = [sys.argv[3]] if sys.argv[1] in ("versions", "unrelated") else [os.path.basename(a) for a in sys.argv[2:4]]
random.seed(":".join([os.environ.get("VERSIONS_SEED", "1"), sys.argv[1]] + names))
def rbytes(n):  # random.randbytes in 1 MiB pieces (one call is limited to 256 MiB)
    return b"".join(random.randbytes(min(1 << 20, n - i)) for i in range(0, n, 1 << 20))
def patch(b, count, block):
    for _ in range(count):
        off = random.randrange(len(b) - block)
        b[off:off + block] = rbytes(block)
if sys.argv[1] == "versions":
    d, prefix, n, size, pct = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    block = 64 << 10
    edits = max(1, round(size * pct / 100 / block))
    b = bytearray(rbytes(size))
    for i in range(1, n + 1):
        if i > 1:
            patch(b, edits, block)
        with open(os.path.join(d, f"{prefix}{i}"), "wb") as f:
            f.write(b)
elif sys.argv[1] == "unrelated":
    d, prefix, n, size = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    for i in range(1, n + 1):
        with open(os.path.join(d, f"{prefix}{i}"), "wb") as f:
            f.write(rbytes(size))
else:
    # DST is a copy of SRC (copy_file_range: no pass of its bytes through this process) rewritten in
    # place: the same blocks at the same places as patch() on SRC's bytes would write, without
    # reading and writing the whole file here (256 MiB: 1.6 s, most of it the kernel's copies).
    import shutil
    shutil.copyfile(sys.argv[2], sys.argv[3])
    count, block = int(sys.argv[4]), int(sys.argv[5])
    with open(sys.argv[3], "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        for _ in range(count):
            off = random.randrange(size - block)
            f.seek(off)
            f.write(rbytes(block))
