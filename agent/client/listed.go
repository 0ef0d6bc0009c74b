package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Bounds of a listed download (DownloadListed).
const (
	listedFetchBytes = 256 << 20 // the merged ranges held in memory at once, at most
	listedFetches    = 8         // merged ranges fetched at once
)

// DownloadListed downloads the small files of the LFS batch answer obj's action belongs to, from
// the plans our server's listing carries (casapi.BatchListing): the ranges the listing merged per
// xorb are fetched (listedFetches at once, listedFetchBytes at most), and each planned file is
// reconstructed from them into git-lfs's temp dir as Download does, every chunk and the file
// verified (xet/download). objs are the listed objects, res[i] the download of objs[i] (its Path
// set) when errs[i] is nil; obj itself (its caller downloads it), a file the listing gave no plan,
// or whose ranges did not come, has an error and goes its own way. err: no listing.
func (x *Client) DownloadListed(ctx context.Context, obj agent.Object) (objs []agent.Object, res []agent.Result, errs []error, err error) {
	objs, l, e, err := x.readListing(ctx, obj)
	if err != nil {
		return nil, nil, nil, err
	}
	tmp, err := x.tmpDir(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	mem := &listedCAS{Client: e.cas, ranges: map[hash.Hash][]fetchedRange{}}
	if err := mem.fetch(ctx, l.Fetches); err != nil {
		return nil, nil, nil, err
	}
	res, errs = make([]agent.Result, len(objs)), make([]error, len(objs))
	for i, o := range objs {
		if o.Oid == obj.Oid {
			errs[i] = errors.New("downloaded on its own") // by the caller, meanwhile
			continue
		}
		res[i], errs[i] = x.downloadPlanned(ctx, mem, e, o, l.Plans[l.Objects[i].XetHash], tmp)
	}
	return objs, res, errs, nil
}

// downloadPlanned reconstructs o from plan p through mem into tmp, verified.
func (x *Client) downloadPlanned(ctx context.Context, mem *listedCAS, e *endpoint, o agent.Object, p *casapi.ReconstructionV2, tmp string) (agent.Result, error) {
	if p == nil {
		return agent.Result{}, errors.New("the listing has no plan of it")
	}
	sha, err := lfsobject.ParseOid(o.Oid)
	if err != nil {
		return agent.Result{}, err
	}
	ba, err := parseBatchAction(o.Action)
	if err != nil {
		return agent.Result{}, err
	}
	file, err := ba.File()
	if err != nil {
		return agent.Result{}, err
	}
	var st download.Stats
	req := download.Request{File: file, Plan: p, SHA256: &sha, Size: o.Size, PrivatePath: true, NoSync: true, Stats: &st,
		// A name of its own: the object's own download, should it come to one, writes another, and
		// so does a second listing of it while git-lfs moves this one.
		Path: handoverPath(tmp, "listed-"+o.Oid)}
	if err := download.Download(ctx, download.Config{CAS: mem, Concurrency: 1, Log: x.o.Log, BufferedIO: true}, req); err != nil {
		return agent.Result{}, err
	}
	return agent.Result{Mode: e.mode, Path: req.Path, NewBytes: st.FetchedTerms}, nil
}

// listedCAS serves a listed download's fetches from the merged ranges fetched before, and plans
// nothing: a range it lacks fails the file, which then goes its own way.
type listedCAS struct {
	cas.Client
	mu     sync.Mutex
	ranges map[hash.Hash][]fetchedRange
}

type fetchedRange struct {
	r    casapi.ByteRange
	data []byte
}

// fetch fetches the merged ranges of fetches, within the bounds; a range that fails is left out.
func (m *listedCAS) fetch(ctx context.Context, fetches map[hash.Hash][]casapi.XorbFetch) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listedFetches)
	var total uint64
	for h, fs := range fetches {
		for _, f := range fs {
			for _, xr := range f.Ranges {
				if !xr.Bytes.Valid() {
					continue // left out: its files go their own way
				}
				if total += xr.Bytes.Len(); total > listedFetchBytes {
					return g.Wait()
				}
				g.Go(func() error {
					m.fetchOne(gctx, h, f, xr.Bytes)
					return nil
				})
			}
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

func (m *listedCAS) fetchOne(ctx context.Context, h hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) {
	body, err := m.Client.Fetch(ctx, h, f, r)
	if err != nil {
		return
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, int64(r.Len())))
	if err != nil || uint64(len(data)) != r.Len() {
		return
	}
	m.mu.Lock()
	m.ranges[h] = append(m.ranges[h], fetchedRange{r: r, data: data})
	m.mu.Unlock()
}

// Fetch answers r of xorb h from a merged range that holds it.
func (m *listedCAS) Fetch(_ context.Context, h hash.Hash, _ casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, fr := range m.ranges[h] {
		// fetchOne kept fr.data of exactly fr.r.Len() bytes, of a valid fr.r.
		if r.Valid() && fr.r.Start <= r.Start && r.End <= fr.r.End {
			return io.NopCloser(bytes.NewReader(fr.data[r.Start-fr.r.Start : r.End-fr.r.Start+1])), nil
		}
	}
	return nil, fmt.Errorf("bytes %d-%d of xorb %s were not fetched with the listing", r.Start, r.End, h)
}

// Reconstruct plans nothing: a listed file's plan is the listing's.
func (m *listedCAS) Reconstruct(context.Context, hash.Hash, *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	return nil, errors.New("a listed download is not planned again")
}

// XorbFooter offers no footer.
func (m *listedCAS) XorbFooter(context.Context, hash.Hash, casapi.XorbFetch) (*xorb.Footer, error) {
	return nil, cas.ErrNoFooter
}
