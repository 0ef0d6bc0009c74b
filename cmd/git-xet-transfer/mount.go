package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/mount"
	"github.com/git-xet-transfer/git-xet-transfer/agent/mount/xetfile"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gittree"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkcache"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// DefaultMountCacheSize is the bound of a repository's mount cache when neither --cache-size nor
// xet.mountCacheSize says otherwise.
const DefaultMountCacheSize = 10 << 30

// mountMemoryLimit is the Go heap's soft limit in a mount process: the memory cache of chunks and the
// fetches in flight stay well under it, and the collector keeps the process near it, not at twice.
const mountMemoryLimit = 160 << 20

type mountFlags struct {
	rev, cacheSize, remote string
	background             bool
	readyFD                int // set by --background in the process it starts: where to say it is mounted
	dir                    string
}

func parseMountFlags(args []string, stderr io.Writer) (mountFlags, bool) {
	f := mountFlags{}
	fs := flag.NewFlagSet("git-xet-transfer mount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.rev, "rev", "HEAD", "the revision shown: a commit, tag or branch")
	fs.StringVar(&f.cacheSize, "cache-size", "", "the bound of the chunk cache, e.g. 20GB (default: xet.mountCacheSize, else 10GiB)")
	fs.StringVar(&f.remote, "remote", "", "the remote whose LFS server holds the objects (default: remote.lfsdefault, else origin)")
	fs.BoolVar(&f.background, "background", false, "return once mounted, leaving the mount to a process of its own")
	fs.IntVar(&f.readyFD, "ready-fd", 0, "")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: git xet-transfer mount [--rev REV] [--cache-size SIZE] [--remote NAME] [--background] DIR")
		fmt.Fprintln(stderr, "Shows REV's tree at DIR, read-only; LFS files are read through Xet as they are read. Unmount with Ctrl-C or `git xet-transfer unmount DIR`.")
		fs.VisitAll(func(fl *flag.Flag) {
			if fl.Usage != "" {
				fmt.Fprintf(stderr, "  --%s\t%s\n", fl.Name, fl.Usage)
			}
		})
	}
	if err := fs.Parse(args); err != nil {
		return f, false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return f, false
	}
	f.dir = fs.Arg(0)
	return f, true
}

// runMount mounts a revision of the repository in the current directory: in the foreground until
// SIGINT, SIGTERM or SIGHUP, or until it is unmounted; with --background in a process of its own.
func runMount(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, ok := parseMountFlags(args, stderr)
	if !ok {
		return 2
	}
	if runtime.GOOS != "linux" {
		fmt.Fprintf(stderr, "git-xet-transfer mount: %v (this is %s)\n", mount.ErrNotSupported, runtime.GOOS)
		return 1
	}
	if f.background && f.readyFD == 0 {
		return startBackground(args, f, stderr)
	}
	ready := readyReporter(f.readyFD)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	debug.SetMemoryLimit(mountMemoryLimit)
	m, done, err := startMount(ctx, f, stderr)
	if err != nil {
		ready(err)
		fmt.Fprintf(stderr, "git-xet-transfer mount: %v\n", err)
		return 1
	}
	ready(nil)
	if f.readyFD == 0 {
		fmt.Fprintf(stderr, "mounted %s at %s; Ctrl-C or `git xet-transfer unmount %s` unmounts it\n", f.rev, f.dir, f.dir)
	}
	select {
	case <-ctx.Done():
	case <-m.Done():
	}
	if err := done(); err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer mount: %v\n", err)
		return 1
	}
	return 0
}

// startMount opens what a mount needs and mounts; done unmounts and closes it all.
func startMount(ctx context.Context, f mountFlags, stderr io.Writer) (*mount.Mount, func() error, error) {
	g := client.Git{}
	env := readEnvironment(os.Getenv, os.Environ())
	cfg := agentConfig(ctx, g, env)
	log, closeLog := agentLogger(cfg, stderr)
	stopProfile := profile(env.CPUProfile, log)
	closeLog = func(closeLog func()) func() { return func() { stopProfile(); closeLog() } }(closeLog)
	for _, p := range env.Problems {
		log.Warn().Msg(p)
	}
	repo := gitrepo.Open(g.Dir)
	loc, err := repo.Location(ctx)
	if err != nil {
		closeLog()
		return nil, nil, err
	}
	w, err := openMountWorld(ctx, f, env, cfg, repo, loc, log)
	if err != nil {
		closeLog()
		return nil, nil, err
	}
	m, err := mount.Start(mount.Options{Dir: f.dir, Tree: w.tree, Files: w.files, Find: finder(w.objects), Object: w.object,
		Log: log, Name: filepath.Base(loc.TopLevel) + "@" + f.rev})
	if err != nil {
		w.close()
		closeLog()
		return nil, nil, err
	}
	log.Info().Str("dir", f.dir).Str("rev", f.rev).Str("commit", w.commit).Msg("mount: mounted")
	done := func() error {
		w.files.Close() // reads waiting for bytes end now
		err := m.Stop()
		st := w.files.Stats()
		log.Info().Int64("fetched", st.Fetched).Int64("ranges", st.Ranges).Int64("from_cas", st.FromCAS).Int64("from_disk", st.FromDisk).
			Int64("from_local", st.FromLocal).Int64("from_objects", st.FromObject).Int64("bad", st.Bad).Msg("mount: unmounted")
		w.close()
		closeLog()
		return err
	}
	return m, done, nil
}

// mountWorld is what one mount holds open.
type mountWorld struct {
	commit  string
	tree    *gittree.Tree
	cache   *chunkcache.Cache
	objects *client.Objects
	files   *xetfile.Files
	lfsDir  string // git-lfs's object directory
}

func (w *mountWorld) close() {
	w.objects.Close()
	w.cache.Close()
}

// object is where git-lfs keeps object oid.
func (w *mountWorld) object(oid string) string {
	return filepath.Join(w.lfsDir, oid[0:2], oid[2:4], oid)
}

// openMountWorld resolves the revision and opens its tree, the cache, the client and the reader.
func openMountWorld(ctx context.Context, f mountFlags, env environment, cfg func(name, key string) string, repo *gitrepo.Repo,
	loc gitrepo.Location, log zerolog.Logger) (*mountWorld, error) {
	commit, err := client.Git{}.Run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", f.rev+"^{commit}")
	if err != nil || commit == "" {
		return nil, fmt.Errorf("%q is not a commit, tag or branch of this repository", f.rev)
	}
	tree, err := gittree.Open(loc.GitDir, commit)
	if err != nil {
		return nil, err
	}
	limit, err := mountCacheSize(ctx, f, repo)
	if err != nil {
		return nil, err
	}
	lfsDir, err := repo.LFSDir(ctx)
	if err != nil {
		return nil, err
	}
	cache, err := chunkcache.Open(filepath.Join(lfsDir, "xet", "mount-cache"), chunkcache.Options{Limit: limit, Log: log})
	if err != nil {
		return nil, err
	}
	o := env.clientOptions()
	o.Log, o.Git = log, client.Git{}
	o.StoreDir = func() string { return cfg("GIT_XET_STORE", "xet.store") }
	remote, err := mountRemote(ctx, f, repo)
	if err != nil {
		cache.Close()
		return nil, err
	}
	objects, err := client.NewObjects(ctx, o, remote)
	if err != nil {
		cache.Close()
		return nil, err
	}
	var local span.Local
	if idx := objects.ChunkIndex(ctx); idx != nil {
		local = idx
	}
	files := xetfile.New(xetfile.Config{Cache: cache, Local: local, Log: log, Wait: env.StallTimeout})
	return &mountWorld{commit: commit, tree: tree, cache: cache, objects: objects, files: files, lfsDir: filepath.Join(lfsDir, "objects")}, nil
}

// mountCacheSize is --cache-size, else xet.mountCacheSize, else the default.
func mountCacheSize(ctx context.Context, f mountFlags, repo *gitrepo.Repo) (int64, error) {
	v, from := f.cacheSize, "--cache-size"
	if v == "" {
		var err error
		if v, _, err = repo.Get(ctx, "xet.mountcachesize"); err != nil {
			return 0, err
		}
		from = "xet.mountCacheSize"
	}
	if v == "" {
		return DefaultMountCacheSize, nil
	}
	n, err := localshards.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a size such as 20GB or 512MiB", from, v)
	}
	if n < chunkcache.MinLimit {
		return 0, fmt.Errorf("%s %q is below the least cache, %d MiB", from, v, chunkcache.MinLimit>>20)
	}
	return n, nil
}

// mountRemote is --remote, else remote.lfsdefault, else origin (git-lfs's default remote).
func mountRemote(ctx context.Context, f mountFlags, repo *gitrepo.Repo) (string, error) {
	if f.remote != "" {
		return f.remote, nil
	}
	v, _, err := repo.Get(ctx, "remote.lfsdefault")
	if err != nil || v != "" {
		return v, err
	}
	return "origin", nil
}

// finder is the mount's FindFunc over the client's Objects.
func finder(objs *client.Objects) mount.FindFunc {
	return func(ctx context.Context, os []mount.Object) []mount.Found {
		req := make([]lfsbatch.Object, len(os))
		for i, o := range os {
			req[i] = lfsbatch.Object{OID: o.Oid, Size: o.Size}
		}
		res := objs.Find(ctx, req)
		out := make([]mount.Found, len(res))
		for i, r := range res {
			out[i] = mount.Found{Source: xetfile.Source(r.Source), Err: r.Err}
		}
		return out
	}
}

// runUnmount unmounts a mount of git-xet-transfer: a live one (its process exits) or one whose
// process died.
func runUnmount(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, "usage: git xet-transfer unmount DIR")
		return 2
	}
	if err := mount.Unmount(args[0]); err != nil {
		if errors.Is(err, mount.ErrNotSupported) {
			err = fmt.Errorf("%w (this is %s)", err, runtime.GOOS)
		}
		fmt.Fprintf(stderr, "git-xet-transfer unmount: %v\n", err)
		return 1
	}
	return 0
}
