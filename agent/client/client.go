// Package client is the Xet client of a remote: the agent.Transferer that uploads and downloads
// one LFS object at a time through the CAS the remote names (endpoints.go: an LFS server's xet
// batch action, the embedded store of a local remote, the Hub), with the repository's shard cache
// and chunk index. It knows nothing of the other agent processes of a push: the leader that
// serves them (agent/leader) decorates it, and what the client asks of that leader in the middle
// of a transfer is a Coordinator.
package client

import (
	"context"
	"errors"
	"io"
	"net/http"
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
	"github.com/git-xet-transfer/git-xet-transfer/internal/summary"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
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
	// DirectIO writes downloads with O_DIRECT instead of through the page cache (GIT_XET_DIRECT_IO=1).
	DirectIO bool
	// Ref is the revision Hub-mode uploads ask a write token for (GIT_XET_REF); "" = xet.ref, else
	// the current branch's upstream (uploads) or the current branch, else main.
	Ref string
	// Credentials are the credential sources the environment gives (HF_TOKEN, the token file, the
	// environment git-lfs's credential helpers and ssh read).
	Credentials credentials.Env
	// Tally, when set, counts the body bytes of every HTTP request and answer of the client: what
	// the run moved over the network, for the summary line.
	Tally *summary.Tally
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
// puts the process's share back (every core while it leads: Coordinator.Leading).
func (x *Client) allCores(size int64) func() {
	if !x.o.SetProcs || size < AllCoresBytes || x.procs() >= runtime.NumCPU() {
		return func() {}
	}
	runtime.GOMAXPROCS(runtime.NumCPU())
	return func() { runtime.GOMAXPROCS(x.procs()) }
}

// procs is the GOMAXPROCS of this process: its share (Tune), or every core while it leads.
func (x *Client) procs() int {
	if x.co.Leading() {
		return runtime.NumCPU()
	}
	return x.tune.Procs
}

// ResumeCheckBytes is the size from which an upload asks the CAS whether it already holds a xorb
// before sending it (see upload.Config.ResumeCheckBytes).
const ResumeCheckBytes = 8 << 20

// Open returns the Xet client of a process after init: batch mode when a request carries an
// action (the CAS from X-Xet-* headers), standalone mode otherwise (the embedded store of a local
// remote, falling back to plain LFS objects kept in that remote; or the Hub). co is the leader of
// the process's push (agent/leader), nil for a client on its own (Solo). Nothing is resolved
// before the first request.
func Open(o Options, init agent.Init, co Coordinator) *Client {
	t := Tune(runtime.NumCPU(), init.ConcurrentTransfers, o.Concurrency)
	if o.SetProcs {
		runtime.GOMAXPROCS(t.Procs)
	}
	o = o.withDefaults()
	o.Log.Debug().Int("procs", t.Procs).Int("upload_concurrency", t.Upload).
		Int("download_concurrency", t.Download).Msg("tuned")
	if co == nil {
		co = Solo{}
	}
	x := &Client{o: o, init: init, tune: t, co: co, findRemote: ResolveLocalRemote, storeDir: sync.OnceValue(o.storeDir)}
	x.hubs = hubAccess{git: o.Git, env: o.Credentials, remote: init.Remote, operation: init.Operation, httpClient: o.HTTPClient, userAgent: o.UserAgent, stall: o.StallTimeout}
	return x
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
	if o.Tally != nil {
		c := *o.HTTPClient
		c.Transport = o.Tally.Transport(c.Transport)
		o.HTTPClient = &c
	}
	if o.UserAgent == "" {
		o.UserAgent = cas.DefaultUserAgent()
	}
	return o
}

// Client is the Xet client of one agent process (an agent.Transferer). Safe for concurrent use: a
// leader serves several conversations through one Client.
type Client struct {
	o    Options
	init agent.Init
	tune Tuning

	// Values found on first use, each on its own (internal/lazy): a leader serving several
	// conversations never waits on a lock held across git, the network or opening a store.
	endpoints lazy.Map[string, *endpoint] // by CAS URL (batch), store dir (embedded), "hub:"+route
	remote    lazy.Value[LocalRemote]     // standalone mode
	// findRemote resolves the local remote (ResolveLocalRemote; a test's may block).
	findRemote func(ctx context.Context, g Git, operation, remote string) (LocalRemote, error)
	gitDir     lazy.Value[string]           // the work tree's git directory (Scope)
	lfsDir     lazy.Value[string]           // git-lfs's storage directory (gitrepo.LFSDir)
	storeDir   func() string                // Options.StoreDir, called once; "" = the remote's own
	hubs       hubAccess                    // hub mode, and the Hub's token routes of batch mode
	endpoint   lazy.Value[gitrepo.Endpoint] // the remote's LFS endpoint for init's operation
	ref        lazy.Value[string]           // hub mode: the revision of the token routes

	co Coordinator // the leader of the push's agents (agent/leader), or Solo

	indexChecked atomic.Bool // the chunk index was rebuilt if it needed to be (rebuildIndex)
	tmpMade      atomic.Bool // git-lfs's temp directory exists (made once per process)
}

// Close closes the endpoints opened: the shard caches and the embedded store. A leader closes
// what it serves through the client first.
func (x *Client) Close() error {
	var errs []error
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
