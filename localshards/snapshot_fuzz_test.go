package localshards

import (
	"bytes"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSnapshot: readSnapshot on arbitrary bytes (with a valid checksum) never panics or allocates beyond the file's size, and
// a snapshot it accepts can be probed (every slot index stays in bounds) and resolves refs only to
// xorbs inside their shard's size. Seeds: testdata/fuzz/FuzzSnapshot (a real snapshot of 2 shards).
func FuzzSnapshot(f *testing.F) {
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Fix the checksum up so that the fuzzer reaches the structural checks behind it.
		if len(data) >= snapHeaderSize+4 {
			data = append([]byte(nil), data...)
			le.PutUint32(data[len(data)-4:], crc32.Checksum(data[:len(data)-4], castagnoli))
		}
		s, err := parseSnapshot(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		v := &view{xorbs: s.xorbs, segs: []*segment{s.seg}}
		for i, k := range s.seg.keys {
			s.seg.has(k)
			if _, ok := v.xorbOf(s.seg.refs[i]); ok && s.seg.refs[i] == noRef {
				t.Fatal("empty slot resolved to a xorb")
			}
		}
		for _, x := range s.xorbs {
			if int(x.shard) >= len(s.shards) || x.off+int64(x.n+1)*48 > s.shards[x.shard].m.size {
				t.Fatalf("xorb %+v outside its shard", x)
			}
		}
	})
}

// TestWriteSnapshotSeed regenerates the committed FuzzSnapshot seed when LOCALSHARDS_WRITE_SEED=1.
func TestWriteSnapshotSeed(t *testing.T) {
	if os.Getenv("LOCALSHARDS_WRITE_SEED") != "1" {
		return
	}
	dir := t.TempDir()
	snapshotFixture(t, dir, 2)
	b, err := os.ReadFile(filepath.Join(dir, ShardCacheSubdir, snapshotName))
	if err != nil {
		t.Fatal(err)
	}
	out := "go test fuzz v1\n[]byte(\""
	for _, c := range b {
		out += "\\x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
	}
	out += "\")\n"
	if err := os.MkdirAll("testdata/fuzz/FuzzSnapshot", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/fuzz/FuzzSnapshot/real-2-shards", []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
