package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// runStatus prints what is configured, where the caches and stores are, and the versions of git,
// git-lfs and this program. Exit code 0 when installed, 1 when not (with the fix).
func runStatus(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: git-xet-transfer status")
		return 2
	}
	ctx := context.Background()
	g := client.Git{}
	self, _ := selfPath()
	printVersions(ctx, g, self, stdout)
	fix := printConfig(ctx, g, self, stdout)
	printShardCache(stdout)
	printRemotes(ctx, g, stdout)
	if fix != "" {
		fmt.Fprintf(stdout, "\ngit-xet-transfer is NOT installed: run `%s`\n", fix)
		return 1
	}
	fmt.Fprintln(stdout, "\ngit-xet-transfer is installed")
	return 0
}

// printVersions prints the versions of this program, git and git-lfs.
func printVersions(ctx context.Context, g client.Git, self string, stdout io.Writer) {
	fmt.Fprintf(stdout, "git-xet-transfer %s at %s\n", buildinfo.Get(), self)
	if v, err := g.Run(ctx, "version"); err == nil {
		fmt.Fprintf(stdout, "%s\n", v)
	} else {
		fmt.Fprintln(stdout, "git: not found on the PATH (install git)")
	}
	if v, err := g.Run(ctx, "lfs", "version"); err == nil {
		fmt.Fprintf(stdout, "%s\n", v)
	} else {
		fmt.Fprintln(stdout, "git-lfs: not found (install git-lfs, then run `git-xet-transfer install`)")
	}
}

// printConfig prints the settings that matter and where each comes from, and returns the command
// that installs the agent ("" when it is installed).
func printConfig(ctx context.Context, g client.Git, self string, stdout io.Writer) (fix string) {
	fmt.Fprintln(stdout, "\nconfiguration:")
	install := "git-xet-transfer install"
	for _, key := range []string{keyPath, keyConcurrent, keyStandalone, "lfs.standalonetransferagent",
		"lfs.concurrenttransfers", "lfs.basictransfersonly", "filter.lfs.process", "xet.store", "xet.logfile", "xet.loglevel"} {
		v, _ := g.Run(ctx, "config", "--show-origin", "--get", key)
		if v == "" {
			fmt.Fprintf(stdout, "  %-40s (not set)\n", key)
			if key == keyPath || key == keyStandalone || key == "filter.lfs.process" {
				fix = install
			}
			continue
		}
		origin, value, _ := strings.Cut(v, "\t")
		fmt.Fprintf(stdout, "  %-40s %s   [%s]\n", key, value, origin)
		if key == keyPath {
			if fi, err := os.Stat(value); err != nil || fi.IsDir() {
				// The path git-lfs runs is the one of the scope that wins; another scope's install
				// would leave it so (migrate writes the agent's keys with --local).
				install = installIn(ctx, g, keyPath)
				fmt.Fprintf(stdout, "  WARNING: %s does not exist; run `%s` again\n", value, install)
				fix = install
			} else if self != "" && value != self && value != agentPath(self) {
				fmt.Fprintf(stdout, "  note: git-lfs runs %s, not this binary (%s)\n", value, self)
			}
		}
	}
	if basic, err := gitrepo.Open(g.Dir).Bool(ctx, "lfs.basictransfersonly", false); err != nil {
		fmt.Fprintf(stdout, "  cannot read this repository's configuration: %v\n", err)
	} else if basic {
		fmt.Fprintln(stdout, "  WARNING: lfs.basictransfersonly=true disables custom transfer agents such as xet")
	}
	return fix
}

// installIn is the install command that writes key in the scope its value is read from: --local
// or --system when that is where the value in effect is set, else the global install.
func installIn(ctx context.Context, g client.Git, key string) string {
	out, _ := g.Run(ctx, "config", "--show-scope", "--get", key) // "local\tVALUE"
	switch scope, _, _ := strings.Cut(out, "\t"); scope {
	case "local", "system":
		return "git-xet-transfer install --" + scope
	}
	return "git-xet-transfer install"
}

// printShardCache prints the shard cache root and the size of each endpoint's folder.
func printShardCache(stdout io.Writer) {
	fmt.Fprintln(stdout, "\nshard cache:")
	root, err := readEnvironment(os.Getenv, os.Environ()).CacheDirs.Root()
	if err != nil {
		fmt.Fprintf(stdout, "  unavailable: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "  root %s\n", root)
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() {
			fmt.Fprintf(stdout, "  %-40s %s\n", e.Name(), humanBytes(dirSize(filepath.Join(root, e.Name()))))
		}
	}
}

// printRemotes prints, inside a repository, each remote, its LFS endpoint for pushes and where its
// Xet data goes.
func printRemotes(ctx context.Context, g client.Git, stdout io.Writer) {
	repo := gitrepo.Open(g.Dir)
	if _, err := repo.Location(ctx); err != nil {
		return
	}
	fmt.Fprintln(stdout, "\nremotes of this repository:")
	names, err := repo.Remotes(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "  cannot read this repository's configuration: %v\n", err)
	}
	// A cloned repository's .lfsconfig names LFS URLs and remotes (remote.<name>.lfsurl), so each
	// is shown as outside text: no terminal escape of theirs reaches the terminal.
	for _, rawName := range names {
		name := redact.Printable(rawName)
		ep, err := repo.Endpoint(ctx, "upload", rawName)
		if err != nil {
			fmt.Fprintf(stdout, "  %s: %s\n", name, shown(err))
			continue
		}
		u := redact.Printable(redact.URL(ep.Url))
		r, err := repo.LocalRemote(ctx, "upload", rawName)
		if err != nil {
			fmt.Fprintf(stdout, "  %-10s %s (%s)\n", name, u, networkMode(ctx, repo, ep))
			continue
		}
		st := "no Xet store yet"
		if fi, err := os.Stat(r.StoreDir()); err == nil && fi.IsDir() {
			st = "Xet store " + redact.Printable(r.StoreDir()) + ", " + humanBytes(dirSize(r.StoreDir()))
		}
		fmt.Fprintf(stdout, "  %-10s %s (local: %s)\n", name, u, st)
	}
}

// networkMode says how a network remote's LFS objects move: for a Hugging Face Hub remote, whether
// it is in standalone mode (install --hub) or batch mode.
func networkMode(ctx context.Context, repo *gitrepo.Repo, ep gitrepo.Endpoint) string {
	if !isHubURL(ep.Url) {
		return "network remote: Xet when its LFS server offers the \"xet\" transfer"
	}
	if v, _, _ := repo.URLGet(ctx, "lfs", ep.Url, "standalonetransferagent"); v == agentName { // read by Endpoint already
		return "Hugging Face Hub, standalone mode: uploads and downloads through Xet"
	}
	return "Hugging Face Hub, batch mode: uploads through Xet, downloads whole files through the Hub's bridge; " +
		"run `git-xet-transfer install --hub` for Xet downloads"
}

// isHubURL reports whether a remote URL is on the Hub: huggingface.co, hf.co or $HF_ENDPOINT's host.
func isHubURL(s string) bool {
	host := s
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		host = u.Hostname()
	} else if at := strings.Index(s, "@"); at >= 0 { // scp-like git@hf.co:ns/name
		host, _, _ = strings.Cut(s[at+1:], ":")
	}
	hosts := []string{"huggingface.co", "hf.co"}
	if e, err := url.Parse(readEnvironment(os.Getenv, os.Environ()).HFEndpoint); err == nil && e.Host != "" {
		hosts = append(hosts, e.Hostname())
	}
	return slices.Contains(hosts, strings.ToLower(host))
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// runTrack passes its arguments to `git lfs track`.
func runTrack(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.Command("git", append([]string{"lfs", "track"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "git-xet-transfer track: running git lfs track: %v (is git-lfs installed?)\n", err)
		return 1
	}
	return 0
}

func runVersion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "git-xet-transfer version: unexpected argument %q\nusage: git-xet-transfer version\n", args[0])
		return 2
	}
	fmt.Fprintf(stdout, "git-xet-transfer %s\n", buildinfo.Get())
	return 0
}
