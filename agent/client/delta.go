package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/agent"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// chunkIndex returns the repository's local chunk index (.git/lfs/xet/chunks, naming objects in
// .git/lfs/objects), or nil when the git directory is unknown.
func (x *xetTransferer) chunkIndex(ctx context.Context) *chunkindex.Index {
	gd, err := x.repoGitDir(ctx)
	if err != nil {
		return nil
	}
	return chunkindex.Open(filepath.Join(gd, "lfs", "xet", "chunks"), filepath.Join(gd, "lfs", "objects"))
}

// xetDownload reconstructs file into git-lfs's temp dir tmp, verified against the oid. A file of
// 1 MiB or more copies the chunks it shares with objects already here (the chunk index, and the
// downloads this process completed: recentDownloads) instead of fetching them, resumes what an
// interrupted attempt verified (its partial file, named by the Xet hash), and is recorded in the
// chunk index once complete. In the leader of a fetch's agents, such files that share xorbs take
// turns (turns.go): the versions of a file fetched together each find the chunks of the ones
// before them, and unrelated files go side by side.
func (x *xetTransferer) xetDownload(ctx context.Context, e *endpoint, file hash.Hash, obj agent.Object, sha [32]byte, tmp string, progress func(int64)) (agent.Result, error) {
	var st download.Stats
	req := download.Request{File: file, SHA256: &sha, Size: obj.Size, PrivatePath: true, NoSync: true,
		Progress: progress, Stats: &st, Path: filepath.Join(tmp, fmt.Sprintf("xet-%s-%d", obj.Oid, os.Getpid()))}
	if obj.Size >= chunkindex.MinBytes && x.sharing.leading.Load() {
		done, err := x.downloadTurn(ctx, e, &req)
		if err != nil {
			return agent.Result{}, err
		}
		defer done()
	}
	var idx *chunkindex.Index
	var part *chunkindex.Partial
	var terms []span.Span
	if obj.Size >= chunkindex.MinBytes {
		idx = x.chunkIndex(ctx)
		path := filepath.Join(tmp, "xet-"+file.String()+".part")
		p, err := chunkindex.OpenPartial(path, file, obj.Size)
		if err != nil {
			x.o.Log.Debug().Err(err).Str("oid", obj.Oid).Msg("download: not resumable")
		} else {
			part, req.Path, req.Keep = p, path, true
		}
		from := span.Locals{&x.recent}
		if idx != nil {
			from = append(from, idx)
		}
		if part != nil {
			from = append(from, part)
		}
		req.Local = from
		if part != nil {
			req.OnPart = func(sp span.Span) {
				if err := part.Add(sp); err != nil {
					x.o.Log.Debug().Err(err).Msg("download: recording a written part")
				}
			}
		}
		var mu sync.Mutex // OnTerm comes from the download's ranges, each on its goroutine
		req.OnTerm = func(sp span.Span) { mu.Lock(); terms = append(terms, sp); mu.Unlock() }
		if idx != nil {
			x.rebuildIndex(ctx, e, idx)
		}
	}
	err := download.Download(ctx, download.Config{CAS: e.cas, Concurrency: x.downloadConcurrency(e), Adapt: e.down, Log: x.o.Log, BufferedIO: !x.o.DirectIO, Retry: retryPolicy(ctx, x.o.Git)}, req)
	if part != nil {
		part.Close(err == nil)
	}
	logAdapt(x.o.Log, "download: ranges in flight", e.down)
	if err != nil {
		return agent.Result{}, fmt.Errorf("downloading from %s: %w", e.where, err)
	}
	if idx != nil {
		if err := idx.Record(obj.Oid, obj.Size, file, terms); err != nil {
			x.o.Log.Warn().Err(err).Msg("download: could not record the object in the local chunk index")
		}
	}
	if obj.Size >= chunkindex.MinBytes && x.sharing.leading.Load() {
		if err := x.recent.add(req.Path, recentLink(tmp, obj.Oid), terms); err != nil {
			x.o.Log.Debug().Err(err).Msg("download: not offered to the next ones")
		}
	}
	if st.Local+st.InPlace > 0 {
		x.o.Log.Info().Str("oid", obj.Oid).Int64("fetched", st.FetchedTerms).Int64("local", st.Local).
			Int64("resumed", st.InPlace).Int("stale_terms", st.LocalStale).Msg("download: delta")
	}
	return agent.Result{Mode: e.mode, Path: req.Path, NewBytes: st.FetchedTerms, DedupedBytes: st.Local + st.InPlace}, nil
}

// downloadTurn waits for the turn of download req in the leader (turns.go): its plan, asked for
// here and handed to the download (req.Plan: no second round trip), names the xorbs that relate
// it to the others. A plan that cannot be had takes no turn; the download asks again and says why.
func (x *xetTransferer) downloadTurn(ctx context.Context, e *endpoint, req *download.Request) (done func(), err error) {
	plan, err := download.Plan(ctx, e.cas, req.File, req.Range, req.Size)
	if err != nil {
		return func() {}, ctx.Err()
	}
	req.Plan = plan
	kin := sample{}
	for _, t := range plan.Terms {
		kin[t.Hash] = struct{}{}
	}
	return x.sharing.turns.take(ctx, e, "", kin)
}

// downloadConcurrency is how many ranges one download from e fetches at once: the tuned count
// for a CAS across a network, which hides its latency; one for the store on this machine
// (xet/embedded), where a second range only splits the decoding and hashing that one range does
// between two goroutines, writes past the SHA-256's in-order frontier (bytes then read back from
// the file to be hashed), and takes the core git-lfs needs to re-hash the file before. A
// concurrency the user set (Options.Concurrency, GIT_XET_CONCURRENCY) is used everywhere.
func (x *xetTransferer) downloadConcurrency(e *endpoint) int {
	if e.local != nil && x.o.Concurrency <= 0 {
		return 1
	}
	return x.tune.Download
}

// recordUpload adds an uploaded object to the chunk index: its registered terms and its chunks
// (upload.Config.KeepEntries) say where each chunk lies in it.
func (x *xetTransferer) recordUpload(ctx context.Context, obj agent.Object, sess *upload.Session, res *upload.FileResult) {
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
		spans, ok := uploadSpans(f, res.Entries)
		if !ok {
			x.o.Log.Warn().Str("oid", obj.Oid).Msg("upload: terms and chunks disagree; not indexed")
			return
		}
		if err := idx.Record(obj.Oid, obj.Size, f.Hash, spans); err != nil {
			x.o.Log.Warn().Err(err).Msg("upload: could not record the object in the local chunk index")
		}
		return
	}
}

// uploadSpans lays a file's terms over its chunks in file order.
func uploadSpans(f shard.File, ents []hash.Entry) ([]span.Span, bool) {
	terms := make([]termRef, len(f.Terms))
	for i, t := range f.Terms {
		terms[i] = termRef{xorb: t.Xorb, start: t.ChunkStart, end: t.ChunkEnd, bytes: -1}
	}
	return spansOver(terms, ents)
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
