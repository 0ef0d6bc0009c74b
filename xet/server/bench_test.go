package server

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// bigFile is a 1 GiB file stored once per test binary: 16 xorbs of 64 MiB of random data (64 KiB
// chunks, stored uncompressed), registered under namespace "bench" by one shard.
var bigFile struct {
	once sync.Once
	dir  string
	file hash.Hash
	oid  string
	err  error
}

const bigFileSize = 1 << 30

// Every goroutine the package starts is joined by whoever started it: none is left when the tests
// end. The benchmarks' big file is removed then.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if bigFile.dir != "" {
			os.RemoveAll(bigFile.dir)
		}
		os.Exit(code)
	}))
}

func setupBigFile(b *testing.B) (*store.Store, hash.Hash, string) {
	bigFile.once.Do(func() { bigFile.err = buildBigFile() })
	if bigFile.err != nil {
		b.Fatal(bigFile.err)
	}
	st, err := store.Open(bigFile.dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return st, bigFile.file, bigFile.oid
}

func buildBigFile() error {
	dir, err := os.MkdirTemp("", "xet-server-bench-")
	if err != nil {
		return err
	}
	bigFile.dir = dir
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	const chunkSize = 64 << 10
	buf := make([]byte, 64<<20)
	sum := sha256.New()
	var entries []hash.Entry
	var chunkHashes []hash.Hash
	var terms []shard.Term
	bld := xorb.NewBuilder(xorb.PolicyNone)
	for done := 0; done < bigFileSize; done += len(buf) {
		if _, err := crand.Read(buf); err != nil {
			return err
		}
		sum.Write(buf)
		for off := 0; off < len(buf); off += chunkSize {
			c := buf[off : off+chunkSize]
			h := hash.Chunk(c)
			if !bld.Fits(len(c)) {
				return fmt.Errorf("64 MiB of 64 KiB chunks does not fit one xorb")
			}
			bld.Add(c, h)
			entries = append(entries, hash.Entry{Hash: h, Size: chunkSize})
			chunkHashes = append(chunkHashes, h)
		}
		x := bld.Finish()
		if _, err := st.PutXorb(ctx, x.Hash, bytes.NewReader(x.Body)); err != nil {
			return err
		}
		terms = append(terms, shard.Term{Xorb: x.Hash, UnpackedBytes: uint32(x.RawBytes), ChunkStart: 0, ChunkEnd: uint32(len(x.Chunks))})
	}
	var digest [32]byte
	copy(digest[:], sum.Sum(nil))
	bigFile.file = hash.File(entries)
	bigFile.oid = hex.EncodeToString(digest[:])
	f := testutil.NewFile(bigFile.file, terms, chunkHashes, digest)
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}}
	_, err = st.PutShard(ctx, "bench", sh.AppendUpload(nil))
	return err
}

func benchServer(b *testing.B, st *store.Store) *httptest.Server {
	srv, err := New(Config{Store: st, Secret: testSecret, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	return hs
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		DisableCompression:  true,
	}}
}

// BenchmarkServeXorbRanges1GiB: plan a 1 GiB file (GET /v2/reconstructions) and fetch every signed
// range (16 x 64 MiB, 4 in flight) over 127.0.0.1, as a Xet client downloads.
func BenchmarkServeXorbRanges1GiB(b *testing.B) {
	st, file, _ := setupBigFile(b)
	hs := benchServer(b, st)
	client := benchClient()
	b.SetBytes(bigFileSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := client.Get(hs.URL + "/v2/reconstructions/" + file.String())
		if err != nil {
			b.Fatal(err)
		}
		var p casapi.ReconstructionV2
		err = json.NewDecoder(res.Body).Decode(&p)
		res.Body.Close()
		if err != nil || len(p.Terms) != 16 {
			b.Fatalf("plan: %v, %d terms", err, len(p.Terms))
		}
		var g errgroup.Group
		g.SetLimit(4)
		var mu sync.Mutex
		var total int64
		for _, fetches := range p.Xorbs {
			for _, f := range fetches {
				for _, r := range f.Ranges {
					g.Go(func() error {
						req, _ := http.NewRequest("GET", f.URL, nil)
						req.Header.Set("Range", r.Bytes.Header())
						res, err := client.Do(req)
						if err != nil {
							return err
						}
						defer res.Body.Close()
						if res.StatusCode != http.StatusPartialContent {
							return fmt.Errorf("status %d", res.StatusCode)
						}
						n, err := io.Copy(io.Discard, res.Body)
						mu.Lock()
						total += n
						mu.Unlock()
						return err
					})
				}
			}
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		if total < bigFileSize {
			b.Fatalf("fetched %d bytes", total)
		}
	}
}

// BenchmarkBridgeDownload1GiB: the basic-transfer bridge streams the 1 GiB file (reconstructed from
// the xorbs, SHA-256 checked on the way) over 127.0.0.1.
func BenchmarkBridgeDownload1GiB(b *testing.B) {
	st, _, oid := setupBigFile(b)
	hs := benchServer(b, st)
	client := benchClient()
	b.SetBytes(bigFileSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := client.Get(hs.URL + "/bench.git/info/lfs/objects/" + oid)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil || n != bigFileSize || res.StatusCode != 200 {
			b.Fatalf("bridge: %d, %d bytes, %v", res.StatusCode, n, err)
		}
	}
}
