package upload_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// answerCAS is the store, but answers every global-dedupe query with a given (hostile) body.
type answerCAS struct {
	*embedded.CAS
	answer []byte
}

func (c *answerCAS) QueryChunk(ctx context.Context, h hash.Hash) ([]byte, error) {
	return append([]byte(nil), c.answer...), nil
}

// FuzzGlobalDedupeAnswer uploads a file whose first chunk is stored while the CAS answers its
// dedupe query with a hostile shard. The upload may dedupe or not, succeed or fail, but never
// panics or hangs, and a file it registers downloads intact: a bad answer must not make the
// session reference chunks that are not the file's.
//
// Seeds: the real answer of the store for the file's first chunk, and the Hub's global-dedupe
// answer captured from the Hub (testdata/fuzz/FuzzGlobalDedupeAnswer).
func FuzzGlobalDedupeAnswer(f *testing.F) {
	first := testutil.RandomBytes(300<<10, 61)
	ctx := context.Background()
	local := embeddedtest.New(f)
	uploadFiles(f, upload.Config{CAS: local}, first)
	if real, err := local.QueryChunk(ctx, chunkEntries(first)[0].entry.Hash); err == nil {
		f.Add(real)
	} else {
		f.Fatalf("fixture: the store has no dedupe answer for the first chunk: %v", err)
	}
	var n atomic.Uint64
	f.Fuzz(func(t *testing.T, answer []byte) {
		// A file new to the store (its own tail) whose first 200 KiB are the stored file's.
		file := append(append([]byte(nil), first[:200<<10]...), testutil.RandomBytes(50<<10, 1000+n.Add(1))...)
		c := &answerCAS{CAS: local, answer: answer}
		s := upload.NewSession(upload.Config{CAS: c, GlobalDedupe: true, QuerySpacing: 1})
		start := time.Now()
		r, err := s.Upload(ctx, bytesReader(file), nil, nil)
		if err == nil {
			err = s.Finish(ctx)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("upload with a hostile dedupe answer took %v", took)
		}
		if err != nil {
			return
		}
		if r.NewBytes+r.DedupedBytes != int64(len(file)) {
			t.Fatalf("new %d + deduped %d != %d", r.NewBytes, r.DedupedBytes, len(file))
		}
		downloadEq(t, local, r, file)
	})
}
