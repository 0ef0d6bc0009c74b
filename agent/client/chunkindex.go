package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// rebuildIndex indexes the objects already here when the chunk index has never been rebuilt (it was
// lost, or predates rebuilds; see chunkindex.Index.Rebuild), so the download that follows can take
// chunks from them. Runs at most once per process; errors only cost the delta.
func (x *Client) rebuildIndex(ctx context.Context, e *endpoint, idx *chunkindex.Index) {
	if x.indexChecked.Swap(true) {
		return
	}
	start := time.Now()
	n, err := idx.Rebuild(chunkindex.RebuildBytes, chunkindex.RebuildObjects, func(o chunkindex.Object) (hash.Hash, []span.Span, error) {
		if err := ctx.Err(); err != nil {
			return hash.Hash{}, nil, err // stopped: Rebuild leaves the index unmarked for the next process
		}
		file, spans, err := indexObject(ctx, e.cas, o)
		if err != nil && ctx.Err() != nil {
			return hash.Hash{}, nil, ctx.Err() // whatever the plan's request said of it
		}
		if err != nil {
			x.o.Log.Debug().Err(err).Str("oid", o.Oid).Msg("chunk index: object not indexed")
		}
		return file, spans, err
	})
	switch {
	case errors.Is(err, chunkindex.ErrBusy), ctx.Err() != nil:
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
	want, err := lfsobject.ParseOid(o.Oid)
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

// chunkIndex returns the repository's local chunk index (<lfs storage>/xet/chunks, beside the
// objects it names in <lfs storage>/objects, shared by the repository's work trees), or nil when
// the repository is unknown.
func (x *Client) chunkIndex(ctx context.Context) *chunkindex.Index {
	ld, err := x.repoLFSDir(ctx)
	if err != nil {
		return nil
	}
	return chunkindex.Open(filepath.Join(ld, "xet", "chunks"), filepath.Join(ld, "objects"))
}

// recordUpload adds an uploaded object to the chunk index: its registered terms and its chunks
// (upload.Config.KeepEntries) say where each chunk lies in it. The map is written term by term,
// reading each term's chunks from the session's EntryLog, so a large object's chunk list is never
// in memory whole.
func (x *Client) recordUpload(ctx context.Context, obj agent.Object, sess *upload.Session, res *upload.FileResult) {
	if obj.Size < chunkindex.MinBytes || res.Entries == nil {
		return
	}
	idx := x.chunkIndex(ctx)
	if idx == nil {
		return
	}
	for _, f := range sess.Registered() {
		if f.Hash != res.FileHash {
			continue
		}
		if err := recordTerms(idx, obj, f, res.Entries); err != nil {
			x.o.Log.Warn().Err(err).Str("oid", obj.Oid).Msg("upload: the object was not recorded in the local chunk index")
		}
		return
	}
}

// recordTerms writes the map of obj: f's terms laid over its chunks in file order. It fails,
// writing nothing, when they do not cover the chunks exactly or a term's length is not its
// chunks'.
func recordTerms(idx *chunkindex.Index, obj agent.Object, f shard.File, ents *upload.EntryLog) error {
	m, err := idx.NewMap(obj.Oid, obj.Size, f.Hash)
	if err != nil || m == nil {
		return err
	}
	defer m.Abort()
	var buf []hash.Entry
	var pos int64
	k := 0
	for _, t := range f.Terms {
		n := int(t.ChunkEnd) - int(t.ChunkStart)
		if n <= 0 || k+n > ents.Len() {
			return fmt.Errorf("the terms of %s name more chunks than it has (%d)", f.Hash, ents.Len())
		}
		if cap(buf) < n {
			buf = make([]hash.Entry, n)
		}
		buf = buf[:n]
		if err := ents.Read(buf, k); err != nil {
			return err
		}
		sp := span.Span{Pos: pos, Xorb: t.Xorb, Start: t.ChunkStart, Chunks: buf}
		if sp.Bytes() != int64(t.UnpackedBytes) {
			return fmt.Errorf("a term of %s has %d bytes, its chunks %d", f.Hash, t.UnpackedBytes, sp.Bytes())
		}
		if err := m.Add(sp); err != nil {
			return err
		}
		pos += sp.Bytes()
		k += n
	}
	if k != ents.Len() {
		return fmt.Errorf("the terms of %s name %d chunks, it has %d", f.Hash, k, ents.Len())
	}
	return m.Commit()
}

// termRef is one term of a file: chunks [start, end) of xorb, bytes long (-1: not known).
type termRef struct {
	xorb       hash.Hash
	start, end uint32
	bytes      int64
}

// spansOver lays terms over a file's chunks in file order; false when they do not cover the chunks
// exactly or a term's length disagrees with its chunks'.
func spansOver(terms []termRef, ents []hash.Entry) ([]span.Span, bool) {
	var out []span.Span
	var pos int64
	k := 0
	for _, t := range terms {
		n := int(t.end) - int(t.start)
		if n <= 0 || k+n > len(ents) {
			return nil, false
		}
		sp := span.Span{Pos: pos, Xorb: t.xorb, Start: t.start, Chunks: ents[k : k+n]}
		if t.bytes >= 0 && sp.Bytes() != t.bytes {
			return nil, false
		}
		out = append(out, sp)
		pos += sp.Bytes()
		k += n
	}
	return out, k == len(ents)
}
