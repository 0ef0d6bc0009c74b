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

	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
)

// Repo is one repository's configuration snapshot and location, loaded lazily (internal/lazy: one
// git call at a time per value, a failed one tried again by the next caller). It is safe for
// concurrent use.
type Repo struct {
	git Git

	loc  lazy.Value[Location]
	gitc lazy.Value[*gitConfig] // git config -l -z
	snap lazy.Value[*snapshot]  // with .lfsconfig
}

// gitConfig is git config's entries (git config -l -z), in order, and their values by key.
type gitConfig struct {
	entries []Entry
	vals    map[string][]string
}

// snapshot is what git-lfs sees of the configuration: git config with .lfsconfig merged.
type snapshot struct {
	git       *gitConfig
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
	return r.loc.Get(ctx, r.git.location)
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

func (r *Repo) snapshot(ctx context.Context) (*snapshot, error) { return r.snap.Get(ctx, r.load) }

// gitConfig reads git config alone: what a key that .lfsconfig cannot set needs.
func (r *Repo) gitConfig(ctx context.Context) (*gitConfig, error) {
	return r.gitc.Get(ctx, func(ctx context.Context) (*gitConfig, error) {
		out, err := r.git.output(ctx, "config", "--includes", "-l", "-z")
		if err != nil {
			return nil, fmt.Errorf("reading git config: %w", err)
		}
		gc := &gitConfig{entries: ParseList(out), vals: map[string][]string{}}
		for _, e := range gc.entries {
			if !e.NoValue {
				gc.vals[e.Key] = append(gc.vals[e.Key], e.Value)
			}
		}
		return gc, nil
	})
}

func (r *Repo) load(ctx context.Context) (*snapshot, error) {
	gc, err := r.gitConfig(ctx)
	if err != nil {
		return nil, err
	}
	s := &snapshot{git: gc}
	loc, err := r.Location(ctx)
	switch {
	case err == nil:
		if s.lfsCfg, err = r.git.readLFSConfig(ctx, loc); err != nil {
			return nil, err
		}
	case ctx.Err() != nil: // not "outside a repository", where there is no .lfsconfig
		return nil, ctx.Err()
	}
	s.merge()
	return s, nil
}

// merge builds what git-lfs's config package builds from its two sources: .lfsconfig first,
// restricted to the keys it may set, then git config, so that git config's value of a key is
// the last, the one Get answers. Keys without a value are left out, as git-lfs leaves them out.
func (s *snapshot) merge() {
	s.merged = map[string][]string{}
	s.lfsRemote = map[string]bool{}
	seen := map[string]bool{}
	for _, e := range s.lfsCfg {
		if e.NoValue || !safeInLFSConfig(e.Key) {
			continue
		}
		s.merged[e.Key] = append(s.merged[e.Key], e.Value)
		if name, ok := remoteOf(e.Key); ok {
			s.lfsRemote[name] = true
		}
	}
	for _, e := range s.git.entries {
		if name, ok := remoteOf(e.Key); ok && !seen[name] {
			seen[name] = true
			s.remotes = append(s.remotes, name)
			delete(s.lfsRemote, name)
		}
		if !e.NoValue {
			s.merged[e.Key] = append(s.merged[e.Key], e.Value)
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
// when the key is not set; a key set without a value reads as "" and ok. err: git could not be
// asked (ctx ended, or no repository where one is needed).
func (r *Repo) Get(ctx context.Context, key string) (v string, ok bool, err error) {
	all, err := r.GetAll(ctx, key)
	if err != nil || len(all) > 0 {
		return last(all), len(all) > 0, err
	}
	gc, err := r.gitConfig(ctx)
	if err != nil {
		return "", false, err
	}
	return "", gc.noValue(key), nil
}

// GetAll returns every value of key in order: .lfsconfig's (for the keys it may set), then git
// config's. A key .lfsconfig cannot set is looked up without reading .lfsconfig.
func (r *Repo) GetAll(ctx context.Context, key string) ([]string, error) {
	k := foldKey(key)
	if safeInLFSConfig(k) {
		s, err := r.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		return slices.Clone(s.merged[k]), nil
	}
	gc, err := r.gitConfig(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(gc.vals[k]), nil
}

func last(all []string) string {
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1]
}

// get is Get on a loaded snapshot (the endpoint resolver's).
func (s *snapshot) get(key string) (string, bool) {
	if all := s.merged[foldKey(key)]; len(all) > 0 {
		return all[len(all)-1], true
	}
	return "", s.git.noValue(key)
}

// noValue reports whether git config sets key without a value.
func (gc *gitConfig) noValue(key string) bool {
	k := foldKey(key)
	for _, e := range gc.entries {
		if e.Key == k && e.NoValue {
			return true
		}
	}
	return false
}

// Bool is key read as git reads a boolean (a key without a value is true), def when unset or not
// a boolean.
func (r *Repo) Bool(ctx context.Context, key string, def bool) (bool, error) {
	v, ok, err := r.Get(ctx, key)
	if err != nil || !ok {
		return def, err
	}
	if v == "" {
		if gc, err := r.gitConfig(ctx); err == nil && gc.noValue(key) {
			return true, nil
		}
	}
	return config.Bool(v, def), nil
}

// URLGet returns <prefix>.<url>.<key> for the configured URL that best matches rawurl, by git's
// rules for http.<url>.* (git-lfs's URLConfig), else <prefix>.<key>.
func (r *Repo) URLGet(ctx context.Context, prefix, rawurl, key string) (string, bool, error) {
	env, err := r.Env(ctx)
	if err != nil {
		return "", false, err
	}
	v, ok := config.NewURLConfig(env).Get(prefix, rawurl, key)
	return v, ok, nil
}

// Remotes lists the remotes git config names, and those .lfsconfig names by a remote.<r>.lfsurl.
func (r *Repo) Remotes(ctx context.Context) ([]string, error) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return s.remoteNames(), nil
}

func (s *snapshot) remoteNames() []string {
	var only []string
	for name := range s.lfsRemote {
		only = append(only, name)
	}
	slices.Sort(only)
	return append(slices.Clone(s.remotes), only...)
}

// Env is the snapshot as git-lfs's config.Environment, for git-lfs's own packages (URLConfig,
// creds, lfshttp): what they read from it is what git-lfs reads.
func (r *Repo) Env(ctx context.Context) (config.Environment, error) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return config.EnvironmentOf(fetcher(s.merged)), nil
}

// LFSConfiguration is a git-lfs config.Configuration over the snapshot and osEnv (the process's
// environment as KEY=VALUE strings, given by the caller, which owns reading the environment): what
// git-lfs's lfshttp and creds packages take, built without running git.
//
// git-lfs's packages ask it without a context: the snapshot is the one a caller loaded (Load), else
// it is loaded here with no deadline, and a configuration that cannot be read reads as empty (the
// caller that must report that calls Load first).
func (r *Repo) LFSConfiguration(osEnv []string) *config.Configuration {
	cfg := config.NewFrom(config.Values{}) // empty: NewFrom prints each value it is given
	cfg.Git = config.EnvironmentOf(fetcher(nil))
	if env, err := r.Env(context.Background()); err == nil {
		cfg.Git = env
	}
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
