package gitrepo

import (
	"context"

	lfsfs "github.com/git-lfs/git-lfs/v3/fs"
)

// LFSDir is git-lfs's storage directory of the repository, where it keeps objects/ and tmp/:
// lfs.storage (from git config; .lfsconfig may not set it), absolute or relative to the git
// directory that linked work trees share, else that directory's lfs/. git-lfs's own fs.New decides
// it from the same inputs, so a download renamed from tmp/ into objects/ stays on one file system,
// and every work tree of a repository finds the same objects.
func (r *Repo) LFSDir(ctx context.Context) (string, error) {
	loc, err := r.Location(ctx)
	if err != nil {
		return "", err
	}
	storage, _, err := r.Get(ctx, "lfs.storage")
	if err != nil {
		return "", err
	}
	return lfsfs.New(noEnv{}, loc.GitDir, loc.TopLevel, storage, 0).LFSStorageDir, nil
}

// noEnv is an empty environment: fs.New reads it only for alternates, which LFSDir does not use.
type noEnv struct{}

func (noEnv) Get(string) (string, bool) { return "", false }
