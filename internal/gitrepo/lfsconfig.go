package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// readLFSConfig reads the repository's .lfsconfig where git-lfs looks for it: the file in the work
// tree; if there is none, the index's; if that is missing too (and always in a bare repository),
// HEAD's. Whether the index or HEAD has one is looked up without git, so git runs only for a
// .lfsconfig that exists (`git config -l -z`, which follows its include.path lines as git-lfs's
// call does). An unreadable work-tree file is an error (git-lfs then reads no configuration);
// an unreadable index or HEAD counts as having no .lfsconfig, as in git-lfs.
func (g Git) readLFSConfig(ctx context.Context, loc Location) ([]Entry, error) {
	if !loc.Bare && loc.TopLevel != "" {
		path := filepath.Join(loc.TopLevel, ".lfsconfig")
		_, err := os.Stat(path)
		if err == nil {
			out, err := g.output(ctx, "config", "--includes", "-l", "-z", "-f", path)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			return ParseList(out), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading .lfsconfig: %w", err)
		}
		if inIndex(loc.GitDir) {
			if out, err := g.output(ctx, "config", "--includes", "-l", "-z", "--blob", ":.lfsconfig"); err == nil {
				return ParseList(out), nil
			}
		}
	}
	if inHEAD(loc) {
		if out, err := g.output(ctx, "config", "--includes", "-l", "-z", "--blob", "HEAD:.lfsconfig"); err == nil {
			return ParseList(out), nil
		}
	}
	return nil, nil
}

// inIndex reports whether the index of gitDir has a .lfsconfig.
func inIndex(gitDir string) bool {
	f, err := os.Open(filepath.Join(gitDir, "index"))
	if err != nil {
		return false
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(f).Decode(&idx); err != nil {
		return false
	}
	_, err = idx.Entry(".lfsconfig")
	return err == nil
}

// inHEAD reports whether the commit at HEAD has a .lfsconfig at its root.
func inHEAD(loc Location) bool {
	dir := loc.TopLevel
	if dir == "" {
		dir = loc.GitDir
	}
	repo, err := gogit.PlainOpenWithOptions(dir, &gogit.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return false
	}
	head, err := repo.Head()
	if err != nil {
		return false
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return false
	}
	t, err := c.Tree()
	if err != nil {
		return false
	}
	_, err = t.FindEntry(".lfsconfig")
	return err == nil
}

// safeKeys are the keys besides remote.<r>.lfsurl, lfs.<url>.access and
// lfs.extension.<name>.priority that a .lfsconfig may set (git-lfs's list): a file that comes with
// a clone must not run commands or change how the user's credentials are used.
var safeKeys = map[string]bool{
	"lfs.allowincompletepush": true,
	"lfs.fetchexclude":        true,
	"lfs.fetchinclude":        true,
	"lfs.gitprotocol":         true,
	"lfs.locksverify":         true,
	"lfs.pushurl":             true,
	"lfs.skipdownloaderrors":  true,
	"lfs.url":                 true,
}

// safeInLFSConfig reports whether git-lfs takes key from a .lfsconfig.
func safeInLFSConfig(key string) bool {
	parts := strings.Split(key, ".")
	switch {
	case len(parts) == 4 && parts[0] == "lfs" && parts[1] == "extension":
		return parts[3] == "priority"
	case len(parts) > 1 && parts[0] == "remote":
		return len(parts) >= 3 && parts[len(parts)-1] == "lfsurl"
	case len(parts) > 2 && parts[0] == "lfs" && parts[len(parts)-1] == "access":
		return true
	}
	return safeKeys[key]
}
