#!/usr/bin/env python3
"""Read the header of a safetensors file and one of its tensors through `git xet-transfer mount`,
with Python's standard library alone.

    git xet-transfer mount --background /tmp/model
    python3 docs/examples/safetensors_mount.py /tmp/model/model.safetensors [TENSOR]

A safetensors file is an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range (after the header), then the tensors' bytes. Through the mount, only the
bytes read cross the network (in whole chunks of about 64 KiB, checked against their hashes): the
header and the one tensor, not the file.
"""
import json
import os
import struct
import sys

# struct codes of the dtypes this example prints values of
FORMATS = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "I16": "h", "I8": "b", "U8": "B", "BOOL": "?"}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: safetensors_mount.py FILE [TENSOR]")
    path = sys.argv[1]
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > 100 << 20:
            sys.exit(f"{path}: a header of {n} bytes: not a safetensors file")
        header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        names = sorted(header)
        print(f"{path}: {len(names)} tensors: {', '.join(names[:8])}{' …' if len(names) > 8 else ''}")
        name = sys.argv[2] if len(sys.argv) == 3 else names[0]
        if name not in header:
            sys.exit(f"no tensor {name!r}")
        t = header[name]
        start, end = t["data_offsets"]
        f.seek(8 + n + start)
        data = f.read(end - start)
    size = os.path.getsize(path)
    read = 8 + n + len(data)
    print(f"{name}: dtype {t['dtype']}, shape {t['shape']}, {len(data)} bytes")
    code = FORMATS.get(t["dtype"])
    if code:
        width = struct.calcsize(code)
        k = min(4, len(data) // width)
        values = struct.unpack(f"<{k}{code}", data[: k * width])
        print("first values: " + ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values))
    print(f"read {read} of {size} bytes ({100 * read / size:.2f} %)")


if __name__ == "__main__":
    main()
