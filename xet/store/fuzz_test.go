package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// FuzzPutXorb: any body is either stored under the hash its chunks give or rejected with an
// InvalidError; never a panic, never stored under another hash.
func FuzzPutXorb(f *testing.F) {
	r := loadRef(f)
	f.Add(smallXorb())
	f.Add(r.xorb(3).body[:100])
	s := openStore(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		info, ierr := xorb.Index(body)
		h := r.hashes[0] // a chunk hash: never a xorb hash here
		if ierr == nil {
			h = info.Hash
		}
		_, err := s.PutXorb(ctx, h, bytes.NewReader(body))
		var inv *InvalidError
		if err != nil && !errors.As(err, &inv) {
			t.Fatalf("PutXorb: %v (not an InvalidError)", err)
		}
		if err == nil {
			if ierr != nil {
				t.Fatalf("accepted a body Index rejects: %v", ierr)
			}
			o, n, err := s.OpenXorb(ctx, h)
			if err != nil {
				t.Fatalf("accepted xorb does not open: %v", err)
			}
			o.Close()
			if n != int64(info.RecordsLen) {
				t.Fatalf("records length %d, want %d", n, info.RecordsLen)
			}
		}
	})
}

// smallXorb is a short body with records of each scheme, a good start for mutations.
func smallXorb() []byte {
	text := bytes.Repeat([]byte("id,make,model,year\n"), 20)
	var b []byte
	b = testutil.AppendRecord(b, text, xorb.SchemeLZ4)
	b = testutil.AppendRecord(b, text[:37], xorb.SchemeNone)
	b = testutil.AppendRecord(b, bytes.Repeat([]byte{0, 1, 2, 0xff}, 64), xorb.SchemeBG4LZ4)
	return b
}

// FuzzPutShard: a shard is rejected with an InvalidError or registered, and then each of its files
// reads back in full; never a panic.
func FuzzPutShard(f *testing.F) {
	r := loadRef(f)
	xa, xb := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9)
	f1 := r.file(seg{xa, 1, 3}, seg{xb, 0, 2})
	f2 := r.file(seg{xb, 4, 5})
	f.Add(r.shardBytes([]*testFile{f1, f2}, xa, xb))
	f.Add(r.shardBytes([]*testFile{f2}))
	// Footer-bearing shapes other clients send: a local shard with lookup tables, and
	// huggingface.js's footer with zero lookup offsets.
	if sh, err := shard.Parse(r.shardBytes([]*testFile{f1, f2}, xa, xb)); err == nil {
		f.Add(sh.AppendLocal(nil, 1, 2))
		up := sh.AppendUpload(nil)
		binary.LittleEndian.PutUint64(up[40:], shard.FooterSize)
		foot := make([]byte, shard.FooterSize)
		binary.LittleEndian.PutUint64(foot[0:], shard.FooterVersion)
		binary.LittleEndian.PutUint64(foot[8:], shard.HeaderSize)
		binary.LittleEndian.PutUint64(foot[192:], uint64(len(up)))
		f.Add(append(up, foot...))
	}
	s := openStore(f)
	mustPutXorb(f, s, xa)
	mustPutXorb(f, s, xb)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := s.PutShard(ctx, "fuzz", body)
		var inv *InvalidError
		if err != nil {
			if !errors.As(err, &inv) {
				t.Fatalf("PutShard: %v (not an InvalidError)", err)
			}
			return
		}
		sh, keyed, err := shard.ParseUpload(body)
		if err != nil || keyed {
			t.Fatalf("accepted a shard that does not parse as an upload: %v (keyed %v)", err, keyed)
		}
		for _, file := range sh.Files {
			got, err := readFile(ctx, s, file.Hash, nil)
			if err != nil || uint64(len(got)) != file.Size() {
				t.Fatalf("accepted file %s: %d bytes, %v", file.Hash, len(got), err)
			}
		}
	})
}

// FuzzShardCost: no shard costs more than its registration may: the bytes read back and hashed for
// its SHA-256 checks stay within FreeHashBytes (the repository's uploads brought nothing more), the
// chunk references it makes the store check within MaxShardChunkRefs (MaxShardHashedRefs with the
// file hash), whatever it names and however often. Seeds: item 5's shard (a file naming a xorb of zeros over and over, a wrong SHA-256).
func FuzzShardCost(f *testing.F) {
	r := loadRef(f)
	xa := r.xorb(0, 1, 2, 3, 4)
	zeros := testutil.ZerosXorb(16) // 2 MiB of zeros
	f.Add(zeroFile(f, zeros, 1024).body)
	f.Add(zeroFile(f, zeros, 1).body)
	f.Add(r.shardBytes([]*testFile{r.file(seg{xa, 0, 5}, seg{xa, 1, 3})}, xa))
	s := openStore(f)
	ctx := context.Background()
	a := Access{Repo: "fuzz", User: "fuzzer"}
	if _, err := s.PutXorbAs(ctx, a, zeros.Hash, bytes.NewReader(zeros.Body), xorb.Follows{}); err != nil {
		f.Fatal(err)
	}
	if _, err := s.PutXorbAs(ctx, a, xa.hash, bytes.NewReader(xa.body), xorb.Follows{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s.credits.take(a.Repo, s.now())
		before := s.hashed.Load()
		_, cost, err := s.putShard(ctx, a, body, modeClient, nil)
		var inv *InvalidError
		if err != nil && !errors.As(err, &inv) {
			t.Fatalf("PutShardAs: %v (not an InvalidError)", err)
		}
		if n := s.hashed.Load() - before; n > FreeHashBytes || n != cost.hashed {
			t.Fatalf("hashed %d bytes (the registration counted %d), budget %d", n, cost.hashed, FreeHashBytes)
		}
		if cost.refs+cost.knownRefs > MaxShardChunkRefs || cost.refs > MaxShardHashedRefs {
			t.Fatalf("checked %d chunk references, %d of them with the file hash", cost.refs+cost.knownRefs, cost.refs)
		}
	})
}
