package download_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// TestPeakRSSLongTerms downloads a highly compressible file (XET_RSS_LONG_BYTES, default 300 MiB:
// repeated text, then a float32 tensor of small values) stored the way huggingface.js stores it,
// in xorbs cut at 64 MiB serialized, so each term covers far more than 64 MiB raw; the child's peak
// RSS must stay within XET_RSS_LIMIT_MB (default 256): a term is never held whole. Skipped with
// -short and under -race.
func TestPeakRSSLongTerms(t *testing.T) {
	if os.Getenv("XET_RSS_LONG_CHILD") != "" {
		longTermsChild(t)
		return
	}
	if testing.Short() {
		t.Skip("peak-RSS check of a 300 MiB download; runs without -short")
	}
	if raceEnabled {
		t.Skip("peak RSS under -race measures the race detector; runs in the ordinary build")
	}
	limit := envInt(t, "XET_RSS_LIMIT_MB", 256)
	n := envInt(t, "XET_RSS_LONG_BYTES", 300<<20)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSSLongTerms$", "-test.v")
	cmd.Env = append(os.Environ(), "XET_RSS_LONG_CHILD=1", "XET_RSS_LONG_BYTES="+strconv.FormatInt(n, 10), "XET_RSS_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var setup, down, longest int64
	if i := strings.Index(string(out), "rss: "); i >= 0 {
		fmt.Sscanf(string(out[i:]), "rss: setup %d download %d longest-term %d", &setup, &down, &longest)
	}
	if down == 0 || longest <= xorb.MaxBytes {
		t.Fatalf("child did not report a download of terms over 64 MiB:\n%s", out)
	}
	t.Logf("%d bytes, longest term %d MiB: peak RSS %d MB after setup, %d MB after the download (limit %d MB)",
		n, longest>>20, setup>>20, down>>20, limit)
	if down>>20 > limit {
		t.Fatalf("peak RSS %d MB over the limit of %d MB", down>>20, limit)
	}
}

// longChunk returns chunk i (of 128 KiB) of the compressible test file of n bytes: text in the first
// half, float32 values below 0.01 in the second.
func longChunk(i int, n int64, buf []byte) []byte {
	off := int64(i) * xorb.MaxChunkRaw
	b := buf[:min(int64(xorb.MaxChunkRaw), n-off)]
	if off < n/2 {
		line := fmt.Sprintf("%08d,sensor-%02d,reading ok,", i, i%17)
		for k := 0; k < len(b); k += len(line) {
			copy(b[k:], line)
		}
		return b
	}
	for k := 0; k+4 <= len(b); k += 4 {
		binary.LittleEndian.PutUint32(b[k:], math.Float32bits(float32((i*31+k)%97)/1e4))
	}
	return b
}

// longTermsChild stores the file as huggingface.js would (xorbs cut at 64 MiB serialized, one term
// per xorb), then downloads it and reports its peak RSS.
func longTermsChild(t *testing.T) {
	ctx := context.Background()
	n := envInt(t, "XET_RSS_LONG_BYTES", 300<<20)
	st, err := store.Open(filepath.Join(os.Getenv("XET_RSS_DIR"), "store"), store.Options{MetaCacheBytes: store.EmbeddedMetaCacheBytes})
	if err != nil {
		t.Fatal(err)
	}
	sh := &shard.Shard{Version: shard.HeaderVersion}
	var terms []shard.Term
	var fileEntries []hash.Entry
	var ver []hash.Hash
	sum := sha256.New()
	buf := make([]byte, xorb.MaxChunkRaw)
	var longest int64
	chunks := int((n + xorb.MaxChunkRaw - 1) / xorb.MaxChunkRaw)
	for i := 0; i < chunks; {
		var body []byte
		var entries []hash.Entry
		var xc []shard.XorbChunk
		var raw uint32
		for ; i < chunks && len(entries) < xorb.MaxChunks && len(body)+xorb.RecordHeaderSize+xorb.MaxChunkCompressed <= xorb.MaxSerializedBytes; i++ {
			c := longChunk(i, n, buf)
			sum.Write(c)
			h := hash.Chunk(c)
			body = testutil.AppendRecord(body, c, xorb.SchemeLZ4)
			entries = append(entries, hash.Entry{Hash: h, Size: uint64(len(c))})
			xc = append(xc, shard.XorbChunk{Hash: h, RawStart: raw, RawLen: uint32(len(c))})
			raw += uint32(len(c))
		}
		xh := hash.Merkle(entries)
		if _, err := st.PutXorbBytes(ctx, xh, body); err != nil {
			t.Fatal(err)
		}
		sh.Xorbs = append(sh.Xorbs, shard.Xorb{Hash: xh, BytesInXorb: raw, Chunks: xc})
		terms = append(terms, shard.Term{Xorb: xh, UnpackedBytes: raw, ChunkStart: 0, ChunkEnd: uint32(len(entries))})
		hs := make([]hash.Hash, len(entries))
		for k, e := range entries {
			hs[k] = e.Hash
		}
		ver = append(ver, hash.Verification(hs))
		fileEntries = append(fileEntries, entries...)
		longest = max(longest, int64(raw))
	}
	fh := hash.File(fileEntries)
	f, err := shard.UploadFile(fh, terms, ver, [32]byte(sum.Sum(nil)))
	if err != nil {
		t.Fatal(err)
	}
	sh.Files = []shard.File{f}
	sh.Sort()
	if _, err := st.PutShard(ctx, "", sh.AppendUpload(nil)); err != nil {
		t.Fatal(err)
	}
	setup := maxRSS()
	want := [32]byte(sum.Sum(nil))
	p := filepath.Join(os.Getenv("XET_RSS_DIR"), "out")
	if err := download.Download(ctx, download.Config{CAS: embedded.New(st, ""), Concurrency: 1}, download.Request{
		File: fh, Size: n, SHA256: &want, Path: p}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rss: setup %d download %d longest-term %d\n", setup, maxRSS(), longest)
}
