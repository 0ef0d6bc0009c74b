package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// LocalRemote is a remote on this machine's file system (a plain path or a file:// URL), where the
// embedded Xet store lives.
type LocalRemote struct {
	URL     string // the endpoint's URL (file://…, or the path)
	RepoDir string // the remote's git directory: the bare repository, or <work tree>/.git
}

// StoreDir is the embedded Xet store of the remote: <git dir>/xet.
func (r LocalRemote) StoreDir() string { return filepath.Join(r.RepoDir, "xet") }

// LFSObject is where plain git-lfs keeps oid in the remote (its lfs-standalone-file layout).
func (r LocalRemote) LFSObject(oid string) string {
	return filepath.Join(r.RepoDir, "lfs", "objects", oid[0:2], oid[2:4], oid)
}

// LocalRemote resolves remote's LFS endpoint for operation and returns it as a local remote, for
// standalone mode: an error names the remote when the endpoint is not a directory on this machine,
// or when remote is a name git config does not know (where git-lfs's resolver would fall back on
// origin, a caller naming a remote means that one).
func (r *Repo) LocalRemote(ctx context.Context, operation, remote string) (LocalRemote, error) {
	if remote == "" {
		return LocalRemote{}, fmt.Errorf("no remote given")
	}
	ep, err := r.Endpoint(ctx, operation, remote)
	if err != nil {
		return LocalRemote{}, err
	}
	known, err := r.known(ctx, remote)
	if err != nil {
		return LocalRemote{}, err
	}
	if !known {
		return LocalRemote{}, fmt.Errorf("remote %q is not a remote of this repository, nor a URL or a path", redact.URL(remote))
	}
	if !ep.Local() {
		return LocalRemote{}, fmt.Errorf("remote %q has the LFS endpoint %s (from %s), which is not on this machine: the embedded Xet store works with "+
			"remotes that are a local path or a file:// URL; for a network remote use an LFS server that offers the \"xet\" transfer "+
			"(e.g. xet-server), or set xet.store / GIT_XET_STORE to a store directory", redact.URL(remote), redact.URL(ep.Url), ep.Source)
	}
	p := ep.LocalDir
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
	return LocalRemote{URL: ep.Url, RepoDir: dir}, nil
}

// known reports whether remote is a configured remote's name, a URL or a path.
func (r *Repo) known(ctx context.Context, remote string) (bool, error) {
	if strings.Contains(remote, ":") || isLocalPathRemote(remote) {
		return true, nil
	}
	names, err := r.Remotes(ctx)
	return slices.Contains(names, remote), err
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
