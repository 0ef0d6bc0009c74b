package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// readLFSConfig reads the repository's .lfsconfig where git-lfs looks for it: the file in the work
// tree; if there is none, the index's; if that is missing too (and always in a bare repository),
// HEAD's (`git config -l -z`, which follows its include.path lines as git-lfs's call does). An
// unreadable work-tree file is an error (git-lfs then reads no configuration); an unreadable index
// or HEAD counts as having no .lfsconfig, as in git-lfs.
func (g Git) readLFSConfig(ctx context.Context, loc Location) ([]Entry, error) {
	withIndex := !loc.Bare && loc.TopLevel != ""
	if withIndex {
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
	}
	for _, blob := range g.lfsConfigBlobs(ctx, withIndex) {
		if out, err := g.output(ctx, "config", "--includes", "-l", "-z", "--blob", blob); err == nil {
			return ParseList(out), nil
		}
	}
	return nil, nil
}

// lfsConfigBlobs names the .lfsconfig blobs that exist, in git-lfs's order: the index's
// (":.lfsconfig", when withIndex) and HEAD's. One git process looks up both, so git runs a second
// time only for a .lfsconfig that exists. git reads every form of index (split, sparse, version 4),
// in 3-5 ms at 10,000 files with its process; decoding the index here with go-git took 30 ms of CPU
// there in every agent process, growing with the repository, and missed split and sparse indexes.
func (g Git) lfsConfigBlobs(ctx context.Context, withIndex bool) []string {
	specs := []string{"HEAD:.lfsconfig"}
	if withIndex {
		specs = []string{":.lfsconfig", "HEAD:.lfsconfig"}
	}
	out, err := g.Input(ctx, []byte(strings.Join(specs, "\n")+"\n"), "cat-file", "--batch-check")
	if err != nil {
		return nil
	}
	var blobs []string
	for i, line := range strings.Split(string(out), "\n") {
		// "<oid> blob <size>" when it exists; "<spec> missing" (or a tree, a submodule) when not.
		if f := strings.Fields(line); i < len(specs) && len(f) == 3 && f[1] == "blob" {
			blobs = append(blobs, specs[i])
		}
	}
	return blobs
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
