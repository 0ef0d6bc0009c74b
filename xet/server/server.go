// Package server is the HTTP front of xet/store: the Xet CAS API as xet-core calls it (reconstructions
// v1 and v2, global-dedupe queries, xorb and shard uploads, file sizes), signed expiring URLs that serve
// xorb byte ranges, and Hub-style Git LFS routes per repository (the batch API answering "xet" or
// "basic", the token refresh routes, and a basic-transfer bridge that turns plain LFS uploads into
// xorbs and shards and streams reconstructed files back).
//
// Access control has two layers. LFS routes and the token routes take user credentials (HTTP Basic,
// checked against a Users table, failures limited by Users.Login). CAS routes take bearer tokens the
// server issues itself (HMAC-SHA256 signed, expiring, scoped read or write, carrying the repository
// namespace and the user; see Tokens), each use checked against the Users table in force, and
// nothing minted from a token outlives it (credentials.go). Xorb bytes are served only from signed
// URLs that name the allowed byte ranges. With no Users configured the server is open: everything
// is allowed, the binary refuses to listen anywhere but loopback, and requests must name a loopback
// Host.
//
// A *Server is safe for concurrent use by any number of requests; it keeps no per-request state.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server/webui"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Store is what the server asks of the CAS storage. *store.Store implements it; handler tests use
// fakes. What a CAS request may see and reference is the store's access rule (store.Access: the
// token's repository and user); the bridge and the Hub emulator, which check their callers
// themselves, read the whole store.
type Store interface {
	// PutXorbAdmitted stores a xorb uploaded by a with a client's hint of where it sits in a file
	// (lfsbatch.HeaderXorbFollows; the zero Follows without one), and records the upload for a's
	// repository (what its access and its usage read; Recorded: this call wrote the record;
	// Counted: the usage counts the xorb from this call on). Unless the repository's usage counts
	// the xorb already (its record, and the store keeps it), admit is asked whether the repository
	// may take the xorb's raw bytes.
	PutXorbAdmitted(ctx context.Context, a store.Access, h hash.Hash, body io.Reader, f xorb.Follows, admit func(raw uint64) error) (store.XorbUpload, error)
	HasXorb(ctx context.Context, h hash.Hash) (bool, error)
	// CanReference reports whether a's shards may name chunks of xorb h (what HEAD of a stored
	// xorb answers: a client told no uploads it, and earns the right by its bytes).
	CanReference(ctx context.Context, a store.Access, h hash.Hash) (bool, error)
	// UploadedBy reports whether repository repo uploaded xorb h (its readers may be handed the
	// whole xorb: a presigned URL).
	UploadedBy(ctx context.Context, repo string, h hash.Hash) (bool, error)
	// CountsXorb reports whether repository repo's usage counts xorb h whole already (its
	// upload record, and the store keeps h, in gc's trash too): sending it again adds nothing.
	CountsXorb(ctx context.Context, repo string, h hash.Hash) (bool, error)
	PutShardAs(ctx context.Context, a store.Access, body []byte) (existed bool, err error)
	// ReconstructIn plans a file registered in repo, at most maxTerms terms (0: all).
	ReconstructIn(ctx context.Context, repo string, file hash.Hash, rng *casapi.ByteRange, maxTerms int) (*casapi.ReconstructionV2, error)
	// Reconstruct plans any stored file (the bridge, which found it through its repository).
	Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error)
	FileSizeIn(ctx context.Context, repo string, file hash.Hash) (uint64, error)
	FileSize(ctx context.Context, file hash.Hash) (uint64, error)
	LookupSHA256(ctx context.Context, ns string, sha256 hash.Hash) (file hash.Hash, size uint64, err error)
	// LookupVerifiedSHA256 finds only mappings whose file was hashed to the oid: what an upload may
	// be told is "already stored".
	LookupVerifiedSHA256(ctx context.Context, ns string, sha256 hash.Hash) (file hash.Hash, size uint64, err error)
	OpenXorb(ctx context.Context, h hash.Hash) (f store.ReadAtCloser, recordsLen int64, err error)
	// XorbFooter is the footer stored after a xorb's records (served, with the hashes of chunks
	// outside its ranges zeroed, to a signed URL's suffix range).
	XorbFooter(ctx context.Context, h hash.Hash) (*xorb.Footer, error)
	GlobalDedupeAs(ctx context.Context, a store.Access, chunk hash.Hash) ([]byte, error)
	// FileComplete reports whether every xorb of a registered file is stored.
	FileComplete(ctx context.Context, file hash.Hash) (bool, error)
}

var (
	_ Store      = (*store.Store)(nil)
	_ UsageStore = (*store.Store)(nil)
)

// XorbURLs gives URLs that fetch a stored xorb's bytes (with a Range header) without the server.
type XorbURLs interface {
	XorbURL(ctx context.Context, h hash.Hash, ttl time.Duration) (string, error)
}

// Ingester turns a plain byte stream (a basic-transfer LFS upload) into xorbs and a shard registered
// under namespace ns. It must not register anything (no shard) unless the stream's SHA-256 equals
// wantSHA256 and its length equals size; it then returns the Xet file hash.
type Ingester interface {
	Ingest(ctx context.Context, ns string, r io.Reader, size int64, wantSHA256 [32]byte) (hash.Hash, error)
}

// Limits on request bodies. Zero fields take the defaults.
type Limits struct {
	Xorb  int64 // POST /v1/xorbs body; default 64 MiB of data plus one record header per chunk, plus 1 MiB
	Shard int64 // POST /v1|v2/shards body; default store.MaxShardBytes (64 MiB)
	// JSON bounds an LFS batch request; default 1 MiB. A request of maxBatchObjects objects
	// takes about 100 KB; decoding costs about five times what is read, so the bound is what
	// the object cap costs, not what a client sends.
	JSON   int64
	Object int64 // basic-transfer PUT of one LFS object; default 64 GiB
	// A request body must arrive at BodyMinRate bytes per second or faster, measured over
	// windows of BodyWindow: a slower one is cut (408) and its upload slot freed, so a few stalled
	// or trickling clients cannot hold every slot. Defaults: 16 KiB/s over 30 s.
	BodyMinRate int64
	BodyWindow  time.Duration
	// SlotHold is what an upload slot is worth to a user holding more than its share of them
	// while another user waits: a body that would not end within SlotHold at the rate it arrives
	// is cut (408) and its slot given to the waiter (slotPool). Default 10 s.
	SlotHold time.Duration
	// ReconstructionTerms bounds the terms of one reconstruction answer (each about 100 bytes of
	// JSON and a share of a signed URL); a client asks for the rest with a Range. Default 65536:
	// every range of 512 MB or less fits one answer even in chunks of the minimum size (8 KiB).
	ReconstructionTerms int
}

func (l Limits) withDefaults() Limits {
	if l.Xorb <= 0 {
		l.Xorb = 64<<20 + 8192*8 + 1<<20
	}
	if l.Shard <= 0 {
		l.Shard = store.MaxShardBytes
	}
	if l.JSON <= 0 {
		l.JSON = 1 << 20
	}
	if l.Object <= 0 {
		l.Object = 64 << 30
	}
	if l.BodyMinRate <= 0 {
		l.BodyMinRate = 16 << 10
	}
	if l.BodyWindow <= 0 {
		l.BodyWindow = 30 * time.Second
	}
	if l.SlotHold <= 0 {
		l.SlotHold = 10 * time.Second
	}
	if l.ReconstructionTerms <= 0 {
		l.ReconstructionTerms = 1 << 16
	}
	return l
}

// Config configures a Server.
type Config struct {
	Store Store
	// Ingest handles basic-transfer uploads; nil answers them 501.
	Ingest Ingester
	// Secret keys the token and URL signatures (at least 32 bytes).
	Secret []byte
	// Users checks LFS credentials. Nil means open mode: everything allowed.
	Users *Users
	// PublicURL is the base of the URLs the server hands out (CAS URL, signed xorb URLs, LFS hrefs),
	// e.g. "https://xet.example.com". Empty: "http://" + the request's Host.
	PublicURL string
	TokenTTL  time.Duration // CAS access tokens; default 15 minutes
	URLTTL    time.Duration // signed xorb URLs; default 1 hour
	// Direct, when set, gives the URL of a xorb straight at its storage (a presigned S3 GET, good
	// for any byte range until it expires); reconstructions hand those out instead of the
	// server's own signed route, which stays the fallback when Direct fails.
	Direct XorbURLs
	// RefreshTTL is the lifetime of the refresh credential a batch answer gives Xet clients (the
	// Authorization header of a xet action, accepted only by the token route); default 12 hours.
	RefreshTTL time.Duration
	Limits     Limits
	// MaxIngest bounds the basic-transfer uploads chunked at once (each holds up to a few 64 MiB
	// xorbs in memory); more wait their turn, shared fairly between users (slotPool). Default 4.
	MaxIngest int
	// MaxXorbPuts bounds the xorb uploads read and validated at once (each holds its whole body,
	// up to Limits.Xorb bytes, in memory); more wait their turn, shared fairly between users
	// (slotPool). Default 8.
	MaxXorbPuts int
	// MaxShardPuts bounds the shard registrations checked at once (each may hash for seconds);
	// more wait their turn, shared fairly between users (slotPool: a slot that frees goes to the
	// user holding the fewest). Default half the cores, at least 2.
	MaxShardPuts int
	// MaxShardBodies bounds the shard uploads whose bodies are held at once: each is read whole
	// (up to Limits.Shard) before it is checked, and kept until its registration ends. More wait
	// their turn before their body is read, shared fairly between users (one user holds at most
	// MaxShardPuts of them), a slow body cut as an upload's is (slotPool). Default twice
	// MaxShardPuts, at least 4.
	MaxShardBodies int
	// HeartbeatInterval is how often POST /v2/shards repeats its last frame while work goes on;
	// default 20 s.
	HeartbeatInterval time.Duration
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names a request's client, whose
	// address keys the limits on failed logins (clientAddr). Without them every client behind a
	// proxy shares the proxy's address, and its budget.
	TrustedProxies []netip.Prefix
	// Hub, when set, makes the LFS and token routes behave as the Hugging Face Hub's (a test
	// emulator: see HubCompat). Users is not used then.
	Hub *HubCompat
	// Quotas limit what each repository may store (nil: no limits); Store must then be a
	// UsageStore.
	Quotas *Quotas
	// Metrics, when set, counts requests and the server's work (served elsewhere: Metrics.Handler).
	// The store's own work is counted through its Observer (store.Options.Observe).
	Metrics *Metrics
	// Ready reports whether the server can serve (its storage answers); /readyz fails while it
	// errs. Nil: always ready.
	Ready func(ctx context.Context) error
	// UI serves the read-only web view at /ui/ (ui.go; Store must then list its repositories, as
	// store.Store does). Not with Hub.
	UI  bool
	Log zerolog.Logger
	Now func() time.Time
}

// Server serves the CAS and LFS routes over a Store.
type Server struct {
	cfg    Config
	tokens *Tokens
	urls   *URLSigner
	log    zerolog.Logger
	now    func() time.Time
	mux    *http.ServeMux
	ingest *slotPool // MaxIngest slots
	xorbs  *slotPool // MaxXorbPuts slots
	shards *slotPool // MaxShardPuts slots
	// shardBodies: MaxShardBodies slots, each a shard body held from its first byte to the end
	// of its registration
	shardBodies *slotPool
	// metrics is cfg.Metrics (nil: none); quota caches usage when cfg.Quotas is set.
	metrics *Metrics
	quota   *usageCache
	ui      *webui.View // nil: no web view
	drain   atomic.Bool // Drain was called
	// listings: the objects of recent xet batch answers (batch_listing.go)
	listings batchListings
}

// New builds a Server. It fails when the configuration cannot be served safely (no store, short
// secret).
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	if len(cfg.Secret) < 32 {
		return nil, fmt.Errorf("server: secret is %d bytes, need at least 32", len(cfg.Secret))
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 15 * time.Minute
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = 12 * time.Hour
	}
	if cfg.URLTTL <= 0 {
		cfg.URLTTL = time.Hour
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 20 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxIngest <= 0 {
		cfg.MaxIngest = 4
	}
	if cfg.MaxXorbPuts <= 0 {
		cfg.MaxXorbPuts = 8
	}
	if cfg.MaxShardPuts <= 0 {
		cfg.MaxShardPuts = max(2, runtime.GOMAXPROCS(0)/2)
	}
	if cfg.MaxShardBodies <= 0 {
		cfg.MaxShardBodies = max(4, 2*cfg.MaxShardPuts)
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{
		cfg:         cfg,
		tokens:      NewTokens(cfg.Secret, cfg.Now),
		urls:        NewURLSigner(cfg.Secret, cfg.Now),
		log:         cfg.Log,
		now:         cfg.Now,
		ingest:      newSlotPool("basic", cfg.MaxIngest, cfg.Limits.SlotHold),
		xorbs:       newSlotPool("xorb", cfg.MaxXorbPuts, cfg.Limits.SlotHold),
		shards:      newSlotPool("shard_registration", cfg.MaxShardPuts, cfg.Limits.SlotHold),
		shardBodies: newSlotPool("shard_body", cfg.MaxShardBodies, cfg.Limits.SlotHold),
	}
	s.shardBodies.each = cfg.MaxShardPuts
	if cfg.Quotas != nil {
		us, ok := cfg.Store.(UsageStore)
		if !ok {
			return nil, errors.New("server: quotas need a store that reports usage")
		}
		s.quota = newUsageCache(us)
	}
	var err error
	if s.ui, err = newUI(cfg); err != nil {
		return nil, err
	}
	s.metrics = cfg.Metrics
	s.metrics.slots(s)
	s.routes()
	return s, nil
}

// Drain makes the server refuse new requests (503 with Retry-After, the connection closed) and
// fail /readyz, while requests in flight go on: what a process about to stop does first, so that a
// load balancer sends the clients' retries elsewhere.
func (s *Server) Drain() { s.drain.Store(true) }

// handleReady answers /readyz: 200 when the server takes requests and its storage answers, 503
// while it drains or the storage fails.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.drain.Load() {
		writeError(w, http.StatusServiceUnavailable, "draining")
		return
	}
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			s.log.Warn().Err(err).Msg("readiness: storage check failed")
			writeError(w, http.StatusServiceUnavailable, "storage unreachable")
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// readyTimeout bounds /readyz's storage check: under the probe timeouts of load balancers (a few
// seconds), well over a storage call that answers.
const readyTimeout = 2 * time.Second

// Open reports whether the server runs without authentication.
func (s *Server) Open() bool { return s.cfg.Users == nil && s.cfg.Hub == nil }

// Handler returns the server's HTTP handler with logging and panic recovery around every route.
func (s *Server) Handler() http.Handler {
	return s.logged(s.recovered(s.draining(s.localHosts(s.paced(s.mux)))))
}

// Close lets go of what the store holds for writing (store.Store.Close), once no request is being
// served.
func (s *Server) Close() error {
	if c, ok := s.cfg.Store.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/reconstructions/{file}", s.cas(scopeRead, s.handleReconstructionV1))
	m.HandleFunc("GET /v2/reconstructions/{file}", s.cas(scopeRead, s.handleReconstructionV2))
	m.HandleFunc("GET /v1/chunks/{prefix}/{chunk}", s.cas(scopeRead, s.handleChunk))
	m.HandleFunc("POST /v1/xorbs/{prefix}/{xorb}", s.cas(scopeWrite, s.handlePutXorb))
	m.HandleFunc("HEAD /v1/xorbs/{prefix}/{xorb}", s.cas(scopeRead, s.handleHeadXorb))
	m.HandleFunc("POST /v1/shards", s.cas(scopeWrite, s.handlePutShardV1))
	m.HandleFunc("POST /v2/shards", s.cas(scopeWrite, s.handlePutShardV2))
	m.HandleFunc("HEAD /v1/files/{file}", s.cas(scopeRead, s.handleHeadFile))
	m.HandleFunc("GET "+batchListingRoute+"{id}", s.cas(scopeRead, s.handleBatchListing))
	m.HandleFunc("GET /xorbs/{prefix}/{xorb}", s.handleSignedXorb)
	m.HandleFunc("GET /api/", s.handleTokenRoute)
	m.HandleFunc("GET /healthz", handleHealth)
	m.HandleFunc("GET /readyz", s.handleReady)
	if s.cfg.Hub != nil {
		m.HandleFunc("GET /xet-bridge-us/{id}/{file}", s.handleBridge)
		m.HandleFunc("GET /cdn-lfs/{id}/{oid}", s.handleCDN)
		m.HandleFunc("POST /v1/telemetry", s.handleTelemetry)
	}
	s.uiRoutes(m)
	m.HandleFunc("/", s.handleRepoRoute) // /{repo}.git/info/lfs/...
	s.mux = m
}

// baseURL is the scheme://host the server's URLs start with for a request.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// newSessionID returns a random session id for X-Xet-Session-Id.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
