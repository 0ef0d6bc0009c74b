package xetfile

import (
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// The mount holds a plan to the download's rule on chunks per byte (download.CheckChunkCount): a
// server's plan of terms that each name 8,192 chunks of one byte is refused before any read is
// sized by it; a plan of 64 KiB chunks is taken.
func TestPlanOfOneByteChunksIsRefused(t *testing.T) {
	x := hash.Hash{1}
	xorbs := map[hash.Hash][]casapi.XorbFetch{x: {{URL: "https://cas.example/x"}}}
	plan := func(terms int, chunkBytes uint32) *casapi.ReconstructionV2 {
		p := &casapi.ReconstructionV2{Xorbs: xorbs}
		for range terms {
			p.Terms = append(p.Terms, casapi.Term{Hash: x, UnpackedLength: xorb.MaxChunks * chunkBytes, Range: casapi.ChunkRange{Start: 0, End: xorb.MaxChunks}})
		}
		return p
	}
	src := Source{File: hash.Hash{2}}
	if _, err := newPlan(src, plan(200, 1), 200*xorb.MaxChunks); err == nil || !strings.Contains(err.Error(), "chunks for") {
		t.Fatalf("200 terms of %d one-byte chunks: %v, want the plan refused for its chunks", xorb.MaxChunks, err)
	}
	if _, err := newPlan(src, plan(2, 64<<10), 2*xorb.MaxChunks*64<<10); err != nil {
		t.Fatalf("2 terms of %d chunks of 64 KiB: %v", xorb.MaxChunks, err)
	}
}
