package client

import (
	"context"
	"path/filepath"
)

// Scope is what the agent processes that may share their work (agent/leader) have in common: the
// repository (its git directory, where the chunk index and git-lfs's objects are), the remote and
// the operation, where its uploads go (Where) and the shard cache.
type Scope struct {
	GitDir            string // absolute
	Remote, Operation string // init's
	// Where is the embedded store's directory ("store=" and the absolute path), or the LFS URL of a
	// network remote ("lfs=" and the URL: an LFS server's batch actions, or the Hub).
	Where string
	Cache string // the shard cache's root, absolute; "" for none
}

// Scope finds the Scope of this process's transfers (git, the remote's endpoint).
func (x *Client) Scope(ctx context.Context) (Scope, error) {
	where, err := x.where(ctx)
	if err != nil {
		return Scope{}, err
	}
	cache := x.o.Cache.Root
	if cache != "" {
		if cache, err = filepath.Abs(cache); err != nil {
			return Scope{}, err
		}
	}
	gd, err := x.repoGitDir(ctx)
	if err != nil {
		return Scope{}, err
	}
	if gd, err = filepath.Abs(gd); err != nil {
		return Scope{}, err
	}
	return Scope{GitDir: gd, Remote: x.init.Remote, Operation: x.init.Operation, Where: where, Cache: cache}, nil
}

// where names where the uploads go: the embedded store's directory, or the LFS URL of a network
// remote.
func (x *Client) where(ctx context.Context) (string, error) {
	dir := x.storeDir()
	if dir == "" && x.networkRemote(ctx) {
		ep, _ := x.remoteEndpoint(ctx) // found: networkRemote said so
		return "lfs=" + ep.Url, nil
	}
	if dir == "" {
		r, err := x.localRemote(ctx)
		if err != nil {
			return "", err
		}
		dir = r.StoreDir()
	}
	dir, err := filepath.Abs(dir)
	return "store=" + dir, err
}
