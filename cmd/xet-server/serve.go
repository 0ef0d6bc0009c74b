package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/s3"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

type serveFlags struct {
	listen, data, users, secretFile, publicURL string
	storage                                    string
	s3Direct                                   bool
	tlsCert, tlsKey, tlsClientCA               string
	logFile, logLevel                          string
	tokenTTL, urlTTL, refreshTTL, shutdown     time.Duration
	maxObject                                  int64
	policy                                     string
	hubTokens, hubPublic                       string
	metricsListen                              string
	quotaDefault, quotasFile                   string
	drainDelay, tlsPoll, gcEvery               time.Duration
	trustedProxies                             string
	ui                                         bool
	// observe is told of the store's work (the metrics); not a flag.
	observe store.Observer
}

// runServe runs the server until SIGINT/SIGTERM. ready (tests) gets the bound address.
func runServe(args []string, stderr io.Writer, ready func(addr string)) int {
	var f serveFlags
	fl := flag.NewFlagSet("xet-server serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port)")
	fl.StringVar(&f.data, "data", "", "data directory (required): the CAS under DIR/cas, the secret in DIR/secret")
	fl.BoolVar(&f.s3Direct, "s3-direct", true, "with --storage s3://: hand clients presigned GETs straight to the bucket for xorb ranges (false: every download goes through the server's own signed route, for buckets clients cannot reach)")
	fl.StringVar(&f.storage, "storage", "", "where the CAS keeps its data: a directory (default DIR/cas) or s3://BUCKET[/PREFIX] (endpoint, region and keys from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or ~/.aws/credentials; path-style addressing unless the endpoint is AWS)")
	fl.StringVar(&f.users, "users", "", "users file (name:hash[:read|write[:repo-patterns]]); without it the server is open and loopback-only")
	fl.StringVar(&f.secretFile, "secret-file", "", "file holding the token/URL signing secret (default DIR/secret, generated when absent)")
	fl.StringVar(&f.publicURL, "public-url", "", "base URL clients reach the server at (default http://<request Host>); set it behind a proxy")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (serve HTTPS)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS key file")
	fl.StringVar(&f.tlsClientCA, "tls-client-ca", "", "with --tls-cert: require a client certificate signed by a CA of FILE (PEM) on every connection (mTLS); with --users both are required, without it the certificate alone authenticates")
	fl.StringVar(&f.logFile, "log-file", "", "append logs (JSON lines) to this file instead of stderr")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.DurationVar(&f.tokenTTL, "token-ttl", 15*time.Minute, "lifetime of CAS access tokens")
	fl.DurationVar(&f.refreshTTL, "refresh-ttl", 12*time.Hour, "lifetime of the refresh credential in xet batch actions (renews CAS tokens during long transfers)")
	fl.DurationVar(&f.urlTTL, "url-ttl", time.Hour, "lifetime of signed xorb URLs")
	fl.DurationVar(&f.shutdown, "shutdown-timeout", time.Second, "how long SIGTERM lets requests in flight finish before it cuts them (their clients retry), and waits for the server's own work (--gc-every's gc) to stop; with --drain-delay, after it")
	fl.Int64Var(&f.maxObject, "max-object-size", 64<<30, "largest basic-transfer LFS upload in bytes")
	fl.StringVar(&f.policy, "compression", "auto", "xorb compression of basic-transfer uploads: auto, none, lz4, bg4-lz4")
	fl.StringVar(&f.hubTokens, "hub-compat", "", "emulate the Hugging Face Hub's LFS and token routes (for testing Hub clients), with the Hub tokens of FILE (token:name:read|write[:repo-patterns] per line); plain LFS uploads are kept whole in DIR/hub-legacy")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9100); off without it, never on the main port")
	fl.StringVar(&f.quotaDefault, "repo-quota", "", "storage quota of every repository (e.g. 10GiB): the xorbs it uploaded and the chunk ranges its files use in others'; uploads over it are refused (507)")
	fl.StringVar(&f.quotasFile, "quotas", "", "quotas file: \"REPOSITORY-PATTERN SIZE\" per line (SIZE or none), first match wins, else --repo-quota; \"user:NAME SIZE\" for NAME's repositories together (NAME/*, datasets/NAME/*, spaces/NAME/*)")
	fl.DurationVar(&f.drainDelay, "drain-delay", 0, "on SIGTERM, how long to answer new requests 503 (Retry-After) and fail /readyz before closing the listener, so a load balancer moves traffic away (e.g. 10s behind one)")
	fl.DurationVar(&f.tlsPoll, "tls-reload-interval", 10*time.Second, "how often to look for a changed --tls-cert/--tls-key (also reloaded on SIGHUP)")
	fl.DurationVar(&f.gcEvery, "gc-every", 0, "run gc (as xet-server gc, default grace) this often in the server (0: never; run xet-server gc from cron instead)")
	fl.StringVar(&f.trustedProxies, "trusted-proxy", "", "comma-separated addresses or CIDR prefixes of reverse proxies in front of the server: their X-Forwarded-For names the client whose address the limits on failed logins count by (without it, every client behind a proxy shares the proxy's budget)")
	fl.BoolVar(&f.ui, "ui", true, "serve the read-only web view at /ui/ on the main port, behind the users file's credentials (false: /ui/ is 404)")
	fl.StringVar(&f.hubPublic, "hub-public", "", "with --hub-compat: comma-separated patterns of repositories readable without a token")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "xet-server: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	log, closeLog, err := newLogger(f, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "xet-server:", err)
		return 2
	}
	defer closeLog()
	if err := serve(f, log, ready); err != nil {
		if f.logFile != "" { // on stderr, the line below says it once
			log.Error().Err(err).Msg("xet-server stopped")
		}
		fmt.Fprintln(stderr, "xet-server:", err)
		return 1
	}
	return 0
}

func newLogger(f serveFlags, stderr io.Writer) (zerolog.Logger, func(), error) {
	lvl, err := zerolog.ParseLevel(f.logLevel)
	if err != nil {
		return zerolog.Nop(), nil, fmt.Errorf("--log-level: %w", err)
	}
	out, closeFn := stderr, func() {}
	if f.logFile != "" {
		lf, err := os.OpenFile(f.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return zerolog.Nop(), nil, fmt.Errorf("--log-file: %w", err)
		}
		out, closeFn = lf, func() { lf.Close() }
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), closeFn, nil
}

// isLoopback reports whether a listen address only accepts connections from this machine.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func serve(f serveFlags, log zerolog.Logger, ready func(string)) error {
	users, err := checkFlags(f)
	if err != nil {
		return err
	}
	var metrics *server.Metrics
	if f.metricsListen != "" {
		metrics = server.NewMetrics()
		f.observe = metrics.Observer()
	}
	var certs *certReloader
	if f.tlsCert != "" {
		if certs, err = newCertReloader(f.tlsCert, f.tlsKey, log); err != nil {
			return err
		}
	}
	srv, st, err := newServer(f, users, metrics, log)
	if err != nil {
		return err
	}
	ls, err := listen(f, srv, metrics, certs, log)
	if err != nil {
		srv.Close()
		return err
	}
	logListening(f, users, ls.main.Addr().String(), log)
	defer cpuProfile(os.Getenv("XET_SERVER_CPUPROFILE"), log)()
	defer memProfile(os.Getenv("XET_SERVER_MEMPROFILE"), log)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // before serving: an early SIGHUP must not end the process
	defer signal.Stop(hup)
	life, lctx := newLifetime(ctx)
	errc := ls.serve(life)
	startBackground(lctx, life, f, st, users, certs, hup, log)
	if ready != nil {
		ready(ls.main.Addr().String())
	}
	var failed error
	select {
	case err := <-errc:
		failed = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		drain(srv, f.drainDelay, log)
	}
	return errors.Join(failed, stopServer(ls, life, srv, f.shutdown, log))
}

// startBackground starts the work a server does besides answering requests, each on a goroutine
// of life, until ctx ends: temp cleaning, reloads on SIGHUP (hup) and certificate changes, and gc
// when --gc-every asks for it.
func startBackground(ctx context.Context, life *lifetime, f serveFlags, st *store.Store, users *server.Users, certs *certReloader, hup <-chan os.Signal, log zerolog.Logger) {
	life.Go(func() { cleanTempHourly(ctx, st, log) })
	life.Go(func() { reloadOnHUP(ctx, hup, users, certs, log) })
	if certs != nil && f.tlsPoll > 0 {
		life.Go(func() { certs.poll(ctx, f.tlsPoll) })
	}
	if f.gcEvery > 0 {
		life.Go(func() { gcEvery(ctx, store.NewMaint(st), f.gcEvery, log) })
	}
}

// stopServer ends a run within timeout and cutGrace: the requests in flight finish until timeout
// (hs.Shutdown) and are cut then, the run's goroutines stop (their context ended with the signal,
// so gc stopped meanwhile) and are joined, and only then the store is closed. A run whose
// handlers or goroutines outlast that leaves its store as a killed process would (it is
// crash-safe) rather than close it under them.
func stopServer(ls *listeners, life *lifetime, srv *server.Server, timeout time.Duration, log zerolog.Logger) error {
	log.Info().Dur("timeout", timeout).Msg("shutting down: waiting for requests in flight and background work")
	deadline := time.Now().Add(timeout)
	cut, err := ls.shutdown(deadline)
	if cut > 0 {
		log.Warn().Int("requests", cut).Dur("timeout", timeout).
			Msg("cut the requests still in flight at --shutdown-timeout; their clients retry them")
	}
	if time.Now().After(deadline) {
		// The server was closed at the deadline (a request cut, or a connection whose handler had
		// returned but whose last write waited on its client): its serve loops end only now.
		deadline = time.Now().Add(cutGrace)
	}
	if !life.join(deadline) {
		return errors.Join(err, fmt.Errorf("shutdown: background work (gc) still running after %v; the store was left unclosed", timeout))
	}
	if err != nil {
		return err // handlers may still run: the store stays open under them
	}
	if err := srv.Close(); err != nil {
		return err
	}
	log.Info().Msg("xet-server stopped")
	return nil
}

// drain makes the server answer new requests 503 and fail /readyz for delay, while requests in
// flight go on: a load balancer polling /readyz moves the traffic to other instances meanwhile.
func drain(srv *server.Server, delay time.Duration, log zerolog.Logger) {
	srv.Drain()
	if delay <= 0 {
		return
	}
	log.Info().Dur("delay", delay).Msg("draining: new requests are answered 503, /readyz fails")
	time.Sleep(delay)
}

// gcEvery runs gc (m.Collect, default grace) every interval until ctx ends.
func gcEvery(ctx context.Context, m *store.Maint, interval time.Duration, log zerolog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, err := m.Collect(ctx, store.GCOptions{})
			switch {
			case err != nil && ctx.Err() != nil:
				log.Info().Msg("gc stopped: the server is shutting down")
			case err != nil:
				log.Warn().Err(err).Msg("gc")
			}
		}
	}
}

// checkFlags checks the flags that go together and loads the users file; without one the server
// may listen on loopback only.
func checkFlags(f serveFlags) (*server.Users, error) {
	if f.data == "" {
		return nil, errors.New("--data DIR is required")
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if f.tlsClientCA != "" && f.tlsCert == "" {
		return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key (client certificates are a TLS feature)")
	}
	if f.hubTokens != "" && !isLoopback(f.listen) {
		return nil, fmt.Errorf("--hub-compat is a test emulator: listen on a loopback address, not %s", f.listen)
	}
	if f.users == "" {
		if !isLoopback(f.listen) && f.tlsClientCA == "" {
			return nil, fmt.Errorf("refusing to listen on %s without authentication: give --users FILE or --tls-client-ca FILE, or listen on a loopback address (127.0.0.1:PORT)", f.listen)
		}
		return nil, nil
	}
	u, err := server.LoadUsers(f.users)
	if err != nil {
		return nil, err
	}
	if u.Len() == 0 {
		return nil, fmt.Errorf("users file %s lists no users", f.users)
	}
	return u, nil
}

// newServer opens the data directory (store, signing secret) and builds the server on it.
func newServer(f serveFlags, users *server.Users, metrics *server.Metrics, log zerolog.Logger) (*server.Server, *store.Store, error) {
	srv, st, err := buildServer(f, users, metrics, log)
	if err != nil && st != nil {
		st.Close()
	}
	return srv, st, err
}

func buildServer(f serveFlags, users *server.Users, metrics *server.Metrics, log zerolog.Logger) (*server.Server, *store.Store, error) {
	policy, err := xorb.ParsePolicy(f.policy)
	if err != nil {
		return nil, nil, fmt.Errorf("--compression: %w", err)
	}
	quotas, err := loadQuotas(f)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(f.data, 0o750); err != nil {
		return nil, nil, fmt.Errorf("data directory: %w", err)
	}
	secretPath := f.secretFile
	if secretPath == "" {
		secretPath = filepath.Join(f.data, "secret")
	}
	secret, err := loadSecret(secretPath, f.secretFile == "", log)
	if err != nil {
		return nil, nil, err
	}
	hub, err := hubCompat(f)
	if err != nil {
		return nil, nil, err
	}
	proxies, err := parsePrefixes(f.trustedProxies)
	if err != nil {
		return nil, nil, fmt.Errorf("--trusted-proxy: %w", err)
	}
	st, direct, err := openStorage(&f, log)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	srv, err := server.New(server.Config{
		Quotas:         quotas,
		Metrics:        metrics,
		Ready:          st.Ping,
		Hub:            hub,
		Store:          st,
		Direct:         direct,
		Ingest:         &server.UploadIngester{Store: st, Policy: policy, Log: log},
		Secret:         secret,
		Users:          users,
		PublicURL:      f.publicURL,
		TrustedProxies: proxies,
		TokenTTL:       f.tokenTTL,
		RefreshTTL:     f.refreshTTL,
		URLTTL:         f.urlTTL,
		Limits:         server.Limits{Object: f.maxObject},
		UI:             f.ui,
		Log:            log,
	})
	return srv, st, err
}

// parsePrefixes reads a comma-separated list of addresses and CIDR prefixes (an address is its own
// /32 or /128).
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// loadQuotas reads --repo-quota and --quotas (nil: no quotas).
func loadQuotas(f serveFlags) (*server.Quotas, error) {
	if f.quotaDefault == "" && f.quotasFile == "" {
		return nil, nil
	}
	q := &server.Quotas{}
	if f.quotaDefault != "" {
		b, err := server.ParseSize(f.quotaDefault)
		if err != nil {
			return nil, fmt.Errorf("--repo-quota: %w", err)
		}
		q.Default = b
	}
	if f.quotasFile != "" {
		qf, err := os.Open(f.quotasFile)
		if err != nil {
			return nil, fmt.Errorf("--quotas: %w", err)
		}
		defer qf.Close()
		fq, err := server.ParseQuotas(qf)
		if err != nil {
			return nil, fmt.Errorf("--quotas %s: %w", f.quotasFile, err)
		}
		q.Repos, q.Owners = fq.Repos, fq.Owners
	}
	return q, nil
}

// hubCompat reads the --hub-compat token file.
func hubCompat(f serveFlags) (*server.HubCompat, error) {
	if f.hubTokens == "" {
		return nil, nil
	}
	tf, err := os.Open(f.hubTokens)
	if err != nil {
		return nil, fmt.Errorf("--hub-compat: %w", err)
	}
	defer tf.Close()
	toks, err := server.ParseHubTokens(tf)
	if err != nil {
		return nil, fmt.Errorf("--hub-compat %s: %w", f.hubTokens, err)
	}
	h := &server.HubCompat{Tokens: toks, LegacyDir: filepath.Join(f.data, "hub-legacy")}
	if f.hubPublic != "" {
		h.Public = strings.Split(f.hubPublic, ",")
	}
	return h, nil
}

// logListening says where the server listens, and how open it is.
func logListening(f serveFlags, users *server.Users, addr string, log zerolog.Logger) {
	ev := log.Info().Str("addr", addr).Str("data", f.data).Bool("tls", f.tlsCert != "").Bool("ui", f.ui && f.hubTokens == "")
	if users == nil && f.tlsClientCA != "" {
		ev.Str("auth", "client-certificate").Msg("xet-server listening: every connection needs a client certificate of --tls-client-ca, which allows every request")
		return
	}
	if users == nil {
		ev.Str("auth", "none").Msg("xet-server listening WITHOUT authentication (loopback only): every request is allowed")
		return
	}
	if f.tlsCert == "" && !isLoopback(f.listen) {
		log.Warn().Msg("authentication over plain HTTP: put the server behind a TLS proxy (and set --public-url) or give --tls-cert/--tls-key")
	}
	ev.Str("auth", "users").Int("users", users.Len()).Msg("xet-server listening")
}

// reloadOnHUP reloads the users file and the TLS certificate on each signal from hup until ctx
// ends; a bad file keeps the old users, a bad certificate the old one.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, users *server.Users, certs *certReloader, log zerolog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if certs != nil {
				certs.reloadLogged("SIGHUP")
			}
			if users == nil {
				continue
			}
			if err := users.Reload(); err != nil {
				log.Error().Err(err).Msg("users file reload failed; keeping the previous users")
			} else {
				log.Info().Int("users", users.Len()).Msg("users file reloaded")
			}
		}
	}
}

// loadSecret reads the signing secret; when it is absent and generate is set it creates one (32
// random bytes, hex, mode 0600, written to a temp file and renamed).
func loadSecret(path string, generate bool, log zerolog.Logger) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && generate {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, err
		}
		b = []byte(hex.EncodeToString(raw[:]) + "\n")
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return nil, fmt.Errorf("write secret: %w", err)
		}
		// Link rather than rename: if another process created the secret meanwhile, keep theirs.
		if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
			os.Remove(tmp)
			return nil, fmt.Errorf("write secret: %w", err)
		}
		os.Remove(tmp)
		log.Info().Str("path", path).Msg("generated a new server secret")
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	s := []byte(strings.TrimSpace(string(b)))
	if len(s) < 32 {
		return nil, fmt.Errorf("secret file %s: %d bytes, need at least 32", path, len(s))
	}
	return s, nil
}

// openStorage opens the store --storage names: a directory (default DATA/cas) or an S3 bucket,
// whose presigned URLs are handed to clients unless --s3-direct=false.
func openStorage(f *serveFlags, log zerolog.Logger) (*store.Store, server.XorbURLs, error) {
	switch {
	case f.storage == "":
		st, err := openFS(filepath.Join(f.data, "cas"), f.observe, log)
		return st, nil, err
	case strings.HasPrefix(f.storage, "s3://"):
		bucket, prefix, err := s3.ParseURL(f.storage)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		be, err := s3.New(ctx, s3Config(os.Getenv), bucket, prefix)
		if err != nil {
			return nil, nil, s3Hint(err)
		}
		st, err := store.Open("", store.Options{Backend: be, Log: log, Observe: f.observe})
		if err != nil || !f.s3Direct {
			return st, nil, err
		}
		return st, store.PresignedXorbs{Storage: be}, nil
	default:
		st, err := openFS(f.storage, f.observe, log)
		return st, nil, err
	}
}

// s3Config is where --storage s3:// is, from the standard AWS variables: AWS_ENDPOINT_URL (default
// AWS), AWS_REGION (default us-east-1), and the credentials from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, else the shared credentials file (~/.aws/credentials, AWS_PROFILE).
func s3Config(getenv func(string) string) s3.Config {
	return s3.Config{
		Endpoint: getenv("AWS_ENDPOINT_URL"),
		Region:   getenv("AWS_REGION"),
		Creds: credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
		}),
	}
}

// s3Hint names the variables to check for an S3 error that says what was wrong.
func s3Hint(err error) error {
	switch {
	case errors.Is(err, s3.ErrCredentials):
		return fmt.Errorf("%w: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or ~/.aws/credentials)", err)
	case errors.Is(err, s3.ErrUnreachable):
		return fmt.Errorf("%w (check AWS_ENDPOINT_URL)", err)
	}
	return err
}

// openFS opens a store on a directory.
func openFS(dir string, observe store.Observer, log zerolog.Logger) (*store.Store, error) {
	return store.Open(dir, store.Options{Log: log, Observe: observe})
}

// cleanTemp removes what writers killed mid-write left in the storage over an hour ago, within
// cleanTempTimeout.
func cleanTemp(ctx context.Context, st *store.Store) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, cleanTempTimeout)
	defer cancel()
	return st.Backend().CleanTemp(ctx, time.Hour)
}

// cleanTempTimeout bounds one cleaning (a bucket's listing of unfinished uploads, their aborts).
const cleanTempTimeout = 5 * time.Minute

// cleanTempHourly removes, at once and then hourly, what writers killed mid-write left in the
// storage over an hour ago: temp files and stray packs of a directory, unfinished multipart
// uploads of a bucket.
func cleanTempHourly(ctx context.Context, st *store.Store, log zerolog.Logger) {
	for {
		if n, err := cleanTemp(ctx, st); err != nil {
			log.Warn().Err(err).Msg("cleaning temp files")
		} else if n > 0 {
			log.Info().Int("removed", n).Msg("removed temp files of interrupted writes")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Hour):
		}
	}
}

// cpuProfile writes a CPU profile of the server to path (XET_SERVER_CPUPROFILE, for the benchmark
// scripts: client and server share the cores, so both are profiled) until the returned function
// runs at shutdown; "" profiles nothing.
func cpuProfile(path string, log zerolog.Logger) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Warn().Err(err).Msg("cpu profile not written")
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// memProfile writes a heap profile of the server to path (XET_SERVER_MEMPROFILE, for the benchmark
// scripts: what the peak RSS is made of) at shutdown: what is in use then, and every allocation of
// the server's life (pprof -sample_index=alloc_space); "" writes nothing.
func memProfile(path string, log zerolog.Logger) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Warn().Err(err).Msg("heap profile not written")
	}
}

// tlsConfig is the server's TLS: its certificate from certs (reloaded on SIGHUP and when its files
// change), client certificates required when caFile is set; nil without either (plain HTTP).
func tlsConfig(caFile string, certs *certReloader) (*tls.Config, error) {
	c, err := clientCertConfig(caFile)
	if err != nil || certs == nil {
		return c, err
	}
	if c == nil {
		c = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c.GetCertificate = certs.getCertificate
	return c, nil
}

// clientCertConfig is the TLS configuration that requires a client certificate signed by a CA of
// caFile (nil when caFile is "": no client certificate asked).
func clientCertConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-client-ca: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}, nil
}
