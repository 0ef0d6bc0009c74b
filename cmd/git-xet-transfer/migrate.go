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
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/migrate"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/localshards"
)

type migrateFlags struct {
	remote, to, verify string
	refs               []string
	dryRun, lfsconfig  bool
	jobs, sessionMB    int
}

// runMigrate moves the repository's LFS objects to Xet: exit 0 when every object migrated, 3 when
// some could not be found (partial), 1 on an error.
func runMigrate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, ok := parseMigrateFlags(args, stderr)
	if !ok {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g := client.Git{}
	env := readEnvironment(os.Getenv, os.Environ())
	log, closeLog := agentLogger(agentConfig(ctx, g, env), stderr)
	defer closeLog()
	defer stopLeftPrograms(log)
	if f.dryRun { // nothing is opened on the target: it must not change
		return dryRunMigrate(ctx, f, log, stdout, stderr)
	}
	target, err := openTarget(ctx, g, f, env, log)
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer migrate: %s\n", shown(err))
		return 1
	}
	defer target.Close()
	o := migrate.Options{Dir: ".", Remote: f.remote, Refs: f.refs, Target: target, DryRun: f.dryRun,
		VerifyAll: f.verify == "all", Log: log, SessionBytes: int64(f.sessionMB) << 20, Jobs: f.jobs,
		Env: env.Credentials, Warnings: stderr}
	if root, err := env.CacheDirs.Root(); err == nil {
		if c, err := localshards.Open(localshards.EndpointDir(root, target.Where()),
			localshards.Options{Log: log, SizeLimit: env.CacheSizeLimit, MaxEntries: env.CacheMaxEntries}); err == nil {
			defer c.Close()
			o.Cache = c
		}
	}
	if isTerminal(stderr) {
		o.Progress = progressPrinter(stderr)
	}
	rep, err := migrate.Run(ctx, o)
	if rep != nil {
		rep.Print(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer migrate: %s\n", shown(err))
		return 1
	}
	if rep.Partial() {
		fmt.Fprintf(stderr, "git-xet-transfer migrate: %d objects could not be migrated (listed above); the rest is on %s. "+
			"The repository is not switched to Xet until every object is there: find the missing ones and run migrate again.\n", len(rep.Failed), target.Where())
		return 3
	}
	if err := switchToXet(ctx, g, f, target, stdout); err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer migrate: switching to Xet: %v\n", err)
		return 1
	}
	return 0
}

// dryRunMigrate walks and estimates without opening the target.
func dryRunMigrate(ctx context.Context, f migrateFlags, log zerolog.Logger, stdout, stderr io.Writer) int {
	rep, err := migrate.Run(ctx, migrate.Options{Dir: ".", Remote: f.remote, Refs: f.refs, DryRun: true, Log: log,
		Env: credentials.EnvFrom(os.Environ()), Warnings: stderr})
	if rep != nil {
		rep.Print(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer migrate: %s\n", shown(err))
		return 1
	}
	return 0
}

func parseMigrateFlags(args []string, stderr io.Writer) (migrateFlags, bool) {
	var f migrateFlags
	fs := flag.NewFlagSet("git-xet-transfer migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.remote, "remote", "origin", "the remote whose LFS objects move (and whose old LFS server serves those not in git-lfs's objects directory)")
	fs.Func("refs", "the refs whose history is walked: all (the default), or refs and revisions (repeat the flag, or separate them with commas)", func(v string) error {
		n := len(f.refs)
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				f.refs = append(f.refs, r)
			}
		}
		if len(f.refs) == n { // an empty variable in a script: not a request to migrate every ref
			return errors.New("names no ref (give refs, or all)")
		}
		return nil
	})
	fs.StringVar(&f.to, "to", "", "the target: an LFS URL offering the xet transfer (e.g. xet-server's …/info/lfs), or a local remote's path; default: the remote itself")
	fs.BoolVar(&f.dryRun, "dry-run", false, "walk and estimate (chunking the local objects into a throwaway store) without changing anything")
	fs.IntVar(&f.jobs, "jobs", 0, "xorb uploads in flight (default 2 for a server, 1 for an embedded store); files are chunked in one ordered stream so that versions dedupe")
	fs.IntVar(&f.sessionMB, "session-size", 1024, "MiB uploaded per session: a finished session is durable and recorded, so an interrupted run redoes at most one")
	fs.StringVar(&f.verify, "verify", "sample", "after uploading, reconstruct a sample of the objects, or all of them (all)")
	fs.BoolVar(&f.lfsconfig, "write-lfsconfig", false, "also write lfs.url = --to into .lfsconfig and commit it, for every clone")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: git-xet-transfer migrate [--remote NAME] [--refs all|REF[,REF...]]... [--to URL|PATH] [--dry-run] [--verify sample|all] [--write-lfsconfig]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, false
	}
	var bad string
	switch {
	case fs.NArg() > 0:
		bad = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case f.verify != "sample" && f.verify != "all":
		bad = fmt.Sprintf("--verify is sample or all, not %q", f.verify)
	case f.jobs < 0:
		bad = fmt.Sprintf("--jobs is 0 (the default) or more, not %d", f.jobs)
	case f.sessionMB < 1:
		bad = fmt.Sprintf("--session-size is 1 (MiB) or more, not %d", f.sessionMB)
	}
	if bad != "" {
		fmt.Fprintf(stderr, "git-xet-transfer migrate: %s\n", bad)
		fs.Usage()
		return f, false
	}
	return f, true
}

// openTarget finds where objects go: --to, else the remote itself (its embedded store when it is on
// this machine, else its LFS server, which must offer xet).
func openTarget(ctx context.Context, g client.Git, f migrateFlags, env environment, log zerolog.Logger) (migrate.Target, error) {
	to := f.to
	if to == "" {
		if r, err := client.ResolveLocalRemote(ctx, g, "upload", f.remote); err == nil {
			return migrate.OpenEmbedded(r.StoreDir(), log)
		}
		ep, err := client.RemoteEndpoint(ctx, g, "upload", f.remote)
		if err != nil {
			return nil, err
		}
		if ep.Url == "" || ep.Url == "<unknown>" {
			return nil, fmt.Errorf("remote %q has no LFS endpoint; give --to", f.remote)
		}
		return migrate.OpenBatch(ctx, gitrepo.Open(g.Dir), ep.Url, f.remote, env.migrateOptions(log))
	}
	if strings.HasPrefix(to, "http://") || strings.HasPrefix(to, "https://") {
		return migrate.OpenBatch(ctx, gitrepo.Open(g.Dir), to, f.remote, env.migrateOptions(log))
	}
	p, ok := client.LocalPath(to, g.TopLevel(ctx))
	if !ok {
		return nil, fmt.Errorf("--to %q is neither an http(s) LFS URL nor a local path", to)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--to %s: not a directory", p)
	}
	if d := filepath.Join(p, ".git"); isDirPath(d) {
		p = d
	}
	return migrate.OpenEmbedded(filepath.Join(p, "xet"), log)
}

func isDirPath(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// switchToXet writes what makes later pushes and pulls of the remote use Xet: the agent's keys in
// this repository's config, remote.<r>.lfsurl for a --to target, .lfsconfig when asked.
func switchToXet(ctx context.Context, g client.Git, f migrateFlags, target migrate.Target, stdout io.Writer) error {
	self, err := selfPath()
	if err != nil {
		return err
	}
	set := [][2]string{{keyPath, agentPath(self)}, {keyConcurrent, "true"}, {keyStandalone, agentName}}
	newURL, err := targetURL(ctx, g, f)
	if err != nil {
		return err
	}
	if newURL != "" {
		set = append(set, [2]string{"remote." + f.remote + ".lfsurl", newURL})
		// lfs.url wins over remote.<r>.lfsurl in git-lfs: when one is set (config or .lfsconfig),
		// this repository's own lfs.url must name the target too.
		cur, ok, err := gitrepo.Open(g.Dir).Get(ctx, "lfs.url")
		if err != nil {
			return err
		}
		if ok && cur != newURL {
			set = append(set, [2]string{"lfs.url", newURL})
		}
	}
	for _, kv := range set {
		if _, err := g.Run(ctx, "config", "--local", kv[0], kv[1]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "git config --local %s %s\n", kv[0], kv[1])
	}
	if f.lfsconfig && newURL != "" {
		// The work tree's own .lfsconfig, the one git-lfs reads, wherever migrate runs in it.
		top := g
		if top.Dir = g.TopLevel(ctx); top.Dir == "" {
			return fmt.Errorf("--write-lfsconfig: the repository has no work tree to commit .lfsconfig in")
		}
		if _, err := top.Run(ctx, "config", "-f", ".lfsconfig", "lfs.url", newURL); err != nil {
			return err
		}
		if _, err := top.Run(ctx, "add", ".lfsconfig"); err != nil {
			return err
		}
		if _, err := top.Run(ctx, "commit", "-q", "-m", "Store LFS files through Xet at "+newURL, "--", ".lfsconfig"); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "committed .lfsconfig (lfs.url = "+newURL+"): push it so every clone uses the new server")
	}
	fmt.Fprintf(stdout, "switched: pushes and pulls of %s now go through Xet at %s.\n"+
		"The old LFS objects were left where they were: `git lfs prune` frees the local copies that are no longer checked out, "+
		"and the old LFS server's copies can be deleted there once every clone has switched.\n", f.remote, target.Where())
	return nil
}

// targetURL is the LFS URL later pushes and pulls must use: --to (a local path made absolute), or
// for the remote's own embedded store the remote's URL; "" when nothing changes (the remote's LFS
// server is the target).
func targetURL(ctx context.Context, g client.Git, f migrateFlags) (string, error) {
	switch {
	case strings.HasPrefix(f.to, "http://") || strings.HasPrefix(f.to, "https://"):
		return f.to, nil
	case f.to != "":
		p, _ := client.LocalPath(f.to, g.TopLevel(ctx))
		return p, nil
	}
	ep, err := client.RemoteEndpoint(ctx, g, "upload", f.remote)
	if err != nil || !ep.Local() {
		return "", nil
	}
	return ep.LocalDir, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressPrinter rewrites one status line: objects, bytes, rate, ETA.
func progressPrinter(w io.Writer) func(migrate.Progress) {
	last := time.Time{}
	return func(p migrate.Progress) {
		if time.Since(last) < 200*time.Millisecond && p.Objects < p.TotalObjects {
			return
		}
		last = time.Now()
		rate := float64(p.Bytes) / max(p.Elapsed.Seconds(), 0.001)
		eta := time.Duration(float64(p.TotalBytes-p.Bytes)/max(rate, 1)) * time.Second
		fmt.Fprintf(w, "\rmigrating: %d/%d objects, %d/%d MB, %.1f MB/s, ETA %s   ", p.Objects, p.TotalObjects,
			p.Bytes>>20, p.TotalBytes>>20, rate/1e6, eta.Round(time.Second))
		if p.Objects == p.TotalObjects {
			fmt.Fprintln(w)
		}
	}
}

// shown is an error as the terminal gets it: URLs without passwords or queries, and quoted when it
// holds a terminal escape (a path of the repository, a server's message).
func shown(err error) string { return redact.Printable(redact.Text(err.Error())) }
