// Package gitrepo is the repository the process runs in, as git and git-lfs see it: one snapshot
// of its git configuration (read once, with .lfsconfig merged by git-lfs's rules), where its git
// directory and work tree are, a runner of git commands, and the one resolver of the LFS endpoint
// of a remote (Endpoint), which answers what git-lfs answers.
//
// A Repo runs at most three git processes in its life, each only when first needed: `git config
// -l -z`; `git rev-parse` (Location, and finding .lfsconfig); and, when the repository has a
// .lfsconfig, `git config -l -z` on it. .lfsconfig is read only for a key it may set, or for the
// endpoint. Settings changed after that are not seen: a process that writes config and reads it
// back makes a new Repo.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/git-lfs/git-lfs/v3/config"
)

// Repo is one repository's configuration snapshot and location, loaded lazily. It is safe for
// concurrent use.
type Repo struct {
	git Git

	locOnce sync.Once
	loc     Location
	locErr  error

	gitOnce sync.Once
	gitErr  error
	gitCfg  []Entry             // git config -l -z, in order
	gitVals map[string][]string // gitCfg's values by key

	cfgOnce   sync.Once
	cfgErr    error
	lfsCfg    []Entry             // .lfsconfig, every entry (unsafe keys included), in order
	merged    map[string][]string // what git-lfs sees: safe .lfsconfig values, then git config's
	remotes   []string            // remotes named in git config, in order
	lfsRemote map[string]bool     // remotes named only by a remote.<r>.lfsurl of .lfsconfig
}

// Location is where the repository is.
type Location struct {
	GitDir    string // absolute
	CommonDir string // absolute: the git directory shared by linked work trees, where git-lfs keeps objects
	TopLevel  string // the work tree's root; "" in a bare repository or inside the git directory
	Bare      bool
}

var (
	openMu sync.Mutex
	opened = map[string]*Repo{}
)

// Open returns the process's Repo of dir ("" = the current directory): the same Repo for the same
// dir on every call, so a process reads its configuration once.
func Open(dir string) *Repo {
	openMu.Lock()
	defer openMu.Unlock()
	key := filepath.Clean(dir) // "" and "." are the current directory
	if r := opened[key]; r != nil {
		return r
	}
	r := New(Git{Dir: dir})
	opened[key] = r
	return r
}

// New returns a Repo of g's directory of its own, loaded on first use (not shared with Open's).
func New(g Git) *Repo { return &Repo{git: g} }

// Location runs `git rev-parse` once and returns where the repository is.
func (r *Repo) Location(ctx context.Context) (Location, error) {
	r.locOnce.Do(func() { r.loc, r.locErr = r.git.location(ctx) })
	return r.loc, r.locErr
}

// location asks git for the git directories, whether the repository is bare, and its top level,
// in one call. In a bare repository (or inside .git) --show-toplevel fails after the others were
// printed: that is a repository without a work tree, not an error.
func (g Git) location(ctx context.Context) (Location, error) {
	out, err := g.output(ctx, "rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir", "--show-toplevel")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || lines[1] == "" || lines[2] == "" {
		if err == nil {
			err = errors.New("git rev-parse printed no git directory")
		}
		return Location{}, fmt.Errorf("finding the repository's .git directory (is this inside a git repository?): %w", err)
	}
	loc := Location{Bare: lines[0] == "true", GitDir: filepath.Clean(lines[1]), CommonDir: lines[2]}
	if !filepath.IsAbs(loc.CommonDir) { // relative to the directory git ran in
		base, werr := filepath.Abs(g.Dir)
		if werr != nil {
			return Location{}, fmt.Errorf("finding the repository's git directory: %w", werr)
		}
		loc.CommonDir = filepath.Join(base, loc.CommonDir)
	}
	loc.CommonDir = filepath.Clean(loc.CommonDir)
	if len(lines) > 3 && err == nil {
		loc.TopLevel = filepath.Clean(lines[3])
	}
	return loc, nil
}

// Load reads the configuration, .lfsconfig included (once; later calls return the first answer).
// Get and the others call it themselves; a caller that must report a failure calls it first.
func (r *Repo) Load(ctx context.Context) error {
	r.cfgOnce.Do(func() { r.cfgErr = r.load(ctx) })
	return r.cfgErr
}

// loadGit reads git config alone: what a key that .lfsconfig cannot set needs.
func (r *Repo) loadGit(ctx context.Context) error {
	r.gitOnce.Do(func() {
		out, err := r.git.output(ctx, "config", "--includes", "-l", "-z")
		if err != nil {
			r.gitErr = fmt.Errorf("reading git config: %w", err)
			return
		}
		r.gitCfg = ParseList(out)
		r.indexGit()
	})
	return r.gitErr
}

func (r *Repo) indexGit() {
	r.gitVals = map[string][]string{}
	for _, e := range r.gitCfg {
		if !e.NoValue {
			r.gitVals[e.Key] = append(r.gitVals[e.Key], e.Value)
		}
	}
}

func (r *Repo) load(ctx context.Context) error {
	if err := r.loadGit(ctx); err != nil {
		return err
	}
	if loc, err := r.Location(ctx); err == nil { // outside a repository there is no .lfsconfig
		if r.lfsCfg, err = r.git.readLFSConfig(ctx, loc); err != nil {
			return err
		}
	}
	r.merge()
	return nil
}

// merge builds what git-lfs's config package builds from its two sources: .lfsconfig first,
// restricted to the keys it may set, then git config, so that git config's value of a key is
// the last, the one Get answers. Keys without a value are left out, as git-lfs leaves them out.
func (r *Repo) merge() {
	r.merged = map[string][]string{}
	r.lfsRemote = map[string]bool{}
	seen := map[string]bool{}
	for _, e := range r.lfsCfg {
		if e.NoValue || !safeInLFSConfig(e.Key) {
			continue
		}
		r.merged[e.Key] = append(r.merged[e.Key], e.Value)
		if name, ok := remoteOf(e.Key); ok {
			r.lfsRemote[name] = true
		}
	}
	for _, e := range r.gitCfg {
		if name, ok := remoteOf(e.Key); ok && !seen[name] {
			seen[name] = true
			r.remotes = append(r.remotes, name)
			delete(r.lfsRemote, name)
		}
		if !e.NoValue {
			r.merged[e.Key] = append(r.merged[e.Key], e.Value)
		}
	}
}

// remoteOf is the remote a remote.<name>.<key> key configures.
func remoteOf(key string) (string, bool) {
	if !strings.HasPrefix(key, "remote.") {
		return "", false
	}
	rest := key[len("remote."):]
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// Get returns the last value of key (git config over .lfsconfig), as git-lfs reads it. ok is false
// when the key is not set; a key set without a value reads as "" and ok.
func (r *Repo) Get(key string) (string, bool) {
	all := r.GetAll(key)
	if len(all) == 0 {
		if r.noValue(key) {
			return "", true
		}
		return "", false
	}
	return all[len(all)-1], true
}

// GetAll returns every value of key in order: .lfsconfig's (for the keys it may set), then git
// config's. A key .lfsconfig cannot set is looked up without reading .lfsconfig.
func (r *Repo) GetAll(key string) []string {
	k := foldKey(key)
	if safeInLFSConfig(k) {
		_ = r.Load(context.Background())
		return append([]string(nil), r.merged[k]...)
	}
	_ = r.loadGit(context.Background())
	return append([]string(nil), r.gitVals[k]...)
}

func (r *Repo) noValue(key string) bool {
	k := foldKey(key)
	_ = r.loadGit(context.Background())
	for _, e := range r.gitCfg {
		if e.Key == k && e.NoValue {
			return true
		}
	}
	return false
}

// Bool is key read as git reads a boolean (a key without a value is true), def when unset or not
// a boolean.
func (r *Repo) Bool(key string, def bool) bool {
	v, ok := r.Get(key)
	if !ok {
		return def
	}
	if v == "" && r.noValue(key) {
		return true
	}
	return config.Bool(v, def)
}

// URLGet returns <prefix>.<url>.<key> for the configured URL that best matches rawurl, by git's
// rules for http.<url>.* (git-lfs's URLConfig), else <prefix>.<key>.
func (r *Repo) URLGet(prefix, rawurl, key string) (string, bool) {
	return config.NewURLConfig(r.Env()).Get(prefix, rawurl, key)
}

// Remotes lists the remotes git config names, and those .lfsconfig names by a remote.<r>.lfsurl.
func (r *Repo) Remotes() []string {
	_ = r.Load(context.Background())
	var only []string
	for name := range r.lfsRemote {
		only = append(only, name)
	}
	slices.Sort(only)
	return append(append([]string(nil), r.remotes...), only...)
}

// Env is the snapshot as git-lfs's config.Environment, for git-lfs's own packages (URLConfig,
// creds, lfshttp): what they read from it is what git-lfs reads.
func (r *Repo) Env() config.Environment {
	_ = r.Load(context.Background())
	return config.EnvironmentOf(fetcher(r.merged))
}

// LFSConfiguration is a git-lfs config.Configuration over the snapshot and osEnv (the process's
// environment as KEY=VALUE strings, given by the caller, which owns reading the environment): what
// git-lfs's lfshttp and creds packages take, built without running git.
func (r *Repo) LFSConfiguration(osEnv []string) *config.Configuration {
	cfg := config.NewFrom(config.Values{}) // empty: NewFrom prints each value it is given
	cfg.Git = r.Env()
	vars := environ{}
	for _, kv := range osEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	cfg.Os = config.EnvironmentOf(vars)
	return cfg
}

// environ is a config.Fetcher over environment variables: exact names, the last value of each, no
// listing (as git-lfs's OsFetcher).
type environ map[string]string

func (e environ) Get(key string) (string, bool) { v, ok := e[key]; return v, ok }

func (e environ) GetAll(key string) []string {
	if v, ok := e[key]; ok {
		return []string{v}
	}
	return []string{}
}

func (e environ) All() map[string][]string { return nil }

// fetcher is a config.Fetcher over fixed values, looked up as git-lfs's GitFetcher does.
type fetcher map[string][]string

func (f fetcher) Get(key string) (string, bool) {
	all := f.GetAll(key)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

func (f fetcher) GetAll(key string) []string {
	if v, ok := f[key]; ok {
		return v
	}
	return f[foldKey(key)]
}

func (f fetcher) All() map[string][]string {
	m := make(map[string][]string, len(f))
	for k, v := range f {
		m[k] = append([]string(nil), v...)
	}
	return m
}
