package xetlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfspointer"
)

// Change is one LFS path a commit changed: the version the commit gives it and, when there is one,
// the previous version, the same path's (or, for a path git finds renamed or copied, its source
// path's) in the commit's first parent.
type Change struct {
	Commit   string // full hash
	Path     string
	Oid      string
	Size     int64
	PrevPath string // "" when the path has no previous version in Xet's sense (new, or not a pointer before)
	PrevOid  string
	PrevSize int64
	// Deleted: the commit removed Path, whose version was Oid (a candidate previous version of an
	// LFS path the same commit adds: see pairByContent).
	Deleted bool
	// ByContent: the previous version is a path the commit deleted whose chunks this version
	// shares most, not one git found renamed.
	ByContent bool
}

// rawEntry is one line of `git log --raw`: modes, blobs, status, paths.
type rawEntry struct {
	srcMode, dstMode string
	src, dst         string // blob ids; all zeros for none
	status           byte
	srcPath, dstPath string
}

// Changes lists the LFS paths each commit of revs (git log's arguments; none: HEAD) changed,
// limited to paths when given, in git log's order, each against the commit's first parent
// (merges included). Renames and copies are git's (-M, on the pointer files: a renamed LFS file
// whose content changed is rarely found, its pointer differing in most bytes: Run pairs those by
// content). Deleted LFS paths are listed as Deleted; paths whose new blob is not an LFS pointer
// are not. Empty blobs, which git-lfs also reads as the empty object's pointer, are not LFS files
// here.
func Changes(ctx context.Context, g gitrepo.Git, revs, paths []string) ([]Change, error) {
	for _, r := range revs {
		if strings.HasPrefix(r, "-") {
			return nil, fmt.Errorf("%q is not a revision", r)
		}
	}
	if len(revs) == 0 {
		revs = []string{"HEAD"}
	}
	args := append([]string{"log", "-z", "--raw", "--no-abbrev", "-M", "--diff-merges=first-parent", "--no-show-signature",
		"--format=format:%H", "--end-of-options"}, revs...)
	out, err := g.Input(ctx, nil, append(append(args, "--"), paths...)...)
	var ge *gitrepo.GitError
	if errors.As(err, &ge) {
		return nil, fmt.Errorf("git log %s: %s", strings.Join(revs, " "), ge.Msg)
	}
	if err != nil {
		return nil, err
	}
	commits, err := parseRawLog(out)
	if err != nil {
		return nil, err
	}
	pointers, err := readPointers(ctx, g, blobsOf(commits))
	if err != nil {
		return nil, err
	}
	var changes []Change
	for _, c := range commits {
		for _, e := range c.entries {
			if ch, ok := changeOf(c.hash, e, pointers); ok {
				changes = append(changes, ch)
			}
		}
	}
	return changes, nil
}

// changeOf is the Change of e, ok false when e does not give its path an LFS file.
func changeOf(commit string, e rawEntry, pointers map[string]pointer) (Change, bool) {
	if e.status == 'D' {
		old, ok := pointers[e.src]
		ok = ok && regularFile(e.srcMode)
		return Change{Commit: commit, Path: e.srcPath, Oid: old.oid, Size: old.size, Deleted: true}, ok
	}
	if !regularFile(e.dstMode) {
		return Change{}, false
	}
	cur, ok := pointers[e.dst]
	if !ok {
		return Change{}, false
	}
	ch := Change{Commit: commit, Path: e.dstPath, Oid: cur.oid, Size: cur.size}
	if prev, ok := pointers[e.src]; ok && regularFile(e.srcMode) {
		ch.PrevPath, ch.PrevOid, ch.PrevSize = e.srcPath, prev.oid, prev.size
	}
	return ch, true
}

func regularFile(mode string) bool { return mode == "100644" || mode == "100755" }

type logCommit struct {
	hash    string
	entries []rawEntry
}

// parseRawLog reads `git log -z --raw --format=format:%H`: per commit its hash, then (after a
// newline) its raw entries, each ":modes ids status" NUL path NUL (two paths for renames and
// copies), commits separated by NULs.
func parseRawLog(out []byte) ([]logCommit, error) {
	toks := bytes.Split(out, []byte{0})
	var commits []logCommit
	for i := 0; i < len(toks); i++ {
		t := bytes.TrimLeft(toks[i], "\n")
		if len(t) == 0 {
			continue
		}
		if t[0] != ':' {
			head, rest, _ := bytes.Cut(t, []byte{'\n'})
			if !isObjectID(string(head)) {
				return nil, fmt.Errorf("git log: unexpected output %q", clip(head))
			}
			commits = append(commits, logCommit{hash: string(head)})
			if t = rest; len(t) == 0 {
				continue
			}
		}
		if len(commits) == 0 {
			return nil, fmt.Errorf("git log: a change before any commit")
		}
		e, n, err := parseRawEntry(string(t), toks[i+1:])
		if err != nil {
			return nil, err
		}
		i += n
		c := &commits[len(commits)-1]
		c.entries = append(c.entries, e)
	}
	return commits, nil
}

// parseRawEntry reads ":srcmode dstmode src dst status" and its paths from the tokens after it,
// returning how many it used.
func parseRawEntry(meta string, after [][]byte) (rawEntry, int, error) {
	f := strings.Fields(strings.TrimPrefix(meta, ":"))
	if len(f) != 5 || f[4] == "" {
		return rawEntry{}, 0, fmt.Errorf("git log: unexpected raw line %q", clip([]byte(meta)))
	}
	e := rawEntry{srcMode: f[0], dstMode: f[1], src: f[2], dst: f[3], status: f[4][0]}
	n := 1
	if e.status == 'R' || e.status == 'C' {
		n = 2
	}
	if len(after) < n {
		return rawEntry{}, 0, fmt.Errorf("git log: raw line %q without its paths", clip([]byte(meta)))
	}
	e.srcPath, e.dstPath = string(after[0]), string(after[n-1])
	return e, n, nil
}

// isObjectID: 40 (SHA-1) or 64 (SHA-256 repositories) lowercase hex digits.
func isObjectID(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// blobsOf lists the blobs the entries name (new and previous versions of regular files), once each.
func blobsOf(commits []logCommit) []string {
	seen := map[string]bool{}
	var ids []string
	add := func(id, mode string) {
		if !seen[id] && regularFile(mode) && isObjectID(id) && strings.Trim(id, "0") != "" {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, c := range commits {
		for _, e := range c.entries {
			add(e.dst, e.dstMode)
			add(e.src, e.srcMode)
		}
	}
	return ids
}

type pointer struct {
	oid  string
	size int64
}

// readPointers reads the blobs ids that are LFS pointers: their sizes first (cat-file
// --batch-check), then the contents of those under git-lfs's cutoff only.
func readPointers(ctx context.Context, g gitrepo.Git, ids []string) (map[string]pointer, error) {
	out := map[string]pointer{}
	if len(ids) == 0 {
		return out, nil
	}
	checked, err := g.Input(ctx, []byte(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	if err != nil {
		return nil, err
	}
	var small []string
	for _, line := range strings.Split(strings.TrimSpace(string(checked)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "blob" {
			if n, err := strconv.ParseInt(f[2], 10, 64); err == nil && n > 0 && n < lfspointer.MaxSize {
				small = append(small, f[0])
			}
		}
	}
	if len(small) == 0 {
		return out, nil
	}
	contents, err := g.Input(ctx, []byte(strings.Join(small, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	return decodeBatch(contents, out)
}

// decodeBatch reads `git cat-file --batch` output ("<id> blob <size>\n<content>\n" each) and keeps
// the blobs that are LFS pointers.
func decodeBatch(b []byte, out map[string]pointer) (map[string]pointer, error) {
	for len(b) > 0 {
		head, rest, ok := bytes.Cut(b, []byte{'\n'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git cat-file: unexpected output %q", clip(head))
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || n+1 > len(rest) {
			return nil, fmt.Errorf("git cat-file: unexpected size in %q", clip(head))
		}
		if p, ok := lfspointer.Decode(rest[:n]); ok && n < lfspointer.MaxSize {
			out[f[0]] = pointer{oid: p.Oid, size: p.Size}
		}
		b = rest[n+1:]
	}
	return out, nil
}
