package credentials

import (
	"net/url"
	"os"
	"os/exec"
	"path"
	"strings"

	"github.com/git-lfs/git-lfs/v3/config"
	"github.com/git-lfs/git-lfs/v3/lfshttp"
)

// Endpoint resolution follows git-lfs's (lfsapi's endpoint finder) without importing lfsapi: that
// package runs three git commands at process start-up (its package-level default finder), which
// every agent process, eight per transfer, would pay.

// endpointFor is the LFS endpoint of remote for operation: lfs.pushurl / remote.<r>.lfspushurl for
// uploads, lfs.url, remote.<r>.lfsurl, else the remote's URL turned into …/info/lfs. remoteURL is
// the git remote's own URL ("" when remote is itself a URL).
func endpointFor(env config.Environment, remote, operation string) (ep lfshttp.Endpoint, remoteURL string) {
	if isURL(remote) {
		return fromCloneURL(remote), remote
	}
	if remote == "" {
		remote = "origin"
	}
	remoteURL = gitRemoteURL(remote, operation == "upload")
	keys := []string{"lfs.url", "remote." + remote + ".lfsurl"}
	if operation == "upload" {
		keys = append([]string{"lfs.pushurl", "remote." + remote + ".lfspushurl"}, keys...)
	}
	for _, k := range keys {
		if v, ok := env.Get(k); ok && v != "" {
			return fromURL(v), remoteURL
		}
	}
	return fromCloneURL(remoteURL), remoteURL
}

func isURL(s string) bool {
	return strings.Contains(s, "://") || (strings.Contains(s, ":") && !strings.ContainsAny(s, " \t"))
}

// gitRemoteURL is `git remote get-url [--push] remote` (insteadOf rules applied), "" when unknown.
func gitRemoteURL(remote string, push bool) string {
	args := []string{"remote", "get-url"}
	if push {
		args = append(args, "--push")
	}
	out, err := exec.Command("git", append(args, remote)...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// fromURL is the endpoint of an LFS URL as given (lfs.url and the like).
func fromURL(raw string) lfshttp.Endpoint {
	if strings.HasPrefix(raw, "/") {
		return lfshttp.EndpointFromLocalPath(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return lfshttp.EndpointFromBareSshUrl(raw)
	}
	switch u.Scheme {
	case "ssh", "git+ssh", "ssh+git":
		return lfshttp.EndpointFromSshUrl(u)
	case "http", "https":
		return lfshttp.EndpointFromHttpUrl(u)
	case "file":
		return lfshttp.EndpointFromFileUrl(u)
	}
	if _, err := os.Stat(raw); err == nil {
		return lfshttp.EndpointFromLocalPath(raw)
	}
	return lfshttp.EndpointFromBareSshUrl(raw)
}

// fromCloneURL is the LFS endpoint of a git remote URL: …(.git)/info/lfs.
func fromCloneURL(raw string) lfshttp.Endpoint {
	ep := fromURL(raw)
	if ep.Url == lfshttp.UrlUnknown || ep.Url == "" || strings.HasPrefix(ep.Url, "file://") {
		return ep
	}
	ep.Url = strings.TrimSuffix(ep.Url, "/")
	if path.Ext(ep.Url) == ".git" {
		ep.Url += "/info/lfs"
	} else {
		ep.Url += ".git/info/lfs"
	}
	return ep
}
