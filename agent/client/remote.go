package client

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// LocalRemote is a remote on this machine's file system (a plain path or a file:// URL), where the
// embedded Xet store lives.
type LocalRemote struct {
	URL     string // as configured
	RepoDir string // the remote's git directory: the bare repository, or <work tree>/.git
}

// StoreDir is the embedded Xet store of the remote: <git dir>/xet.
func (r LocalRemote) StoreDir() string { return filepath.Join(r.RepoDir, "xet") }

// LFSObject is where plain git-lfs keeps oid in the remote (its lfs-standalone-file layout).
func (r LocalRemote) LFSObject(oid string) string {
	return filepath.Join(r.RepoDir, "lfs", "objects", oid[0:2], oid[2:4], oid)
}

// RemoteURL turns init's remote (a remote's name such as "origin", or a URL or path) into the URL
// the LFS objects go to: remote.<name>.lfsurl, lfs.url (git config, then .lfsconfig), else the
// remote's own URL (git remote get-url, which applies insteadOf rules).
func RemoteURL(ctx context.Context, g Git, remote string) (string, error) {
	if remote == "" {
		return "", fmt.Errorf("git-lfs gave no remote in init")
	}
	if looksLikeURLOrPath(remote) {
		return remote, nil
	}
	for _, key := range []string{"remote." + remote + ".lfsurl", "lfs.url"} {
		v, err := g.Config(ctx, key)
		if err != nil {
			return "", err
		}
		if v != "" {
			return v, nil
		}
	}
	if top := g.TopLevel(ctx); top != "" {
		if _, err := os.Stat(filepath.Join(top, ".lfsconfig")); err == nil {
			v, err := g.Run(ctx, "config", "-f", filepath.Join(top, ".lfsconfig"), "--get", "lfs.url")
			if err == nil && v != "" {
				return v, nil
			}
		}
	}
	u, err := g.Run(ctx, "remote", "get-url", remote)
	if err != nil {
		return "", fmt.Errorf("finding the URL of remote %q: %w", remote, err)
	}
	return u, nil
}

func looksLikeURLOrPath(s string) bool {
	return strings.Contains(s, "://") || strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") ||
		filepath.IsAbs(s)
}

// LocalPath returns the directory a local remote URL names: a file:// URL's path or a plain path
// (relative paths are taken from base, the repository's top directory, as git does). ok is false
// for network remotes (https://, ssh://, host:path).
func LocalPath(remoteURL, base string) (path string, ok bool) {
	if strings.HasPrefix(remoteURL, "file://") {
		u, err := url.Parse(remoteURL)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return "", false
		}
		return filepath.Clean(filepath.FromSlash(u.Path)), true
	}
	if strings.Contains(remoteURL, "://") {
		return "", false
	}
	// scp-like host:path (git treats a colon before the first slash as a host separator).
	if i := strings.IndexByte(remoteURL, ':'); i > 0 && !strings.Contains(remoteURL[:i], "/") && !filepath.IsAbs(remoteURL) {
		return "", false
	}
	p := filepath.FromSlash(remoteURL)
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), true
}

// ResolveLocalRemote finds the local remote git-lfs named in init, for standalone mode.
func ResolveLocalRemote(ctx context.Context, g Git, remote string) (LocalRemote, error) {
	u, err := RemoteURL(ctx, g, remote)
	if err != nil {
		return LocalRemote{}, err
	}
	base := g.TopLevel(ctx)
	if base == "" {
		if base, err = g.GitDir(ctx); err != nil {
			return LocalRemote{}, err
		}
	}
	p, ok := LocalPath(u, base)
	if !ok {
		return LocalRemote{}, fmt.Errorf("remote %q is %s, which is not on this machine: the embedded Xet store works with remotes "+
			"that are a local path or a file:// URL; for a network remote use an LFS server that offers the \"xet\" transfer "+
			"(e.g. xet-server), or set xet.store / GIT_XET_STORE to a store directory", remote, redactURL(u))
	}
	fi, err := os.Stat(p)
	if err != nil {
		return LocalRemote{}, fmt.Errorf("remote %q: its path %s cannot be read: %w", remote, p, err)
	}
	if !fi.IsDir() {
		return LocalRemote{}, fmt.Errorf("remote %q: its path %s is not a directory", remote, p)
	}
	dir := p
	if gd := filepath.Join(p, ".git"); isDir(gd) {
		dir = gd
	}
	return LocalRemote{URL: u, RepoDir: dir}, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// redactURL drops a password from a URL before it is shown.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
