package gitrepo

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/git-lfs/git-lfs/v3/lfshttp"
)

// Endpoint is where git-lfs sends a remote's LFS objects for one operation.
type Endpoint struct {
	lfshttp.Endpoint        // Url (…/info/lfs, or file://<git dir> for a local remote), SSH metadata, Operation
	Raw              string // the value it was computed from, as configured (before insteadOf)
	Source           string // where Raw came from: "lfs.url", "remote.origin.lfsurl", "remote.origin.url", "remote" (a URL given as the remote), "FETCH_HEAD"
	// LocalDir is the directory on this machine a local endpoint names (a file:// URL or a path),
	// absolute; "" for a network endpoint.
	LocalDir string
}

// Local reports whether the endpoint is a directory on this machine.
func (e Endpoint) Local() bool { return e.LocalDir != "" }

// Endpoint resolves the LFS endpoint of remote (a remote's name, a URL, or a local path; "" is
// origin) for operation ("upload" or "download") from the snapshot, in git-lfs's order (its lfsapi
// endpoint finder):
//
//  1. for uploads lfs.pushurl, then lfs.url (git config over .lfsconfig);
//  2. for a remote other than origin, that remote's: for uploads remote.<r>.lfspushurl, then
//     remote.<r>.lfsurl, then its git URL (for uploads remote.<r>.pushurl, then remote.<r>.url; a
//     remote given as a URL is its own) turned into …(.git)/info/lfs;
//  3. the same for origin, and last the URL in FETCH_HEAD.
//
// Every URL is rewritten by url.<base>.insteadOf (for uploads pushInsteadOf first), the longest
// match winning. An absolute or existing relative path becomes file://<path>, or
// file://<path>/.git when that exists; file:// URLs get no /info/lfs; host:path is SSH.
// Relative paths are taken from the work tree's top (a bare repository's git directory), where
// git-lfs runs.
//
// One difference: a remote given as a local path (which git-lfs does not take as a remote, and
// for which its standalone adapter then fails) is its own URL when lfs.url does not say otherwise.
func (r *Repo) Endpoint(ctx context.Context, operation, remote string) (Endpoint, error) {
	f, err := r.finder(ctx, operation)
	if err != nil {
		return Endpoint{}, err
	}
	ep := f.endpoint(remote)
	ep.Operation = operation
	if p, ok := LocalPath(ep.Url, f.base); ok {
		ep.LocalDir = p
	}
	return ep, nil
}

// finder is one resolution: the snapshot, the operation, the directory paths are relative to.
type finder struct {
	s           *snapshot
	op          string
	base        string
	gitDir      string
	protocol    string
	aliases     map[string]string
	pushAliases map[string]string
}

func (r *Repo) finder(ctx context.Context, op string) (*finder, error) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	f := &finder{s: s, op: op, base: r.git.Dir, protocol: "https",
		aliases: map[string]string{}, pushAliases: map[string]string{}}
	if loc, err := r.Location(ctx); err == nil {
		f.gitDir, f.base = loc.GitDir, loc.TopLevel
		if f.base == "" {
			f.base = loc.GitDir
		}
	}
	if f.base == "" {
		f.base, _ = os.Getwd()
	}
	if v, ok := s.get("lfs.gitprotocol"); ok {
		f.protocol = v
	}
	for key, vals := range s.merged {
		if !strings.HasPrefix(key, "url.") {
			continue
		}
		for _, s := range []struct {
			suffix string
			m      map[string]string
		}{{".insteadof", f.aliases}, {".pushinsteadof", f.pushAliases}} {
			if strings.HasSuffix(key, s.suffix) {
				for _, v := range vals {
					s.m[v] = key[len("url.") : len(key)-len(s.suffix)]
				}
			}
		}
	}
	return f, nil
}

func (f *finder) endpoint(remote string) Endpoint {
	if f.op == "upload" {
		if v, ok := f.s.get("lfs.pushurl"); ok {
			return f.fromURL(v, "lfs.pushurl")
		}
	}
	if v, ok := f.s.get("lfs.url"); ok {
		return f.fromURL(v, "lfs.url")
	}
	if remote != "" && remote != "origin" {
		if ep := f.remoteEndpoint(remote); ep.Url != "" {
			return ep
		}
		if isLocalPathRemote(remote) {
			return f.fromCloneURL(remote, "remote")
		}
	}
	return f.remoteEndpoint("origin")
}

func (f *finder) remoteEndpoint(remote string) Endpoint {
	keys := []string{"remote." + remote + ".lfsurl"}
	if f.op == "upload" {
		keys = append([]string{"remote." + remote + ".lfspushurl"}, keys...)
	}
	for _, k := range keys {
		if v, ok := f.s.get(k); ok {
			return f.fromURL(v, k)
		}
	}
	if u, src := f.gitRemoteURL(remote); u != "" {
		return f.fromCloneURL(u, src)
	}
	if f.gitDir != "" && remote == "origin" {
		if u, err := fetchHeadURL(filepath.Join(f.gitDir, "FETCH_HEAD")); err == nil {
			op := f.op
			f.op = "download" // git-lfs resolves FETCH_HEAD's URL as a download's
			defer func() { f.op = op }()
			return f.fromCloneURL(u, "FETCH_HEAD")
		}
	}
	return Endpoint{}
}

// gitRemoteURL is the git URL of remote: remote.<r>.pushurl for uploads, remote.<r>.url, else the
// remote itself when it is a known remote's name or looks like a URL (git-lfs's
// ValidateRemoteFromList).
func (f *finder) gitRemoteURL(remote string) (string, string) {
	if f.op == "upload" {
		if v, ok := f.s.get("remote." + remote + ".pushurl"); ok {
			return v, "remote." + remote + ".pushurl"
		}
	}
	if v, ok := f.s.get("remote." + remote + ".url"); ok {
		return v, "remote." + remote + ".url"
	}
	for _, name := range f.s.remoteNames() {
		if name == remote {
			return remote, "remote"
		}
	}
	if u, _ := url.Parse(remote); (u != nil && u.Scheme != "") || strings.Contains(remote, ":") {
		return remote, "remote"
	}
	return "", ""
}

// isLocalPathRemote: a remote that is a path (git-lfs takes none of these as a URL).
func isLocalPathRemote(s string) bool {
	return !strings.Contains(s, ":") && (strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") || filepath.IsAbs(s))
}

var fetchHeadLine = regexp.MustCompile(`^[a-f0-9]{40,64}\t(not-for-merge)?\t(tag |branch |)'.*' of (?P<url>[\/\.\-\:\_a-zA-Z0-9]+)$`)

// fetchHeadURL is the URL of the first line of FETCH_HEAD.
func fetchHeadURL(file string) (string, error) {
	fh, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	s := bufio.NewScanner(fh)
	if !s.Scan() {
		return "", fmt.Errorf("%s is empty", file)
	}
	m := fetchHeadLine.FindStringSubmatch(s.Text())
	if m == nil {
		return "", fmt.Errorf("no URL in the first line of %s", file)
	}
	return strings.TrimSpace(m[3]), nil
}

// fromCloneURL is the LFS endpoint of a git URL: …(.git)/info/lfs; file:// URLs as they are.
func (f *finder) fromCloneURL(raw, source string) Endpoint {
	ep := f.fromURL(raw, source)
	if ep.Url == lfshttp.UrlUnknown {
		return ep
	}
	ep.Url = strings.TrimSuffix(ep.Url, "/")
	if strings.HasPrefix(ep.Url, "file://") {
		return ep
	}
	if path.Ext(ep.Url) == ".git" {
		ep.Url += "/info/lfs"
	} else {
		ep.Url += ".git/info/lfs"
	}
	return ep
}

// fromURL is the endpoint of an LFS URL as configured (git-lfs's NewEndpoint).
func (f *finder) fromURL(raw, source string) Endpoint {
	ep := Endpoint{Raw: raw, Source: source}
	u := f.replaceAlias(raw)
	if strings.HasPrefix(u, "/") {
		ep.Endpoint = f.fromLocalPath(u)
		return ep
	}
	pu, err := url.Parse(u)
	if err != nil {
		ep.Endpoint = lfshttp.EndpointFromBareSshUrl(u)
		return ep
	}
	switch pu.Scheme {
	case "ssh", "git+ssh", "ssh+git":
		ep.Endpoint = lfshttp.EndpointFromSshUrl(pu)
	case "http", "https":
		ep.Endpoint = lfshttp.EndpointFromHttpUrl(pu)
	case "git":
		pu.Scheme = f.protocol
		ep.Endpoint = lfshttp.Endpoint{Url: pu.String()}
	case "file":
		ep.Endpoint = lfshttp.EndpointFromFileUrl(pu)
	default:
		if pu.Scheme != "" && strings.HasPrefix(u, pu.Scheme+"::") {
			ep.Endpoint = lfshttp.Endpoint{Url: u} // a remote helper
		} else if _, err := os.Stat(f.abs(u)); err == nil {
			ep.Endpoint = f.fromLocalPath(u)
		} else {
			ep.Endpoint = lfshttp.EndpointFromBareSshUrl(pu.String())
		}
	}
	return ep
}

func (f *finder) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.base, p)
}

// fromLocalPath is git-lfs's RewriteLocalPathAsURL with relative paths taken from f.base:
// file://<path>/.git when that exists, else file://<path> when path exists, else the path as given.
func (f *finder) fromLocalPath(p string) lfshttp.Endpoint {
	p = f.abs(p)
	gitpath := filepath.Join(p, ".git")
	if filepath.Base(p) == ".git" {
		gitpath, p = p, filepath.Dir(p)
	}
	if _, err := os.Stat(gitpath); err == nil {
		p = gitpath
	} else if _, err := os.Stat(p); err != nil {
		return lfshttp.Endpoint{Url: p, OriginalUrl: p}
	}
	u := fileURL(p, onWindows)
	return lfshttp.Endpoint{Url: u, OriginalUrl: u}
}

// replaceAlias applies url.<base>.insteadOf (for uploads url.<base>.pushInsteadOf first): the
// longest alias that prefixes raw is replaced by its base.
func (f *finder) replaceAlias(raw string) string {
	if f.op == "upload" {
		if u, ok := replaceAlias(f.pushAliases, raw); ok {
			return u
		}
	}
	u, _ := replaceAlias(f.aliases, raw)
	return u
}

func replaceAlias(aliases map[string]string, raw string) (string, bool) {
	longest := ""
	for alias := range aliases {
		if strings.HasPrefix(raw, alias) && longest < alias {
			longest = alias
		}
	}
	if longest == "" {
		return raw, false
	}
	return aliases[longest] + raw[len(longest):], true
}

// URLEndpoint is the endpoint of an LFS URL given as it is (…/info/lfs, a path, ssh://), resolved
// as git-lfs resolves a configured lfs.url: insteadOf rules, local paths, SSH.
func (r *Repo) URLEndpoint(ctx context.Context, operation, raw string) (Endpoint, error) {
	f, err := r.finder(ctx, operation)
	if err != nil {
		return Endpoint{}, err
	}
	ep := f.fromURL(raw, "given")
	ep.Operation = operation
	if p, ok := LocalPath(ep.Url, f.base); ok {
		ep.LocalDir = p
	}
	return ep, nil
}

// GitURL is remote's git URL for operation (for uploads remote.<r>.pushurl, else remote.<r>.url;
// a remote given as a URL or path is its own) with insteadOf rules applied, as git-lfs applies
// them; "" when the remote has none. The error is the configuration's, when it cannot be read.
func (r *Repo) GitURL(ctx context.Context, operation, remote string) (string, error) {
	if remote == "" {
		remote = "origin"
	}
	f, err := r.finder(ctx, operation)
	if err != nil {
		return "", err
	}
	u, _ := f.gitRemoteURL(remote)
	if u == "" && isLocalPathRemote(remote) {
		u = remote
	}
	if u == "" {
		return "", nil
	}
	return f.replaceAlias(u), nil
}
