// Package credentials finds the user's credential for an LFS endpoint: resolved lazily, on the
// first request that needs one, cached for the process, never logged. The Hugging Face credentials
// (HF_TOKEN, the token file) belong to the Hub and go to no other host: the Hub is
// https://huggingface.co, https://hf.co and the origin of HF_ENDPOINT, exactly (not their
// subdomains, which are the Hub's CDNs and buckets and take signed URLs; huggingface_hub sends its
// token to its endpoint alone too). Any other host gets what git-lfs would give it, in git-lfs's
// order. The sources:
//
//	every host:         lfs.<url>.access = none: no credential at all;
//	a Hub endpoint:     a password in the LFS URL or the git remote URL (https://user:token@host/...)
//	                    at the endpoint's origin; HF_TOKEN (trimmed); the Hub token file
//	                    (HF_TOKEN_PATH, else $HF_HOME/token, else ~/.cache/huggingface/token);
//	                    ~/.netrc for the endpoint's host; for SSH remotes ssh git-lfs-authenticate;
//	                    git credential (the order of the Hub's own git-xet);
//	any other endpoint: for SSH remotes `ssh [-p port] user@host git-lfs-authenticate <path>
//	                    <operation>`, whose header is forwarded verbatim and re-asked when its
//	                    expires_in runs out; a password in the LFS URL or the git remote URL at the
//	                    endpoint's origin; ~/.netrc; git credential (git-lfs's order).
//
// `git credential fill` is asked for the URL git-lfs asks it for (credentialURL: the git remote's,
// with its path under credential.useHttpPath, but no user name), approved after a success and
// rejected after a 401, as git does; the fill after a 401 tells the helpers what the server asked
// for (Challenged), and a helper may answer a scheme of its own (helperAnswer), as with git-lfs.
// Tokens are sent as "Authorization: Bearer <token>", which both the Hub's LFS routes and its
// token routes accept; a source that names a user too also gives HTTP Basic for plain LFS servers
// (Credential.ForLFS). The host is the LFS endpoint's (lfs.url,
// remote.<r>.lfsurl), not the git remote's, when they differ; for an SSH remote whose
// git-lfs-authenticate names an href on another origin, the href's, as git-lfs keys it (which
// walk applies, the Hub's or git-lfs's, is decided by that host too). The credential is for
// requests to that origin only (For): a href of another host that an LFS server names gets none. The
// endpoint is internal/gitrepo's (git-lfs's order); the netrc parser, the SSH command line,
// URL-keyed git config and the credential helpers are git-lfs's own
// (github.com/git-lfs/git-lfs/v3), given the repository's config snapshot and the environment the
// caller passes (Env): this package runs no git to read config and reads no environment variable
// itself.
package credentials

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/git-lfs/git-lfs/v3/config"
	"github.com/git-lfs/git-lfs/v3/creds"
	"github.com/git-lfs/git-lfs/v3/lfshttp"
	"golang.org/x/net/http/httpguts"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// Env is what the resolver takes from the process environment. The command fills it (EnvFrom);
// nothing here reads the environment.
type Env struct {
	HFToken     string // HF_TOKEN
	HFTokenPath string // HF_TOKEN_PATH
	HFHome      string // HF_HOME
	Home        string // HOME: the default token file is under it
	// HFEndpoint is HF_ENDPOINT, a Hub of the user's own choosing (a mirror, an enterprise Hub):
	// its origin gets the Hugging Face credentials as huggingface.co does. Only the environment
	// sets it, never a repository.
	HFEndpoint string
	// OS is the whole environment as KEY=VALUE, which git-lfs's packages read (GIT_SSH,
	// GIT_SSH_COMMAND, GIT_ASKPASS, GIT_TERMINAL_PROMPT, NETRC, HOME, ...).
	OS []string
}

// EnvFrom picks Env out of environ (KEY=VALUE strings, as os.Environ returns them).
func EnvFrom(environ []string) Env {
	e := Env{OS: environ}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HF_TOKEN":
			e.HFToken = v
		case "HF_TOKEN_PATH":
			e.HFTokenPath = v
		case "HF_HOME":
			e.HFHome = v
		case "HOME":
			e.Home = v
		case "HF_ENDPOINT":
			e.HFEndpoint = v
		}
	}
	return e
}

// Credential is what to send for one request. Its String form names the source, never the secret.
type Credential struct {
	// Authorization is the header value ("Bearer hf_...", or what git-lfs-authenticate said); empty
	// for no credential.
	Authorization string
	// basic is "Basic base64(user:password)" when the source named a user too (URL user info, a
	// netrc login, a credential helper's username): what plain LFS servers want on their routes.
	basic string
	// Source says where it came from ("HF_TOKEN", "token file /home/u/.cache/huggingface/token",
	// "git credential", ...), for messages.
	Source string

	helper *creds.CredentialHelperWrapper // source 7: approve / reject through it
}

// ForLFS is the Authorization value for an LFS server's own routes (batch, objects): HTTP Basic
// when the source gave a user name (plain LFS servers check user and password; the Hub takes the
// token as the password), else Authorization.
func (c Credential) ForLFS() string {
	if c.basic != "" {
		return c.basic
	}
	return c.Authorization
}

// None reports whether the credential sends nothing.
func (c Credential) None() bool { return c.Authorization == "" }

func (c Credential) String() string { return c.Source }

// Scrub returns s with every form of the credential's secret replaced by "[redacted]"
// (redact.Secrets): for text a server sent back (an error page that echoes the request's headers)
// before it reaches an error or a log.
func (c Credential) Scrub(s string) string { return redact.Secrets(s, c.Authorization, c.basic) }

// Set puts the credential on a request (nothing for None).
func (c Credential) Set(h http.Header) {
	if c.Authorization != "" {
		h.Set("Authorization", c.Authorization)
	}
}

// ErrNone is returned (wrapped, with the host and what to do) when no source has a credential.
var ErrNone = errors.New("no credential found")

// Resolver finds the credential of one LFS endpoint. It is safe for concurrent use.
type Resolver struct {
	env       Env
	cfg       *config.Configuration
	endpoint  lfshttp.Endpoint // the LFS endpoint (SSH metadata for ssh remotes)
	remoteURL string           // the git remote's URL (may hold user info)
	lfs       *lfshttp.Client  // runs git-lfs-authenticate, caching its answer until it expires

	// helper is the credential helper chain git credential is asked through: nil for git-lfs's
	// own (netrc, its cache, askpass, `git credential`), which production always uses.
	helper creds.CredentialHelper

	mu        sync.Mutex
	challenge []string // wwwauth[] for the next fill: the last 401's challenge at this origin (Challenged)
	state     []string // state[] for the next fill: what the helper answered with the credential last refused
	cached    *Credential
	approved  bool        // the cached helper credential was approved (once per process, as git does per command)
	pending   *resolution // the resolution under way, shared by the callers that come meanwhile
	gen       int         // counts Rejects: a resolution begun before one is not kept
	rejected  string      // the Authorization of the credential last rejected
}

// resolution is one walk of the sources, on a goroutine of its own (Get: why).
type resolution struct {
	done chan struct{} // closed once c and err are set
	gen  int           // the count of Rejects when it began
	c    Credential
	err  error
}

// NewForURL returns the resolver of an LFS endpoint given as a URL (…/info/lfs), not a remote, with
// repo's configuration (credential helpers, URL-keyed settings). Nothing is resolved yet.
func NewForURL(ctx context.Context, repo *gitrepo.Repo, env Env, lfsURL, operation string) (*Resolver, error) {
	ep, err := repo.URLEndpoint(ctx, operation, lfsURL)
	if err != nil {
		return nil, err
	}
	return newResolver(repo, env, ep, lfsURL), nil
}

// New returns the resolver for remote (a remote name such as "origin", or a URL) and operation
// ("upload" or "download") of repo, its endpoint found as git-lfs finds it. Nothing is resolved
// yet.
func New(ctx context.Context, repo *gitrepo.Repo, env Env, remote, operation string) (*Resolver, error) {
	ep, err := repo.Endpoint(ctx, operation, remote)
	if err != nil {
		return nil, err
	}
	gitURL, err := repo.GitURL(ctx, operation, remote)
	if err != nil {
		return nil, err
	}
	return newResolver(repo, env, ep, gitURL), nil
}

func newResolver(repo *gitrepo.Repo, env Env, ep gitrepo.Endpoint, remoteURL string) *Resolver {
	cfg := repo.LFSConfiguration(env.OS)
	return &Resolver{
		env: env, cfg: cfg, endpoint: ep.Endpoint, remoteURL: remoteURL,
		lfs: lfshttp.NewClient(cfg),
	}
}

// Endpoint is the LFS endpoint URL (…/info/lfs) as git-lfs computes it, before any SSH answer.
func (r *Resolver) Endpoint() string { return r.endpoint.Url }

// LFSURL is the LFS endpoint URL to call: for SSH remotes the href git-lfs-authenticate answers
// (which runs ssh), else Endpoint.
func (r *Resolver) LFSURL(ctx context.Context) (string, error) {
	if !r.SSH() {
		return r.endpoint.Url, nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	type answer struct {
		href string
		err  error
	}
	done := make(chan answer, 1)
	go func() { // ssh takes no context: see Get
		_, href, err := r.sshAuthenticate()
		done <- answer{href, err}
	}()
	select {
	case a := <-done:
		return a.href, a.err
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for ssh %s git-lfs-authenticate: %w", r.endpoint.SSHMetadata.UserAndHost, ctx.Err())
	}
}

// SSH reports whether the endpoint is reached through git-lfs-authenticate.
func (r *Resolver) SSH() bool { return r.endpoint.SSHMetadata.UserAndHost != "" }

// Host is scheme://host of the LFS endpoint, the key of netrc and of git credential (for an SSH
// remote, until git-lfs-authenticate names an href on another host).
func (r *Resolver) Host() string { return hostOf(r.endpoint.Url) }

// hostOf is scheme://host of rawURL, rawURL itself when it does not parse.
func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Scheme + "://" + u.Host
}

// Get returns the credential, resolving it on first use. An SSH credential is asked again when
// git-lfs-authenticate's answer expires (git-lfs caches it until then); the others are kept until
// Reject.
//
// git-lfs's credential helpers and ssh take no context and may wait for as long as their helper
// does (a prompt, a keyring): the resolution runs on a goroutine of its own, which the callers of
// the meantime share, and a caller whose ctx ends (Ctrl-C, SIGTERM, git-lfs gone) stops waiting at
// once. The resolution ends when the helper does; what it found is kept for the next caller.
func (r *Resolver) Get(ctx context.Context) (Credential, error) {
	r.mu.Lock()
	if r.cached != nil {
		c := *r.cached
		r.mu.Unlock()
		return c, nil
	}
	if err := ctx.Err(); err != nil {
		r.mu.Unlock()
		return Credential{}, err
	}
	p := r.pending
	if p == nil || p.gen != r.gen { // none, or one begun before a Reject: it may find what was refused
		p = &resolution{done: make(chan struct{}), gen: r.gen}
		r.pending = p
		go r.run(p)
	}
	r.mu.Unlock()
	select {
	case <-p.done:
		return p.c, p.err
	case <-ctx.Done():
		return Credential{}, fmt.Errorf("waiting for the credential of %s: %w", r.Host(), ctx.Err())
	}
}

// run resolves for p and ends it: a credential to keep is kept unless a Reject came meanwhile.
func (r *Resolver) run(p *resolution) {
	c, cache, err := r.resolve()
	r.mu.Lock()
	if err == nil && cache && p.gen == r.gen {
		r.cached = &c
	}
	if r.pending == p {
		r.pending = nil
	}
	r.mu.Unlock()
	p.c, p.err = c, err
	close(p.done)
}

// resolve walks the sources in order: the Hub's for a Hub endpoint, git-lfs's for any other.
// cache: keep the answer for the process.
//
// The sources are asked for the URL the requests go to, as git-lfs keys them: the LFS endpoint,
// or for an SSH remote the href git-lfs-authenticate answers when that is at another origin. So a
// header-less answer naming another host gets that host's netrc or git credential, never the
// remote host's, and the Hugging Face token only when that host is the Hub.
func (r *Resolver) resolve() (c Credential, cache bool, err error) {
	lfsURL := r.endpoint.Url
	if v, ok := config.NewURLConfig(r.cfg.GitEnv()).Get("lfs", withoutUser(lfsURL), "access"); ok && strings.EqualFold(v, "none") {
		return Credential{Source: "lfs." + withoutUser(lfsURL) + ".access = none"}, true, nil
	}
	var ssh Credential
	if r.SSH() {
		var href string
		if ssh, href, err = r.sshAuthenticate(); err != nil {
			return Credential{}, false, err
		}
		if origin(href) != origin(lfsURL) {
			lfsURL = href
		}
	}
	if !r.env.IsHub(lfsURL) {
		return r.resolveLFS(lfsURL, ssh)
	}
	if c, ok := r.urlCredential(lfsURL); ok {
		return c, true, nil
	}
	if c, ok, err := r.huggingFace(); err != nil || ok {
		return c, true, err
	}
	if c, ok, err := r.netrc(lfsURL); err != nil || ok {
		return c, true, err
	}
	if r.SSH() {
		if ssh.None() {
			err = fmt.Errorf("ssh %s git-lfs-authenticate answered no Authorization header", r.endpoint.SSHMetadata.UserAndHost)
		}
		return ssh, false, err
	}
	c, err = r.gitCredential(lfsURL, true)
	return c, true, err
}

// resolveLFS walks git-lfs's sources for lfsURL, which is not the Hub, in git-lfs's order: the
// header git-lfs-authenticate answered (ssh, SSH remotes), the URL's password, netrc, git
// credential. No Hugging Face credential is among them.
func (r *Resolver) resolveLFS(lfsURL string, ssh Credential) (Credential, bool, error) {
	if !ssh.None() {
		return ssh, false, nil
	}
	if c, ok := r.urlCredential(lfsURL); ok {
		return c, true, nil
	}
	if c, ok, err := r.netrc(lfsURL); err != nil || ok {
		return c, true, err
	}
	c, err := r.gitCredential(lfsURL, false)
	return c, true, err
}

// urlCredential is a password in the LFS URL or the git remote URL, when that URL is at lfsURL's
// origin and lfsURL is at the LFS endpoint's (scheme, host and port, as git-lfs compares them).
func (r *Resolver) urlCredential(lfsURL string) (Credential, bool) {
	home := origin(lfsURL)
	if home == "" || home != origin(r.endpoint.Url) {
		return Credential{}, false
	}
	for _, u := range []string{r.endpoint.OriginalUrl, r.endpoint.Url, r.remoteURL} {
		if p, ok := urlPassword(u); ok && origin(u) == home {
			c := bearer(p, "the password in the URL "+redact.URL(u))
			c.basic = basicAuth(urlUser(u), p)
			return c, true
		}
	}
	return Credential{}, false
}

// huggingFace is the user's Hugging Face token: HF_TOKEN, else the token file. Asked for Hub
// endpoints only.
func (r *Resolver) huggingFace() (Credential, bool, error) {
	if t := strings.TrimSpace(r.env.HFToken); t != "" {
		return bearer(t, "HF_TOKEN"), true, nil
	}
	path := r.env.tokenFile()
	if path == "" {
		return Credential{}, false, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Credential{}, false, nil
	}
	if err != nil {
		return Credential{}, false, fmt.Errorf("reading the Hugging Face token file %s: %w", path, err)
	}
	if t := strings.TrimSpace(string(b)); t != "" {
		return bearer(t, "token file "+path), true, nil
	}
	return Credential{}, false, nil
}

func bearer(token, source string) Credential {
	return Credential{Authorization: "Bearer " + token, Source: source}
}

// tokenFile is where the Hugging Face CLI keeps the user's token, "" when there is no home.
func (e Env) tokenFile() string {
	if e.HFTokenPath != "" {
		return e.HFTokenPath
	}
	if e.HFHome != "" {
		return filepath.Join(e.HFHome, "token")
	}
	if e.Home == "" {
		return ""
	}
	return filepath.Join(e.Home, ".cache", "huggingface", "token")
}

// netrc is the password of lfsURL's host in the netrc file git-lfs reads.
func (r *Resolver) netrc(lfsURL string) (Credential, bool, error) {
	u, err := url.Parse(lfsURL)
	if err != nil || u.Host == "" {
		return Credential{}, false, nil
	}
	f, path, err := creds.ParseNetrc(r.cfg.OSEnv())
	if err != nil {
		return Credential{}, false, fmt.Errorf("reading %s: %w", path, err)
	}
	m := f.FindMachine(u.Host, "")
	if m == nil {
		m = f.FindMachine(u.Hostname(), "")
	}
	if m == nil || m.IsDefault() || m.Password == "" {
		return Credential{}, false, nil
	}
	c := bearer(m.Password, "netrc "+path+" (machine "+u.Hostname()+")")
	if m.Login != "" {
		c.basic = basicAuth(m.Login, m.Password)
	}
	return c, true, nil
}

// sshAuthenticate runs git-lfs-authenticate (through git-lfs, which caches the answer until its
// expires_in) and forwards its Authorization header verbatim (none when it answered none).
// href is the LFS endpoint it names.
func (r *Resolver) sshAuthenticate() (c Credential, href string, err error) {
	req, err := r.lfs.NewRequest(http.MethodGet, r.endpoint, "", nil)
	if err != nil {
		return Credential{}, "", fmt.Errorf("ssh %s git-lfs-authenticate: %w", r.endpoint.SSHMetadata.UserAndHost, err)
	}
	href = strings.TrimSuffix(req.URL.String(), "/")
	a := req.Header.Get("Authorization")
	if a == "" {
		return Credential{}, href, nil
	}
	return Credential{Authorization: a, Source: "ssh " + r.endpoint.SSHMetadata.UserAndHost + " git-lfs-authenticate"}, href, nil
}

// gitCredential asks `git credential fill` (and the helpers git-lfs chains before it) for
// credentialURL(lfsURL). hub: lfsURL is the Hub's (the error says what to do there).
func (r *Resolver) gitCredential(lfsURL string, hub bool) (Credential, error) {
	host := hostOf(lfsURL)
	u := r.credentialURL(lfsURL)
	if u == nil {
		return Credential{}, fmt.Errorf("%w for %s", ErrNone, host)
	}
	// A context of git-lfs's helpers per fill: one is not safe for concurrent use (each
	// GetCredentialHelper writes a field its helpers read in Fill, Approve and Reject), and a
	// resolution begun after a Reject runs beside the one before it. The wrapper keeps its own for
	// the Approve or Reject that follows. Nothing is lost: what a fill finds is kept in r.cached.
	hc := creds.NewCredentialHelperContext(r.cfg.GitEnv(), r.cfg.OSEnv())
	r.mu.Lock()
	hc.SetWWWAuthHeaders(r.challenge) // git-lfs leaves it out under credential.<url>.skipWWWAuth
	hc.SetStateFields(r.state)
	r.mu.Unlock()
	w := hc.GetCredentialHelper(r.helper, u)
	if err := w.FillCreds(); err != nil {
		if !hub {
			return Credential{}, fmt.Errorf("%w for %s (tried the URL, netrc and git credential; HF_TOKEN and the Hugging Face token file "+
				"go only to huggingface.co, hf.co and $HF_ENDPOINT): store a credential for it with `git credential approve` or in ~/.netrc", ErrNone, host)
		}
		return Credential{}, fmt.Errorf("%w for %s (tried HF_TOKEN, the Hugging Face token file, netrc and git credential): "+
			"set HF_TOKEN, run `hf auth login --add-to-git-credential`, or store a token with `git credential approve`", ErrNone, host)
	}
	c, err := helperAnswer(w.Creds)
	if err != nil {
		return Credential{}, fmt.Errorf("%w for %s: %w", ErrNone, host, err)
	}
	c.helper = &w
	return c, nil
}

// helperAnswer reads the credential out of what git credential answered, as git reads it: an
// authentication scheme and its credential (authtype and credential, git 2.46's fields, which a
// helper may answer because git-lfs announces capability[]=authtype on every fill) are sent as
// "Authorization: <authtype> <credential>", to LFS routes too, as git-lfs sends them; without both,
// the password, as a bearer token and, with a user name, as HTTP Basic for LFS routes. A scheme
// that cannot go in a header is refused, naming the field, never its value.
func helperAnswer(a creds.Creds) (Credential, error) {
	scheme, secret := creds.FirstEntryForKey(a, "authtype"), creds.FirstEntryForKey(a, "credential")
	if scheme != "" && secret != "" {
		if !httpguts.ValidHeaderFieldName(scheme) { // an auth-scheme is a token, as a field name is
			return Credential{}, errors.New("git credential answered an authtype that is not an HTTP authentication scheme")
		}
		if !httpguts.ValidHeaderFieldValue(secret) {
			return Credential{}, errors.New("git credential answered a credential with characters a header cannot carry")
		}
		return Credential{Authorization: scheme + " " + secret, Source: "git credential (" + scheme + ")"}, nil
	}
	pass := strings.TrimSpace(creds.FirstEntryForKey(a, "password"))
	if pass == "" {
		return Credential{}, errors.New("git credential gave no password")
	}
	c := Credential{Authorization: "Bearer " + pass, Source: "git credential"}
	if user := creds.FirstEntryForKey(a, "username"); user != "" {
		c.basic = basicAuth(user, pass)
	}
	return c, nil
}

// maxChallenges and maxChallengeLine bound the challenge kept for a helper: a server's 401 may
// carry any number of authenticate headers (the transport allows 10 MB of them), and git refuses
// a credential line of 64 KiB or more.
const (
	maxChallenges    = 16
	maxChallengeLine = 65535 - len("wwwauth[]=") - 1
)

// Challenged keeps what a 401 from rawURL asked for, its LFS-Authenticate and then its
// WWW-Authenticate values (git-lfs's order), for the credential helpers of the next fill
// (wwwauth[]), as git-lfs hands them over: a helper such as Git Credential Manager picks its flow
// by them. Only a 401 from the credential's origin counts (For): another host's challenge is not
// the configured server's. It replaces the challenge kept before.
func (r *Resolver) Challenged(ctx context.Context, rawURL string, h http.Header) {
	home, err := r.home(ctx)
	if err != nil || !sameService(home, rawURL) {
		return
	}
	var ch []string
	for _, k := range []string{"Lfs-Authenticate", "Www-Authenticate"} {
		for _, v := range h.Values(k) {
			if len(ch) < maxChallenges && len(v) <= maxChallengeLine && httpguts.ValidHeaderFieldValue(v) {
				ch = append(ch, v)
			}
		}
	}
	r.mu.Lock()
	r.challenge = ch
	r.mu.Unlock()
}

// credentialURL is the URL git credential is asked for, picked as git-lfs picks it: the git
// remote's URL when it is at lfsURL's scheme and host, else lfsURL. The helper gets its scheme,
// host and, under credential.useHttpPath, its path (so a credential git stored for the remote's
// path is the one found), and credential.<url>.* settings match it; nil when lfsURL has no host.
//
// Unlike git-lfs, the URL's user name is left out: a token may be the whole user info
// (https://TOKEN@host/..., as GitHub and Azure DevOps take them), and git prints the user name in
// its "could not read Password for" error, which would put the token in the agent's output.
func (r *Resolver) credentialURL(lfsURL string) *url.URL {
	u, err := url.Parse(lfsURL)
	if err != nil || u.Host == "" {
		return nil
	}
	if remote, err := url.Parse(r.remoteURL); err == nil && remote.Scheme == u.Scheme && remote.Host == u.Host {
		u = remote
	}
	u.User = nil
	return u
}

// Approve tells the credential helper a credential worked (git credential approve), as git does,
// once per credential.
func (r *Resolver) Approve(c Credential) {
	if c.helper == nil {
		return
	}
	r.mu.Lock()
	done := r.approved
	r.approved = true
	r.mu.Unlock()
	if !done {
		_ = c.helper.CredentialHelper.Approve(c.helper.Creds)
	}
}

// Reject forgets a credential the server refused (401): the helper's copy is rejected (git
// credential reject) and the next Get resolves again. A credential already rejected, or already
// replaced by a newer one, is left alone: the requests that shared it are refused together, and
// one rejection (one erase, one new fill) is what they need. An empty c (a refusal whose
// credential is unknown) always forgets what is kept.
//
// As git-lfs does, the next fill hands back the state[] the helper answered with c, and a
// credential the helper marked as one stage of several (continue, git's multistage
// authentication: the 401 carries the next stage's challenge) is not rejected to the helper: the
// helper answers the next stage from that state.
func (r *Resolver) Reject(c Credential) {
	r.mu.Lock()
	if c.Authorization != "" && ((r.cached != nil && r.cached.Authorization != c.Authorization) || (r.cached == nil && r.rejected == c.Authorization)) {
		r.mu.Unlock()
		return
	}
	r.cached, r.approved = nil, false
	r.rejected = c.Authorization
	r.gen++
	if c.helper != nil {
		r.state = slices.Clone(c.helper.Creds["state[]"])
	}
	r.mu.Unlock()
	if c.helper != nil && !c.helper.Creds.IsMultistage() {
		_ = c.helper.CredentialHelper.Reject(c.helper.Creds)
	}
}

// EndExchange is told when a request ends refused after its last credential: the state a helper
// answered (Reject) is dropped, so the next fill begins a multistage exchange again, as git-lfs
// begins it after its last attempt, rather than carrying on from a stage the server refused.
func (r *Resolver) EndExchange() {
	r.mu.Lock()
	r.state = nil
	r.mu.Unlock()
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func urlUser(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}

func urlPassword(s string) (string, bool) {
	if !strings.Contains(s, "@") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return "", false
	}
	p, ok := u.User.Password()
	return p, ok && p != ""
}

func withoutUser(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
