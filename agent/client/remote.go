package client

import (
	"context"
	"fmt"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
)

// LocalRemote is a remote on this machine's file system (a plain path or a file:// URL), where the
// embedded Xet store lives.
type LocalRemote = gitrepo.LocalRemote

// RemoteEndpoint is the LFS endpoint of init's remote (a remote's name such as "origin", or a URL
// or path) for operation, as git-lfs resolves it, from the process's snapshot of the git config of
// g's repository.
func RemoteEndpoint(ctx context.Context, g Git, operation, remote string) (gitrepo.Endpoint, error) {
	if remote == "" {
		return gitrepo.Endpoint{}, fmt.Errorf("git-lfs gave no remote in init")
	}
	return gitrepo.Open(g.Dir).Endpoint(ctx, operation, remote)
}

// LocalPath returns the directory a local remote URL names: a file:// URL's path or a plain path
// (relative paths are taken from base, the repository's top directory, as git does). ok is false
// for network remotes (https://, ssh://, host:path).
func LocalPath(remoteURL, base string) (path string, ok bool) {
	return gitrepo.LocalPath(remoteURL, base)
}

// ResolveLocalRemote finds the local remote git-lfs named in init, for standalone mode: the
// directory of its LFS endpoint for operation.
func ResolveLocalRemote(ctx context.Context, g Git, operation, remote string) (LocalRemote, error) {
	if remote == "" {
		return LocalRemote{}, fmt.Errorf("git-lfs gave no remote in init")
	}
	return gitrepo.Open(g.Dir).LocalRemote(ctx, operation, remote)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
