package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
)

// The git config keys install writes (and uninstall removes).
const (
	keyPath       = "lfs.customtransfer.xet.path"
	keyConcurrent = "lfs.customtransfer.xet.concurrent"
	// keyStandalone routes every remote whose LFS URL is a file:// URL to the agent, without a
	// batch API: git-lfs 3.8.1 gives local-path remotes (plain /path, ../path) a file:/// URL too,
	// so with this one key pushes, clones and fetches of local remotes use the embedded store.
	keyStandalone = "lfs.file:///.standalonetransferagent"
	agentName     = "xet"
)

// scopeFlags parses --local/--global/--system (global by default) into git config's flag.
// hub (install only, else nil) is set by --hub.
func scopeFlags(name string, args []string, stderr io.Writer, hub *bool) (scope string, ok bool) {
	fs := flag.NewFlagSet("git-xet-transfer "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if hub != nil {
		fs.BoolVar(hub, "hub", false, "also hand Hugging Face Hub objects (huggingface.co, hf.co, $HF_ENDPOINT) to the agent in standalone mode, "+
			"so downloads come through Xet (the Hub answers every download batch with basic)")
	}
	local := fs.Bool("local", false, "this repository only (.git/config)")
	global := fs.Bool("global", false, "this user (~/.gitconfig), the default")
	system := fs.Bool("system", false, "every user of this machine (needs write access to git's system config)")
	fs.Usage = func() {
		if hub != nil {
			fmt.Fprintf(stderr, "usage: git-xet-transfer %s [--local|--global|--system] [--hub]\n", name)
		} else {
			fmt.Fprintf(stderr, "usage: git-xet-transfer %s [--local|--global|--system]\n", name)
		}
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return "", false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "git-xet-transfer %s: unexpected argument %q\n", name, fs.Arg(0))
		fs.Usage()
		return "", false
	}
	n := 0
	scope = "--global"
	for _, s := range []struct {
		set  bool
		flag string
	}{{*local, "--local"}, {*global, "--global"}, {*system, "--system"}} {
		if s.set {
			n++
			scope = s.flag
		}
	}
	if n > 1 {
		fmt.Fprintf(stderr, "git-xet-transfer %s: give only one of --local, --global, --system\n", name)
		return "", false
	}
	return scope, true
}

// selfPath is the absolute path of this binary (symlinks resolved), what git-lfs will run.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

// agentPath is what install writes as lfs.customtransfer.xet.path for self (selfPath): the
// start-up agent git-xet-transfer-agent when it sits beside self (git-lfs starts several agent
// processes per command and most get no request; that program answers those at about the cost of a
// git command, and hands the others to self), else self.
func agentPath(self string) string {
	name := "git-xet-transfer-agent"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(filepath.Dir(self), name)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p
	}
	return self
}

// hubKeys are the standalone keys of install --hub: the Hub's hosts, and $HF_ENDPOINT when set.
func hubKeys() []string {
	urls := []string{"https://huggingface.co/", "https://hf.co/"}
	if e := readEnvironment(os.Getenv, os.Environ()).HFEndpoint; e != "" {
		urls = append(urls, e+"/")
	}
	keys := make([]string, 0, len(urls))
	for _, u := range urls {
		k := "lfs." + u + ".standalonetransferagent"
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func runInstall(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var hub bool
	scope, ok := scopeFlags("install", args, stderr, &hub)
	if !ok {
		return 2
	}
	ctx := context.Background()
	g := client.Git{}
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(stderr, "git-xet-transfer install: git is not on the PATH; install git first")
		return 1
	}
	if scope == "--local" {
		if _, err := g.Run(ctx, "rev-parse", "--git-dir"); err != nil {
			fmt.Fprintf(stderr, "git-xet-transfer install: %s", scopeHint(scope))
			return 1
		}
	}
	self, err := selfPath()
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer install: %v\n", err)
		return 1
	}
	if err := installLFSFilters(ctx, g, scope, stdout); err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer install: %v\n", err)
		return 1
	}
	settings := [][2]string{
		{keyPath, agentPath(self)},
		{keyConcurrent, "true"},
		{keyStandalone, agentName},
	}
	if hub {
		for _, k := range hubKeys() {
			settings = append(settings, [2]string{k, agentName})
		}
	}
	for _, kv := range settings {
		if _, err := g.Run(ctx, "config", scope, kv[0], kv[1]); err != nil {
			fmt.Fprintf(stderr, "git-xet-transfer install: writing %s: %v\n%s", kv[0], err, scopeHint(scope))
			return 1
		}
		fmt.Fprintf(stdout, "git config %s %s %s\n", scope, kv[0], kv[1])
	}
	fmt.Fprintln(stdout, "git-xet-transfer is installed: LFS files of remotes on this machine (paths, file:// URLs) are kept "+
		"in a Xet store inside the remote (<remote>/xet), and LFS servers offering the \"xet\" transfer get Xet uploads and downloads.")
	if hub {
		fmt.Fprintln(stdout, "Hugging Face Hub remotes are in standalone mode: uploads and downloads go through Xet, "+
			"with your Hub token (HF_TOKEN, the token file of `hf auth login`, netrc, ssh or git credential).")
	}
	return 0
}

// installLFSFilters runs `git lfs install` in scope when git-lfs's filters are missing there.
func installLFSFilters(ctx context.Context, g client.Git, scope string, stdout io.Writer) error {
	if v, _ := g.Run(ctx, "config", scope, "--get", "filter.lfs.process"); v != "" {
		return nil
	}
	if _, err := exec.LookPath("git-lfs"); err != nil {
		return errors.New("git-lfs is not installed (not on the PATH).\n" +
			"Install it (e.g. `apt-get install git-lfs`, or `go install github.com/git-lfs/git-lfs/v3@v3.8.1`), then run install again")
	}
	lfsArgs := []string{"lfs", "install"}
	switch scope {
	case "--global": // git lfs install is global by default and has no --global flag
		// --skip-repo: inside a repository git lfs install would also write that repository's hooks,
		// and fail on a hook of the user's own; a user-wide install is no request to change either.
		// git-lfs writes a repository's hooks itself when it first runs there.
		lfsArgs = append(lfsArgs, "--skip-repo")
	case "--system":
		lfsArgs = append(lfsArgs, scope, "--skip-repo")
	default:
		lfsArgs = append(lfsArgs, scope)
	}
	out, err := g.Run(ctx, lfsArgs...)
	if err != nil {
		return fmt.Errorf("`git %s` failed: %v", strings.Join(lfsArgs, " "), err)
	}
	fmt.Fprintf(stdout, "ran git %s: %s\n", strings.Join(lfsArgs, " "), firstLine(out))
	return nil
}

func runUninstall(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	scope, ok := scopeFlags("uninstall", args, stderr, nil)
	if !ok {
		return 2
	}
	ctx := context.Background()
	g := client.Git{}
	removed := 0
	keys := []string{keyPath, keyConcurrent, keyStandalone}
	keys = append(keys, standaloneKeys(ctx, g, scope)...)
	path, _ := g.Run(ctx, "config", scope, "--get", keyPath)
	self, _ := selfPath()
	othersPath := path != "" && !ourAgentPath(path, self)
	for _, key := range keys {
		v, _ := g.Run(ctx, "config", scope, "--get", key)
		if v == "" {
			continue
		}
		// Another tool's agent may be registered under the same name (Hugging Face's git-xet
		// installs itself as lfs.customtransfer.xet): its program and its settings stay.
		if (key == keyStandalone && v != agentName) || key == keyPath && othersPath {
			fmt.Fprintf(stdout, "left %s = %s (not written by install)\n", key, v)
			continue
		}
		if key == keyConcurrent && othersPath {
			continue
		}
		if _, err := g.Run(ctx, "config", scope, "--unset-all", key); err != nil {
			fmt.Fprintf(stderr, "git-xet-transfer uninstall: removing %s: %v\n%s", key, err, scopeHint(scope))
			return 1
		}
		fmt.Fprintf(stdout, "git config %s --unset %s\n", scope, key)
		removed++
	}
	if removed == 0 {
		fmt.Fprintf(stdout, "nothing to remove: git-xet-transfer is not installed in the %s config\n", strings.TrimPrefix(scope, "--"))
		return 0
	}
	fmt.Fprintln(stdout, "git-xet-transfer is uninstalled; git-lfs's own filters (git lfs install) are left in place. "+
		"Files already stored in Xet stores stay there; keep this program to read them, or re-push them with plain LFS.")
	return 0
}

// ourAgentPath reports whether a configured agent path names one of this project's programs: what
// install would write from this binary (self), or either program by its name (with .exe on
// Windows, after a path of either kind of slash), wherever it was installed from.
func ourAgentPath(v, self string) bool {
	if self != "" && (v == self || v == agentPath(self)) {
		return true
	}
	base := v[strings.LastIndexAny(v, `/\`)+1:]
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".exe"), ".EXE")
	return base == "git-xet-transfer" || base == "git-xet-transfer-agent"
}

// standaloneKeys lists the lfs.<url>.standalonetransferagent keys of scope set to this agent, other
// than keyStandalone (install --hub's).
func standaloneKeys(ctx context.Context, g client.Git, scope string) []string {
	out, _ := g.Run(ctx, "config", scope, "--get-regexp", `^lfs\..*\.standalonetransferagent$`)
	var keys []string
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		if v == agentName && k != keyStandalone && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func scopeHint(scope string) string {
	switch scope {
	case "--local":
		return "--local needs to run inside a git repository.\n"
	case "--system":
		return "--system writes git's system config: run as root, or use --global.\n"
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
