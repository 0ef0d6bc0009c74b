package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Upload stores one file through Xet and returns once every xorb and the shard registering it
// are stored.
func (x *Client) Upload(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	sha, err := lfsobject.ParseOid(obj.Oid)
	if err != nil {
		return agent.Result{}, err
	}
	defer x.allCores(obj.Size)()
	var e *endpoint
	var mode agent.Mode
	switch {
	case obj.Action != nil:
		ba, err := parseBatchAction(obj.Action)
		if err != nil {
			return agent.Result{}, err
		}
		e = x.batchEndpoint(ctx, ba)
	case x.networkRemote(ctx):
		ba, err := x.hubUploadAction(ctx, obj)
		if err != nil {
			return agent.Result{}, err
		}
		if ba == nil { // the Hub has it already
			return agent.Result{Mode: agent.ModeHub, DedupedBytes: obj.Size}, nil
		}
		e, mode = x.batchEndpoint(ctx, ba), agent.ModeHub
	default:
		if e, _, err = x.standaloneEndpoint(ctx, true); err != nil {
			return agent.Result{}, err
		}
	}
	done, err := x.co.UploadTurn(ctx, e.key, obj.Path, obj.Size)
	if err != nil {
		return agent.Result{}, err
	}
	defer done()
	return x.uploadTo(ctx, e, mode, obj, sha, progress)
}

// openUpload opens the file of an upload, checking that it has the size git-lfs gave.
func openUpload(obj agent.Object) (*os.File, error) {
	f, err := os.Open(obj.Path)
	if err != nil {
		return nil, fmt.Errorf("reading the file to upload: %w", err)
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, fmt.Errorf("reading the file to upload: %w", err)
	} else if fi.Size() != obj.Size {
		f.Close()
		return nil, fmt.Errorf("%s has %d bytes, git-lfs said %d; run `git lfs fsck`", obj.Path, fi.Size(), obj.Size)
	}
	return f, nil
}

// checkUploaded refuses what an upload read when it is not the object git-lfs named: another size,
// or another SHA-256 than the oid (a file registered under a wrong oid would make that oid
// undownloadable).
func checkUploaded(obj agent.Object, sha [32]byte, res *upload.FileResult) error {
	if res.Size != obj.Size {
		return fmt.Errorf("read %d bytes of %s, want %d (was the file changed during the upload?)", res.Size, obj.Path, obj.Size)
	}
	if res.SHA256 != sha {
		return fmt.Errorf("%s has SHA-256 %x, not the oid %s git-lfs gave: refusing to register it under that oid (was the file changed during the upload? run `git lfs fsck`)",
			obj.Path, res.SHA256, obj.Oid)
	}
	return nil
}

// uploadConfig is the configuration of an upload session to e of size bytes (one file's, or a
// batch's: UploadBatch).
func (x *Client) uploadConfig(ctx context.Context, e *endpoint, size int64) upload.Config {
	// Big xorbs are asked about before they are sent: a push interrupted after some were accepted
	// resumes without sending them again (one request per xorb of 8 MiB or more is noise).
	cfg := upload.Config{CAS: e.cas, Policy: xorb.PolicyAuto, Concurrency: x.tune.Upload, GlobalDedupe: size >= GlobalDedupeMinBytes,
		Log: x.o.Log, ResumeCheckBytes: ResumeCheckBytes, KeepEntries: size >= chunkindex.MinBytes,
		// A server hashes every chunk it receives, so incompressible chunks can be sent from the
		// file rather than copied into xorb bodies; the embedded store trusts what it is given.
		Lend: e.local == nil, SizeHint: size}
	if e.cache != nil {
		cfg.Cache = e.cache
	}
	if size >= SmallUploadBytes {
		// Large uploads to one endpoint take turns in a leader (UploadTurn), so one controller sets
		// their uploads in flight; the many small sessions a leader runs at once keep their own
		// count.
		cfg.Adapt = e.up
	}
	if d, err := x.tmpDir(ctx); err == nil {
		cfg.TempDir = d // the spill of the session's chunk lists; else the system's temp dir
	}
	return cfg
}

// uploadTo uploads obj to the CAS of e (mode: the Result's, else e's).
func (x *Client) uploadTo(ctx context.Context, e *endpoint, mode agent.Mode, obj agent.Object, sha [32]byte, progress func(int64)) (agent.Result, error) {
	f, err := openUpload(obj)
	if err != nil {
		return agent.Result{}, err
	}
	defer f.Close()
	cfg := x.uploadConfig(ctx, e, obj.Size)
	defer logAdapt(x.o.Log, "upload: xorb uploads in flight", cfg.Adapt)
	res, sess, err := x.uploadFile(ctx, cfg, e, obj, sha, f, progress)
	var stale *upload.StaleError
	if errors.As(err, &stale) {
		// The shard named xorbs this remote does not hold: the cache listed them (the remote was
		// recreated, or restored from an older backup), or the remote's gc removed ones this upload
		// sent before its shard came. Once more without the cache: the data is sent again.
		x.o.Log.Warn().Err(err).Str("oid", obj.Oid).Msg("upload: the remote lacks xorbs the shard names; uploading again without the shard cache")
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return agent.Result{}, fmt.Errorf("reading the file to upload: %w", err)
		}
		cfg.Cache = nil
		res, sess, err = x.uploadFile(ctx, cfg, e, obj, sha, f, progress)
	}
	if err != nil {
		return agent.Result{}, err
	}
	defer sess.Close()
	x.recordUpload(ctx, obj, sess, res)
	if mode == "" {
		mode = e.mode
	}
	return agent.Result{Mode: mode, NewBytes: res.NewBytes, DedupedBytes: res.DedupedBytes}, nil
}

// uploadFile uploads f (obj) in a session of its own and registers it; the session is returned
// open (the caller closes it), or closed on error.
func (x *Client) uploadFile(ctx context.Context, cfg upload.Config, e *endpoint, obj agent.Object, sha [32]byte, f io.Reader,
	progress func(int64)) (*upload.FileResult, *upload.Session, error) {
	sess := upload.NewSession(cfg)
	ok := false
	defer func() {
		if !ok {
			sess.Close()
		}
	}()
	// The SHA-256 is computed while chunking (no second read), never taken from the oid on its
	// own word: a file registered under a wrong oid would make that oid undownloadable. A CAS
	// that checks every shard's SHA-256s against the content (e.verifiesSHA256) is given the oid
	// instead; a wrong one then fails the shard's upload there, and the hashing is done once.
	var claim *[32]byte
	if e.verifiesSHA256 {
		claim = &sha
	}
	res, err := sess.Upload(ctx, f, claim, progress)
	if err != nil {
		return nil, nil, fmt.Errorf("uploading to %s: %w", e.where, err)
	}
	if err := checkUploaded(obj, sha, res); err != nil {
		return nil, nil, err
	}
	if err := sess.Finish(ctx); err != nil {
		return nil, nil, fmt.Errorf("storing the data of %s at %s: %w", obj.Oid, e.where, err)
	}
	ok = true
	return res, sess, nil
}

// SmallUploadBytes: an upload smaller than this is small. It keeps its session's own count of
// xorb uploads in flight (uploadConfig); a leader of a push's agents stores the small ones in
// batches (UploadBatch), which share their xorbs (to a network CAS), shards and fsyncs, and gives
// larger ones turns (Coordinator.UploadTurn). A larger file gains little from a batch (its fixed
// costs are a small part of its work) and is uploaded in a session of its own.
const SmallUploadBytes = 1 << 20

// UploadBatch uploads objs, small uploads of one BatchTarget (SmallBatch), in one session whose one
// shard registers each of them (Finish returns once every xorb and that shard are stored). To the
// embedded store each file's chunks keep xorbs of their own (upload.Config.SeparateFiles: what
// uploading each on its own would have made) and the files share one fsync; to a network CAS the
// files share xorbs, up to the xorb limits, so the batch costs one request per xorb and one for
// the shard rather than one of each per file. Neither asks the CAS's global dedupe: the shard names
// only xorbs this session sent and the ones the shard cache lists (a CAS that refuses those fails
// the batch, and each file's own upload drops them, upload.StaleError).
//
// errs[i] is set when objs[i] is not the object git-lfs named (oid, size, SHA-256: it is
// registered under the SHA-256 it has, which is true, not under the oid) or cannot be read, and
// the others go on; err, when the batch failed as a whole (the CAS or the store, a refused shard:
// a quota, a CAS that checks SHA-256s finding one file's wrong): nothing of it is registered then,
// and each file is to be uploaded on its own.
func (x *Client) UploadBatch(ctx context.Context, objs []agent.Object) (res []agent.Result, errs []error, err error) {
	if len(objs) > 0 && objs[0].Action == nil && x.networkRemote(ctx) {
		return x.uploadBatchHub(ctx, objs)
	}
	e, err := x.uploadBatchEndpoint(ctx, objs)
	if err != nil {
		return nil, nil, err
	}
	return x.uploadBatchTo(ctx, e, objs)
}

// uploadBatchTo is UploadBatch's session at e.
func (x *Client) uploadBatchTo(ctx context.Context, e *endpoint, objs []agent.Object) (res []agent.Result, errs []error, err error) {
	var size int64
	for _, o := range objs {
		size += o.Size
	}
	cfg := x.uploadConfig(ctx, e, size)
	cfg.GlobalDedupe, cfg.KeepEntries = false, false // per file: each is small (see uploadConfig)
	// Lent payloads are read from their file when its xorb is sent, after addFile closed it; a
	// small file's bytes are copied instead.
	cfg.Lend = false
	cfg.SeparateFiles = e.local != nil
	sess := upload.NewSession(cfg)
	defer sess.Close()
	res, errs = make([]agent.Result, len(objs)), make([]error, len(objs))
	for i, o := range objs {
		r, jerr, err := addFile(ctx, sess, o, e.verifiesSHA256)
		if err != nil {
			return nil, nil, fmt.Errorf("uploading a batch of %d small files to %s: %w", len(objs), e.where, err)
		}
		if errs[i] = jerr; jerr == nil {
			res[i] = agent.Result{Mode: e.mode, NewBytes: r.NewBytes, DedupedBytes: r.DedupedBytes}
		}
	}
	if err := sess.Finish(ctx); err != nil {
		return nil, nil, fmt.Errorf("storing a batch of %d small files at %s: %w", len(objs), e.where, err)
	}
	return res, errs, nil
}

// uploadBatchEndpoint is the endpoint of a batch's objects: the embedded store when none has an
// action, else the CAS of their actions, which must all name the same one.
func (x *Client) uploadBatchEndpoint(ctx context.Context, objs []agent.Object) (*endpoint, error) {
	if len(objs) == 0 {
		return nil, errors.New("an empty batch of uploads")
	}
	if objs[0].Action == nil {
		for _, o := range objs {
			if o.Action != nil {
				return nil, errors.New("a batch of uploads mixes the embedded store and a CAS")
			}
		}
		e, _, err := x.standaloneEndpoint(ctx, true)
		return e, err
	}
	var first *batchAction
	for _, o := range objs {
		if o.Action == nil {
			return nil, errors.New("a batch of uploads mixes the embedded store and a CAS")
		}
		ba, err := parseBatchAction(o.Action)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = ba
		} else if ba.CasURL != first.CasURL {
			return nil, errors.New("a batch of uploads names two CAS URLs")
		}
	}
	return x.batchEndpoint(ctx, first), nil
}

// addFile uploads the file of obj into sess. jerr: this file is not the object git-lfs named
// (oid, size, SHA-256; see openUpload, checkUploaded) or cannot be read, and the others go on; err:
// the upload into the session failed (the session is not to be finished). claimOid: the CAS checks
// each file's SHA-256 against its content (endpoint.verifiesSHA256), so the oid is claimed rather
// than hashed here; a wrong one fails the shard there.
func addFile(ctx context.Context, sess *upload.Session, obj agent.Object, claimOid bool) (res *upload.FileResult, jerr, err error) {
	sha, jerr := lfsobject.ParseOid(obj.Oid)
	if jerr != nil {
		return nil, jerr, nil
	}
	f, jerr := openUpload(obj)
	if jerr != nil {
		return nil, jerr, nil
	}
	defer f.Close()
	var claim *[32]byte
	if claimOid {
		claim = &sha
	}
	if res, err = sess.Upload(ctx, f, claim, nil); err != nil {
		return nil, nil, err
	}
	return res, checkUploaded(obj, sha, res), nil
}
