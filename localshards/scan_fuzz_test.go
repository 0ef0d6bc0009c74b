package localshards

import (
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// FuzzScan feeds arbitrary bytes to the cache's lean shard reader (parseMeta + scanXorbs, what the
// index load and Add* run on every cached file). It must never panic or index past its arrays, and
// whenever both it and shard.Parse accept a file, the keys it indexes must be exactly the truncated
// chunk hashes of the parsed xorbs, in order. Seeds: testdata/fuzz/FuzzScan.
func FuzzScan(f *testing.F) {
	f.Add(testShard(1, 2, 3).AppendLocal(nil, 1, 2))
	f.Add(testShard(2, 1, 1).AppendLocal(nil, 0, uint64(time.Hour)))
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int64(len(data))
		if size < minShardSize {
			if _, err := parseMeta(data, data, size); err == nil {
				t.Fatal("accepted a file shorter than a shard")
			}
			return
		}
		m, err := parseMeta(data[:shard.HeaderSize], data[size-shard.FooterSize:], size)
		if err != nil {
			return
		}
		if m.xorbOff < shard.HeaderSize || m.xorbEnd > size-shard.FooterSize || m.xorbOff >= m.xorbEnd || m.maxChunk < 0 {
			t.Fatalf("meta out of bounds: %+v", m)
		}
		keys := make([]uint64, m.maxChunk)
		refs := make([]uint32, m.maxChunk)
		n, xorbs, err := scanXorbs(data[m.xorbOff:m.xorbEnd], m.xorbOff, 5, 0, keys, refs, nil)
		if err != nil {
			return
		}
		total := 0
		for _, x := range xorbs {
			if x.base != 5+uint32(total) || x.off < m.xorbOff || x.off+int64(x.n+1)*shard.EntrySize > m.xorbEnd {
				t.Fatalf("xorb info %+v inconsistent", x)
			}
			blk := data[x.off : x.off+int64(x.n+1)*shard.EntrySize]
			chunks, err := decodeXorb(blk, x.hash, x.n)
			if err != nil {
				t.Fatalf("scanned xorb does not decode: %v", err)
			}
			for i, c := range chunks {
				if keys[total+i] != c.Hash.Truncate() || refs[total+i] != x.base+uint32(i) {
					t.Fatalf("entry %d: key/ref mismatch", total+i)
				}
			}
			total += int(x.n)
		}
		if total != n {
			t.Fatalf("scanned %d chunks, xorbs hold %d", n, total)
		}
		p, err := shard.Parse(data)
		if err != nil {
			return
		}
		var want []uint64
		for _, x := range p.Xorbs {
			for _, c := range x.Chunks {
				want = append(want, c.Hash.Truncate())
			}
		}
		if len(want) != n {
			t.Fatalf("shard.Parse sees %d chunks, the scanner %d", len(want), n)
		}
		for i := range want {
			if want[i] != keys[i] {
				t.Fatalf("chunk %d: parse %x, scan %x", i, want[i], keys[i])
			}
		}
	})
}
