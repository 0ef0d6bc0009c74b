package client

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"

	"github.com/git-lfs/git-lfs/v3/config"
	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitnet"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkindex"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Options configure the Xet client. Zero fields take defaults. The command fills them from git
// config and the environment (which no package below the command reads).
type Options struct {
	Log zerolog.Logger
	Git Git // where the repository is (default: the current directory)
	// Cache is the shard cache: its root (one folder per CAS URL or store directory; "" = no shard
	// cache) and its limits (localshards.Options.SizeLimit, MaxEntries; zero = the defaults).
	Cache CacheOptions
	// HTTPClient is for every request of the client (the CAS and the URLs its answers give, the token
	// routes, the Hub); default: internal/gitnet's, which sends each as git-lfs would (the proxy,
	// TLS, client certificate, extra headers and cookies git config and Credentials.OS give).
	HTTPClient *http.Client
	// Warnings receives the one warning of a client that does not verify TLS certificates
	// (http.sslVerify=false); the command gives stderr.
	Warnings  io.Writer
	UserAgent string // default cas.DefaultUserAgent()
	// StoreDir, when set, returns the embedded store's directory for standalone mode, overriding
	// the default <remote's git dir>/xet when not "" (xet.store or GIT_XET_STORE). It is called at
	// most once per Transferer, when a request first needs it (never in a process given no
	// request), so the command may read git config in it.
	StoreDir func() string
	// SetProcs lowers GOMAXPROCS to the process's share (Tune); off in tests that share a process.
	SetProcs bool
	// StallTimeout is how long an answer may send nothing before it is abandoned and fetched again
	// (GIT_XET_STALL_TIMEOUT); 0: the CAS client's default (2 minutes).
	StallTimeout time.Duration
	// Concurrency, when positive, is the xorb uploads and ranges in flight per process
	// (GIT_XET_CONCURRENCY), instead of the process's share (Tune).
	Concurrency int
	// NoShare keeps each process's conversation with git-lfs in that process (GIT_XET_SHARE=0).
	NoShare bool
	// DirectIO writes downloads with O_DIRECT instead of through the page cache (GIT_XET_DIRECT_IO=1).
	DirectIO bool
	// Ref is the revision Hub-mode uploads ask a write token for (GIT_XET_REF); "" = xet.ref, else
	// the current branch's upstream (uploads) or the current branch, else main.
	Ref string
	// Credentials are the credential sources the environment gives (HF_TOKEN, the token file, the
	// environment git-lfs's credential helpers and ssh read).
	Credentials credentials.Env
}

// CacheOptions locate and bound the shard cache.
type CacheOptions struct {
	Root       string
	SizeLimit  int64
	MaxEntries int64
}

// newHTTPClient is the client's HTTP client: git-lfs's transport for each URL from the repository's
// config snapshot, whose wait for headers is the stall timeout too (an answer whose headers do not
// come is a stall). The snapshot is read at the first request.
func newHTTPClient(o Options) *http.Client {
	stall := o.StallTimeout
	if stall <= 0 {
		stall = cas.DefaultStallTimeout
	}
	return gitnet.Client(gitnet.Options{
		Config:       func() *config.Configuration { return gitrepo.Open(o.Git.Dir).LFSConfiguration(o.Credentials.OS) },
		StallTimeout: stall,
		Warnings:     o.Warnings,
	})
}

// AllCoresBytes: a transfer of at least this many bytes runs with GOMAXPROCS = NumCPU while it
// lasts. The share Tune gives each process suits many objects moving at once; a single big file
// needs every core for its chunk hashing, SHA-256, decoding and compression. When all processes are
// busy with big files the kernel shares the cores between them anyway.
const AllCoresBytes = 16 << 20

// allCores raises GOMAXPROCS for a transfer of size bytes (see AllCoresBytes); the returned func
// puts the process's share back.
func (x *xetTransferer) allCores(size int64) func() {
	if !x.o.SetProcs || size < AllCoresBytes || x.procs() >= runtime.NumCPU() {
		return func() {}
	}
	runtime.GOMAXPROCS(runtime.NumCPU())
	return func() { runtime.GOMAXPROCS(x.procs()) }
}

// ResumeCheckBytes is the size from which an upload asks the CAS whether it already holds a xorb
// before sending it (see upload.Config.ResumeCheckBytes).
const ResumeCheckBytes = 8 << 20

// New returns the agent.Opener of the Xet client: batch mode when a request carries an action
// (the CAS from X-Xet-* headers), standalone mode otherwise (the embedded store of a local
// remote, falling back to plain LFS objects kept in that remote).
func New(o Options) agent.Opener {
	return func(ctx context.Context, init agent.Init) (agent.Transferer, error) {
		t := Tune(runtime.NumCPU(), init.ConcurrentTransfers, o.Concurrency)
		if o.SetProcs {
			runtime.GOMAXPROCS(t.Procs)
		}
		o := o.withDefaults()
		o.Log.Debug().Int("procs", t.Procs).Int("upload_concurrency", t.Upload).
			Int("download_concurrency", t.Download).Msg("tuned")
		x := &xetTransferer{o: o, init: init, tune: t, findRemote: ResolveLocalRemote, storeDir: sync.OnceValue(o.storeDir)}
		x.hubs = hubAccess{git: o.Git, env: o.Credentials, remote: init.Remote, operation: init.Operation, httpClient: o.HTTPClient, userAgent: o.UserAgent}
		x.sharing.off = o.NoShare
		x.sharing.batcher.x = x
		return x, nil
	}
}

// storeDir is the directory StoreDir names ("" when unset).
func (o Options) storeDir() string {
	if o.StoreDir == nil {
		return ""
	}
	return o.StoreDir()
}

// withDefaults fills the HTTP client and the user agent when they are not set.
func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = newHTTPClient(o)
	}
	if o.UserAgent == "" {
		o.UserAgent = cas.DefaultUserAgent()
	}
	return o
}

// endpoint is a CAS and the shard cache used with it.
type endpoint struct {
	mode  agent.Mode
	cas   cas.Client
	cache *localshards.Cache // nil when the cache could not be opened (uploads go on without it)
	local *embedded.CAS      // embedded mode
	where string             // for messages: CAS URL or store path
	// up and down set the xorb uploads and range fetches in flight of a network endpoint, adapting
	// to its link (Tuning); nil for the embedded store (the fixed counts).
	up, down *concurrency.Controller
	// verifiesSHA256: the CAS refuses a shard whose files do not hash to the SHA-256 it claims
	// (batchAction.VerifiesSHA256), so an upload claims the oid instead of hashing the file.
	verifiesSHA256 bool
}

type xetTransferer struct {
	o    Options
	init agent.Init
	tune Tuning

	// Values found on first use, each on its own (internal/lazy): a leader serving several
	// conversations never waits on a lock held across git, the network or opening a store.
	endpoints lazy.Map[string, *endpoint] // by CAS URL (batch), store dir (embedded), "hub:"+route
	remote    lazy.Value[LocalRemote]     // standalone mode
	// findRemote resolves the local remote (ResolveLocalRemote; a test's may block).
	findRemote func(ctx context.Context, g Git, operation, remote string) (LocalRemote, error)
	gitDir     lazy.Value[string]
	storeDir   func() string                // Options.StoreDir, called once; "" = the remote's own
	hubs       hubAccess                    // hub mode, and the Hub's token routes of batch mode
	endpoint   lazy.Value[gitrepo.Endpoint] // the remote's LFS endpoint for init's operation
	ref        lazy.Value[string]           // hub mode: the revision of the token routes

	sharing sharing         // the transfers handed to, or served for, the other agents of a push or fetch (share.go)
	recent  recentDownloads // the large downloads this process completed (recent.go)

	indexChecked atomic.Bool // the chunk index was rebuilt if it needed to be (rebuildIndex)
	tmpMade      atomic.Bool // git-lfs's temp directory exists (made once per process)
}

func (x *xetTransferer) Close() error {
	var errs []error
	if g := x.sharing.group.Load(); g != nil { // first: what it serves uses the endpoints
		errs = append(errs, g.Close())
	}
	x.sharing.batcher.close() // its runners use the endpoints too
	errs = append(errs, x.recent.close())
	for _, e := range x.endpoints.Found() {
		if e.cache != nil {
			errs = append(errs, e.cache.Close())
		}
		if e.local != nil { // the store's pack, and the zeros kept ahead in it
			errs = append(errs, e.local.Store().Close())
		}
	}
	return errors.Join(errs...)
}

// GlobalDedupeMinBytes: smaller files do not ask the CAS's global dedupe (a round trip to save at
// most a few chunks; a whole small file already stored is known from the batch answer or the oid).
const GlobalDedupeMinBytes = 1 << 20

// MergeOwnShardBytes is the size at which an agent writes the merged cache shard of its small uploads
// (localshards.Options.MergeOwnBytes): a push of thousands of small files adds a few shard files to
// the cache, not one per file.
const MergeOwnShardBytes = 4 << 20

func (x *xetTransferer) openCache(endpointName string) *localshards.Cache {
	root := x.o.Cache.Root
	if root == "" {
		x.o.Log.Debug().Msg("no shard cache (uploads dedupe only within a file and by asking the CAS)")
		return nil
	}
	c, err := localshards.Open(localshards.EndpointDir(root, endpointName), localshards.Options{Log: x.o.Log, MergeOwnBytes: MergeOwnShardBytes,
		SizeLimit: x.o.Cache.SizeLimit, MaxEntries: x.o.Cache.MaxEntries})
	if err != nil {
		x.o.Log.Warn().Err(err).Msg("opening the shard cache; going on without it")
		return nil
	}
	return c
}

// batchEndpoint returns the CAS client for a batch action, one per CAS URL per process (its token
// source refreshes through the action's href).
func (x *xetTransferer) batchEndpoint(ctx context.Context, ba *batchAction) *endpoint {
	e, _ := x.endpoints.Get(ctx, ba.CasURL, func(ctx context.Context) (*endpoint, error) { return x.newBatchEndpoint(ctx, ba), nil })
	return e
}

func (x *xetTransferer) newBatchEndpoint(ctx context.Context, ba *batchAction) *endpoint {
	e := &endpoint{mode: agent.ModeBatch, cas: actionCAS(ctx, x.o, ba, &x.hubs), cache: x.openCache(ba.CasURL), where: redact.URL(ba.CasURL), verifiesSHA256: ba.VerifiesSHA256}
	e.up, e.down = x.tune.adaptive()
	return e
}

// actionCAS is the CAS client of a batch action, its token renewed as batchRefresher says.
func actionCAS(ctx context.Context, o Options, ba *batchAction, h *hubAccess) cas.Client {
	ts := cas.NewRefreshingToken(ba.Token, ba.Exp, batchRefresher(o, ba, h))
	return cas.NewHTTP(cas.HTTPOptions{
		Endpoint:     ba.CasURL,
		Token:        ts,
		SessionID:    ba.SessionID,
		UserAgent:    o.UserAgent,
		HTTPClient:   o.HTTPClient,
		Log:          o.Log,
		StallTimeout: o.StallTimeout,
		Retry:        retryPolicy(ctx, o.Git),
	})
}

// batchRefresher is how a batch action's CAS token is renewed: at href with the action's own
// Authorization when it has one (xet-server's refresh credential), else with the user's credential
// (the Hub, whose actions carry only the X-Xet-* headers).
func batchRefresher(o Options, ba *batchAction, h *hubAccess) func(ctx context.Context) (casapi.Token, error) {
	if lfsbatch.Header(ba.Auth, "Authorization") != "" || ba.Href == "" {
		return refresher(o.HTTPClient, ba.Href, ba.Auth, o.UserAgent)
	}
	return func(ctx context.Context) (casapi.Token, error) {
		hc, err := h.get(ctx)
		if err != nil {
			return casapi.Token{}, err
		}
		return hc.Token(ctx, ba.Href, ba.SessionID)
	}
}

// localRemote resolves the remote of init once.
func (x *xetTransferer) localRemote(ctx context.Context) (LocalRemote, error) {
	return x.remote.Get(ctx, func(ctx context.Context) (LocalRemote, error) {
		return x.findRemote(ctx, x.o.Git, x.init.Operation, x.init.Remote)
	})
}

// standaloneEndpoint finds the embedded store of standalone mode (action null): the directory
// xet.store / GIT_XET_STORE names, for any remote, else the store of the local remote. r is the
// local remote when the remote is on this machine (nil with xet.store set and a network remote).
// With create false, e is nil when the store does not exist yet.
func (x *xetTransferer) standaloneEndpoint(ctx context.Context, create bool) (e *endpoint, r *LocalRemote, err error) {
	if x.storeDir() != "" {
		if lr, err := x.localRemote(ctx); err == nil {
			r = &lr
		}
		e, err = x.embeddedEndpoint(ctx, LocalRemote{}, create)
		return e, r, err
	}
	lr, err := x.localRemote(ctx)
	if err != nil {
		return nil, nil, err
	}
	e, err = x.embeddedEndpoint(ctx, lr, create)
	return e, &lr, err
}

// embeddedEndpoint opens the embedded store of a local remote. With create false (downloads) a
// missing store is not created: it returns nil, and the caller falls back to plain LFS objects.
func (x *xetTransferer) embeddedEndpoint(ctx context.Context, r LocalRemote, create bool) (*endpoint, error) {
	dir := x.storeDir()
	if dir == "" {
		dir = r.StoreDir()
	}
	if !create && !isDir(dir) {
		if e, ok := x.endpoints.Peek(dir); ok {
			return e, nil
		}
		return nil, nil
	}
	return x.endpoints.Get(ctx, dir, func(context.Context) (*endpoint, error) { return x.openEmbedded(dir) })
}

// openEmbedded opens the embedded store in dir.
func (x *xetTransferer) openEmbedded(dir string) (*endpoint, error) {
	st, err := store.Open(dir, store.Options{Log: x.o.Log, MetaCacheBytes: store.EmbeddedMetaCacheBytes})
	if err != nil {
		return nil, fmt.Errorf("opening the Xet store %s of remote %q: %w", dir, redact.URL(x.init.Remote), err)
	}
	local := embedded.New(st, "")
	return &endpoint{mode: agent.ModeEmbedded, cas: local, local: local, cache: x.openCache(dir), where: dir}, nil
}

// repoGitDir is the git directory of the repository the agent serves (asked once).
func (x *xetTransferer) repoGitDir(ctx context.Context) (string, error) {
	return x.gitDir.Get(ctx, func(ctx context.Context) (string, error) {
		loc, err := gitrepo.Open(x.o.Git.Dir).Location(ctx) // the rev-parse the endpoint resolver shares
		return loc.GitDir, err
	})
}

// tmpDir is git-lfs's temp directory (.git/lfs/tmp): downloads are written there so git-lfs's
// rename into .git/lfs/objects stays on one file system.
func (x *xetTransferer) tmpDir(ctx context.Context) (string, error) {
	gd, err := x.repoGitDir(ctx)
	if err != nil {
		return "", err
	}
	d := filepath.Join(gd, "lfs", "tmp")
	if x.tmpMade.Load() {
		return d, nil
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("creating git-lfs's temp directory: %w", err)
	}
	x.tmpMade.Store(true)
	return d, nil
}

func oidBytes(oid string) ([32]byte, error) {
	var b [32]byte
	n, err := hex.Decode(b[:], []byte(oid))
	if err != nil || n != 32 {
		return b, fmt.Errorf("oid %q is not a SHA-256", oid)
	}
	return b, nil
}

// Upload stores one file through Xet and returns once every xorb and the shard registering it
// are stored.
func (x *xetTransferer) Upload(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	sha, err := oidBytes(obj.Oid)
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
		if res, done, err := x.sharedUpload(ctx, obj, sha); done {
			return res, err
		}
		if e, _, err = x.standaloneEndpoint(ctx, true); err != nil {
			return agent.Result{}, err
		}
	}
	if obj.Size >= ShareMaxBytes && x.sharing.leading.Load() {
		if s, err := sampleFile(obj.Path, obj.Size); err == nil { // else the upload's own open fails
			done, err := x.sharing.turns.take(ctx, e, obj.Path, s)
			if err != nil {
				return agent.Result{}, err
			}
			defer done()
		}
	}
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
// batch's: see smallBatcher).
func (x *xetTransferer) uploadConfig(ctx context.Context, e *endpoint, size int64) upload.Config {
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
	if size >= ShareMaxBytes {
		// Large uploads to one endpoint take turns (turns.go), so one controller sets their
		// uploads in flight; the many small sessions a leader runs at once keep their own count.
		cfg.Adapt = e.up
	}
	if d, err := x.tmpDir(ctx); err == nil {
		cfg.TempDir = d // the spill of the session's chunk lists; else the system's temp dir
	}
	return cfg
}

// uploadTo uploads obj to the CAS of e (mode: the Result's, else e's).
func (x *xetTransferer) uploadTo(ctx context.Context, e *endpoint, mode agent.Mode, obj agent.Object, sha [32]byte, progress func(int64)) (agent.Result, error) {
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
func (x *xetTransferer) uploadFile(ctx context.Context, cfg upload.Config, e *endpoint, obj agent.Object, sha [32]byte, f io.Reader,
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

// Download reconstructs one file from Xet into git-lfs's temp dir, verified (chunk hashes, size,
// SHA-256 = oid) before its path is returned.
func (x *xetTransferer) Download(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	sha, err := oidBytes(obj.Oid)
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
	if obj.Action != nil {
		ba, err := parseBatchAction(obj.Action)
		if err != nil {
			return agent.Result{}, err
		}
		if file, err = ba.File(); err != nil {
			return agent.Result{}, err
		}
		e = x.batchEndpoint(ctx, ba)
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
			file, size, err = e.local.LookupSHA256(ctx, hash.FromSHA256(sha))
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
			return x.lfsFallback(ctx, *r, obj, sha, tmp, progress)
		}
	}
	return x.xetDownload(ctx, e, file, obj, sha, tmp, progress)
}
