package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Download reconstructs one file from Xet into git-lfs's temp dir, verified before its path is
// returned: its chunk hashes, its Xet file hash and its size always, and its SHA-256 = oid unless
// the mapping of the oid to the Xet file was verified when it was stored (see xetDownload).
func (x *Client) Download(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	sha, err := lfsobject.ParseOid(obj.Oid)
	if err != nil {
		return agent.Result{}, err
	}
	defer x.allCores(obj.Size)()
	tmp, err := x.tmpDir(ctx)
	if err != nil {
		return agent.Result{}, err
	}
	var e *endpoint
	var file hash.Hash
	var verified bool
	if obj.Action != nil {
		ba, err := parseBatchAction(obj.Action)
		if err != nil {
			return agent.Result{}, err
		}
		if file, err = ba.File(); err != nil {
			return agent.Result{}, err
		}
		e, verified = x.batchEndpoint(ctx, ba), ba.SHA256Verified
	} else if x.networkRemote(ctx) {
		return x.hubDownload(ctx, obj, sha, tmp, progress)
	} else {
		var r *LocalRemote
		if e, r, err = x.standaloneEndpoint(ctx, false); err != nil {
			return agent.Result{}, err
		}
		var size uint64
		found := false
		if e != nil {
			file, size, err = e.local.LookupVerifiedSHA256(ctx, hash.FromSHA256(sha))
			verified = err == nil
			if errors.Is(err, cas.ErrNotFound) {
				file, size, err = e.local.LookupSHA256(ctx, hash.FromSHA256(sha)) // an older store's
			}
			switch {
			case err == nil:
				found = true
				if int64(size) != obj.Size {
					return agent.Result{}, fmt.Errorf("the Xet store %s maps %s to Xet file %s of %d bytes, git-lfs expects %d: it maps that oid to the wrong file; "+
						"pushing the right content again repairs it", e.where, obj.Oid, file, size, obj.Size)
				}
			case errors.Is(err, cas.ErrNotFound) || errors.Is(err, store.ErrNotFound):
			default:
				return agent.Result{}, fmt.Errorf("looking up %s in the Xet store %s: %w", obj.Oid, e.where, err)
			}
		}
		if !found && r == nil {
			return agent.Result{}, fmt.Errorf("object %s is not in the Xet store %s (xet.store / GIT_XET_STORE), and remote %q is not on this machine to look for plain LFS objects", obj.Oid, x.storeDir(), redact.URL(x.init.Remote))
		}
		if !found {
			return x.lfsFallback(ctx, *r, obj, tmp, progress)
		}
	}
	return x.xetDownload(ctx, e, file, verified, obj, sha, tmp, progress)
}

// xetDownload reconstructs file into git-lfs's temp dir tmp, verified against the oid. A file of
// 1 MiB or more copies the chunks it shares with objects already here (the chunk index, and the
// downloads this process completed: Coordinator.Recent) instead of fetching them, resumes what an
// interrupted attempt verified (its partial file, named by the Xet hash), and is recorded in the
// chunk index once complete. In the leader of a fetch's agents, such files that share xorbs take
// turns (Coordinator.DownloadTurn): the versions of a file fetched together each find the chunks
// of the ones before them, and unrelated files go side by side.
//
// verified says the store hashed file to the oid when it registered the mapping. The agent then
// does not hash the download's SHA-256: git-lfs hashes every file a custom adapter hands it and
// refuses one that is not its oid before it stores it (tq/custom.go), so a second pass
// here cost a third of the agent's CPU for nothing. Every chunk hash and the Xet file hash are
// still checked here, so the bytes are the file the server named. Where the mapping is not known
// to be verified (an older store's, the Hub's), a wrong one is likely enough that the agent hashes
// too and its error names the Xet file and the repair.
func (x *Client) xetDownload(ctx context.Context, e *endpoint, file hash.Hash, verified bool, obj agent.Object, sha [32]byte, tmp string, progress func(int64)) (agent.Result, error) {
	var st download.Stats
	private := handoverPath(tmp, obj.Oid)
	req := download.Request{File: file, Size: obj.Size, PrivatePath: true, NoSync: true,
		Progress: progress, Stats: &st, Path: private}
	if !verified {
		req.SHA256 = &sha
	}
	if obj.Size >= chunkindex.MinBytes && x.co.Leading() {
		done, err := x.downloadTurn(ctx, e, &req)
		if err != nil {
			return agent.Result{}, err
		}
		defer done()
	}
	var d *delta
	if obj.Size >= chunkindex.MinBytes {
		d = x.newDelta(ctx, e, obj, tmp, &req)
	}
	err := download.Download(ctx, download.Config{CAS: e.cas, Concurrency: x.downloadConcurrency(e), Adapt: e.down, Log: x.o.Log, BufferedIO: !x.o.DirectIO, Retry: retryPolicy(ctx, x.o.Git)}, req)
	if d != nil && d.part != nil {
		if err == nil {
			// The shared resumable name is let go with its record: another process's download of
			// the file (a second `git lfs pull` in this repository) would write it again while
			// git-lfs moves it into its object store.
			if err = fsretry.Rename(req.Path, private); err == nil {
				req.Path = private
			}
		}
		d.part.Close(err == nil)
	}
	logAdapt(x.o.Log, "download: ranges in flight", e.down)
	if err != nil {
		return agent.Result{}, fmt.Errorf("downloading from %s: %w", e.where, err)
	}
	if d != nil {
		d.record(x, obj, tmp, req.Path)
	}
	if st.Local+st.InPlace > 0 {
		x.o.Log.Info().Str("oid", obj.Oid).Int64("fetched", st.FetchedTerms).Int64("local", st.Local).
			Int64("resumed", st.InPlace).Int("stale_terms", st.LocalStale).Msg("download: delta")
	}
	return agent.Result{Mode: e.mode, Path: req.Path, NewBytes: st.FetchedTerms, DedupedBytes: st.Local + st.InPlace}, nil
}

// handovers numbers the files this process hands git-lfs (handoverPath).
var handovers atomic.Uint64

// handoverPath returns a new name in git-lfs's temp directory tmp for a download of oid to hand
// git-lfs: of this process alone (its pid), and of this download alone.
func handoverPath(tmp, oid string) string {
	return filepath.Join(tmp, fmt.Sprintf("xet-%s-%d-%d", oid, os.Getpid(), handovers.Add(1)))
}

// delta is what a large download reuses of what is on this machine, and what it leaves for the
// next: the chunk index (objects here; nil when the git directory is unknown), its own partial
// record (resumable when an attempt is interrupted; nil when it cannot be kept), and the terms it
// wrote, for the index and the leader's recent downloads.
type delta struct {
	idx   *chunkindex.Index
	part  *chunkindex.Partial
	file  hash.Hash
	mu    sync.Mutex // OnTerm comes from the download's ranges, each on its goroutine
	terms []span.Span
}

// newDelta wires a large download's local sources into req (the leader's recent downloads, the
// chunk index, rebuilt first if it was lost, and the partial record of an earlier attempt, which
// req then resumes in place) and its callbacks (OnPart records the part written, OnTerm keeps the
// terms).
func (x *Client) newDelta(ctx context.Context, e *endpoint, obj agent.Object, tmp string, req *download.Request) *delta {
	d := &delta{idx: x.chunkIndex(ctx), file: req.File}
	path := filepath.Join(tmp, "xet-"+req.File.String()+".part")
	if p, err := chunkindex.OpenPartial(path, req.File, obj.Size); err != nil {
		x.o.Log.Debug().Err(err).Str("oid", obj.Oid).Msg("download: not resumable")
	} else {
		d.part, req.Path, req.Keep = p, path, true
	}
	from := span.Locals{x.co.Recent()}
	if d.idx != nil {
		from = append(from, d.idx)
		x.rebuildIndex(ctx, e, d.idx)
	}
	if d.part != nil {
		from = append(from, d.part)
		req.OnPart = func(sp span.Span) {
			if err := d.part.Add(sp); err != nil {
				x.o.Log.Debug().Err(err).Msg("download: recording a written part")
			}
		}
	}
	req.Local = from
	req.OnTerm = func(sp span.Span) { d.mu.Lock(); d.terms = append(d.terms, sp); d.mu.Unlock() }
	return d
}

// record leaves a verified download at path for the next ones: in the chunk index, and with the
// leader (Coordinator.Downloaded).
func (d *delta) record(x *Client, obj agent.Object, tmp, path string) {
	if d.idx != nil {
		if err := d.idx.Record(obj.Oid, obj.Size, d.file, d.terms); err != nil {
			x.o.Log.Warn().Err(err).Msg("download: could not record the object in the local chunk index")
		}
	}
	x.co.Downloaded(path, tmp, obj.Oid, d.terms)
}

// downloadTurn waits for the turn of download req in the leader (Coordinator.DownloadTurn): its
// plan, asked for here and handed to the download (req.Plan: no second round trip), names the
// xorbs that relate it to the others. A plan that cannot be had takes no turn; the download asks
// again and says why.
func (x *Client) downloadTurn(ctx context.Context, e *endpoint, req *download.Request) (done func(), err error) {
	plan, err := download.Plan(ctx, e.cas, req.File, req.Range, req.Size)
	if err != nil {
		return func() {}, ctx.Err()
	}
	req.Plan = plan
	xorbs := make([]hash.Hash, len(plan.Terms))
	for i, t := range plan.Terms {
		xorbs[i] = t.Hash
	}
	return x.co.DownloadTurn(ctx, e.key, xorbs)
}

// downloadConcurrency is how many ranges one download from e fetches at once: the tuned count
// for a CAS across a network, which hides its latency; one for the store on this machine
// (xet/embedded), where a second range only splits the decoding and hashing that one range does
// between two goroutines, writes past the SHA-256's in-order frontier when the agent hashes one
// (bytes then read back from the file to be hashed), and takes the core git-lfs needs to re-hash
// the file before. A concurrency the user set (Options.Concurrency, GIT_XET_CONCURRENCY) is used
// everywhere.
func (x *Client) downloadConcurrency(e *endpoint) int {
	if e.local != nil && x.o.Concurrency <= 0 {
		return 1
	}
	return x.tune.Download
}
