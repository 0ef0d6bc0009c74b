package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// rebuildIndex indexes the objects already here when the chunk index has never been rebuilt (it was
// lost, or predates rebuilds; see chunkindex.Index.Rebuild), so the download that follows can take
// chunks from them. Runs at most once per process; errors only cost the delta.
func (x *xetTransferer) rebuildIndex(ctx context.Context, e *endpoint, idx *chunkindex.Index) {
	if x.indexChecked.Swap(true) {
		return
	}
	start := time.Now()
	n, err := idx.Rebuild(chunkindex.RebuildBytes, chunkindex.RebuildObjects, func(o chunkindex.Object) (hash.Hash, []span.Span, error) {
		file, spans, err := indexObject(ctx, e.cas, o)
		if err != nil {
			x.o.Log.Debug().Err(err).Str("oid", o.Oid).Msg("chunk index: object not indexed")
		}
		return file, spans, err
	})
	switch {
	case errors.Is(err, chunkindex.ErrBusy):
	case err != nil:
		x.o.Log.Warn().Err(err).Msg("chunk index: rebuilding")
	case n > 0:
		x.o.Log.Info().Int("objects", n).Dur("took", time.Since(start)).Msg("chunk index rebuilt from the objects here")
	}
}

// indexObject finds which xorb chunks local object o holds: it is chunked and hashed here (its
// SHA-256 must be its oid, so a damaged copy is never indexed), and the CAS's plan of the Xet file
// hash that gives says which chunks of which xorbs its terms are.
func indexObject(ctx context.Context, c cas.Client, o chunkindex.Object) (hash.Hash, []span.Span, error) {
	want, err := oidBytes(o.Oid)
	if err != nil {
		return hash.Hash{}, nil, err
	}
	f, err := os.Open(o.Path)
	if err != nil {
		return hash.Hash{}, nil, err
	}
	defer f.Close()
	sum, err := chunk.Summarize(f)
	if err != nil {
		return hash.Hash{}, nil, err
	}
	if sum.SHA256 != want || sum.Size != o.Size {
		return hash.Hash{}, nil, errors.New("the object's content does not match its oid")
	}
	plan, err := download.Plan(ctx, c, sum.FileHash, nil, o.Size)
	if err != nil {
		return hash.Hash{}, nil, err
	}
	terms := make([]termRef, len(plan.Terms))
	for i, t := range plan.Terms {
		terms[i] = termRef{xorb: t.Hash, start: t.Range.Start, end: t.Range.End, bytes: int64(t.UnpackedLength)}
	}
	spans, ok := spansOver(terms, sum.Chunks)
	if !ok || plan.OffsetIntoFirstRange != 0 {
		return hash.Hash{}, nil, fmt.Errorf("the CAS's plan of %s does not match the object's chunks", sum.FileHash)
	}
	return sum.FileHash, spans, nil
}
