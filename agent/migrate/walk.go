package migrate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfspointer"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// Object is one LFS object the history names.
type Object struct {
	Oid    string
	Size   int64
	Path   string // the first path it was seen at (newest commits first)
	Commit string // a commit naming it there
	order  int    // for the upload order: versions of one path follow each other, oldest first
}

// Inventory is what a walk found.
type Inventory struct {
	Objects []*Object // in upload order
	Commits int
	Logical int64 // bytes of the distinct objects
}

// sizer is go-git's filesystem storage, which tells an object's size without decoding it.
type sizer interface {
	EncodedObjectSize(plumbing.Hash) (int64, error)
}

// walker walks commits and trees once each, remembering blobs already looked at.
type walker struct {
	repo    *git.Repository
	sizes   sizer
	trees   map[plumbing.Hash]bool
	blobs   map[plumbing.Hash]*lfspointer.Pointer // nil: not a pointer
	objects map[string]*Object
	byPath  map[string][]*Object
	inv     *Inventory
}

// Walk finds the LFS objects of the repository at dir: every pointer in the trees of the commits
// reachable from refs (nil or ["all"]: every branch, tag and remote-tracking ref), decoded with
// a pointer decoder held to git-lfs's (lfspointer.Decode) under its 1024-byte cutoff, plus the objects kept in .git/lfs/objects.
// Commits and trees are read once each (trees shared between commits are not walked again).
func Walk(ctx context.Context, dir string, refs []string) (*Inventory, error) {
	repo, closeRepo, err := openRepo(dir)
	if err != nil {
		return nil, err
	}
	defer closeRepo()
	w := &walker{repo: repo, trees: map[plumbing.Hash]bool{}, blobs: map[plumbing.Hash]*lfspointer.Pointer{},
		objects: map[string]*Object{}, byPath: map[string][]*Object{}, inv: &Inventory{}}
	if s, ok := repo.Storer.(sizer); ok {
		w.sizes = s
	}
	tips, err := resolveRefs(repo, refs)
	if err != nil {
		return nil, err
	}
	if err := w.walkCommits(ctx, tips); err != nil {
		return nil, err
	}
	w.addLocalObjects(ctx, dir)
	w.order()
	return w.inv, nil
}

// openRepo opens the repository at (or above) dir for reading only: exclusive access lets go-git
// list the loose objects once instead of probing the file system for each object it reads, and pack
// files stay open.
func openRepo(dir string) (*git.Repository, func(), error) {
	probe, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, nil, fmt.Errorf("opening the repository at %s: %w", dir, err)
	}
	fs, ok := probe.Storer.(*filesystem.Storage)
	if !ok {
		return probe, func() {}, nil
	}
	st := filesystem.NewStorageWithOptions(osfs.New(fs.Filesystem().Root()), cache.NewObjectLRUDefault(),
		filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
	repo, err := git.Open(st, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the repository at %s: %w", dir, err)
	}
	return repo, func() { st.Close() }, nil
}

// resolveRefs turns the --refs arguments into commit hashes.
func resolveRefs(repo *git.Repository, refs []string) ([]plumbing.Hash, error) {
	var tips []plumbing.Hash
	if len(refs) == 0 || (len(refs) == 1 && refs[0] == "all") {
		it, err := repo.References()
		if err != nil {
			return nil, fmt.Errorf("listing refs: %w", err)
		}
		err = it.ForEach(func(r *plumbing.Reference) error {
			n := r.Name()
			if r.Type() == plumbing.HashReference && (n.IsBranch() || n.IsTag() || n.IsRemote() || strings.HasPrefix(n.String(), "refs/")) {
				tips = append(tips, r.Hash())
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if h, err := repo.Head(); err == nil {
			tips = append(tips, h.Hash())
		}
		return tips, nil
	}
	for _, r := range refs {
		h, err := repo.ResolveRevision(plumbing.Revision(r))
		if err != nil {
			return nil, fmt.Errorf("ref %q: %w", r, err)
		}
		tips = append(tips, *h)
	}
	return tips, nil
}

// walkCommits visits every commit reachable from tips once, newest first.
func (w *walker) walkCommits(ctx context.Context, tips []plumbing.Hash) error {
	seen := map[plumbing.Hash]bool{}
	stack := append([]plumbing.Hash(nil), tips...)
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := w.commitOrTag(h)
		if err != nil {
			return err
		}
		if c == nil || (c.Hash != h && seen[c.Hash]) { // not a commit, or a tag of one already walked
			continue
		}
		seen[c.Hash] = true
		w.inv.Commits++
		if err := w.walkTree(c.TreeHash, "", c.Hash.String(), w.inv.Commits); err != nil {
			return fmt.Errorf("commit %s: %w", c.Hash, err)
		}
		stack = append(stack, c.ParentHashes...)
	}
	return nil
}

// commitOrTag reads h as a commit, peeling annotated tags; nil for tags of other objects.
func (w *walker) commitOrTag(h plumbing.Hash) (*object.Commit, error) {
	for range 16 {
		o, err := w.repo.Object(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", h, err)
		}
		switch v := o.(type) {
		case *object.Commit:
			return v, nil
		case *object.Tag:
			h = v.Target
		default:
			return nil, nil
		}
	}
	return nil, nil
}

// maxTreePath bounds the paths of a walk: PATH_MAX, longer than any path a checkout can hold. Each
// level of a walk keeps its path, so a tree nested deeper would cost memory growing with the
// square of its depth (488 MB for a hostile branch of 2,000 levels, packed in 144 KB).
const maxTreePath = 4096

// walkTree visits the entries of tree h (at prefix), unless it was seen under an earlier commit
// (then it is not even read).
func (w *walker) walkTree(h plumbing.Hash, prefix, commit string, seq int) error {
	if w.trees[h] {
		return nil
	}
	if len(prefix) > maxTreePath {
		return fmt.Errorf("commit %s has a path longer than %d bytes, which no checkout can hold (%.60q…): leave its refs out with --refs",
			commit, maxTreePath, prefix)
	}
	w.trees[h] = true
	tree, err := w.repo.TreeObject(h)
	if err != nil {
		return fmt.Errorf("tree %s (%s): %w", h, prefix, err)
	}
	for _, e := range tree.Entries {
		p := prefix + e.Name
		switch {
		case e.Mode == filemode.Dir:
			if err := w.walkTree(e.Hash, p+"/", commit, seq); err != nil {
				return err
			}
		case e.Mode.IsFile():
			ptr, err := w.pointer(e.Hash)
			if err != nil {
				return fmt.Errorf("blob %s (%s): %w", e.Hash, p, err)
			}
			if ptr != nil {
				w.add(ptr, p, commit, seq)
			}
		}
	}
	return nil
}

// pointer decodes blob h as an LFS pointer, once per blob: nil when it is not one (too big, or
// not a pointer as git-lfs reads them).
func (w *walker) pointer(h plumbing.Hash) (*lfspointer.Pointer, error) {
	if p, ok := w.blobs[h]; ok {
		return p, nil
	}
	w.blobs[h] = nil
	if w.sizes != nil {
		size, err := w.sizes.EncodedObjectSize(h)
		if err != nil {
			return nil, err
		}
		if size >= lfspointer.MaxSize {
			return nil, nil
		}
	}
	b, err := w.repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	if b.Size >= lfspointer.MaxSize {
		return nil, nil
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	p, ok := lfspointer.Decode(data)
	if !ok {
		return nil, nil // not a pointer: git-lfs leaves it alone too
	}
	w.blobs[h] = &p
	return &p, nil
}

func (w *walker) add(p *lfspointer.Pointer, path, commit string, seq int) {
	if o, ok := w.objects[p.Oid]; ok {
		if seq > o.order { // an older commit: the upload order follows the oldest sighting
			o.order = seq
		}
		return
	}
	o := &Object{Oid: p.Oid, Size: p.Size, Path: redact.Printable(path), Commit: commit, order: seq}
	w.objects[p.Oid] = o
	w.byPath[path] = append(w.byPath[path], o)
}

// addLocalObjects adds the objects of git-lfs's objects directory that no walked pointer names.
func (w *walker) addLocalObjects(ctx context.Context, dir string) {
	root := filepath.Join(gitDir(w.repo, dir), "lfs", "objects")
	if ld, err := gitrepo.Open(dir).LFSDir(ctx); err == nil { // lfs.storage, the shared git directory
		root = filepath.Join(ld, "objects")
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !lfsobject.ValidOid(d.Name()) {
			return nil
		}
		if _, ok := w.objects[d.Name()]; ok {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		w.objects[d.Name()] = &Object{Oid: d.Name(), Size: fi.Size(), Path: "(.git/lfs/objects)"}
		w.byPath["(.git/lfs/objects)"] = append(w.byPath["(.git/lfs/objects)"], w.objects[d.Name()])
		return nil
	})
}

// order lays the objects out for upload: paths in order of first appearance in history, and the
// versions of each path from oldest to newest, so each version dedupes against the one before.
func (w *walker) order() {
	paths := make([]string, 0, len(w.byPath))
	oldest := map[string]int{}
	for p, objs := range w.byPath {
		paths = append(paths, p)
		sort.SliceStable(objs, func(i, j int) bool { return objs[i].order > objs[j].order })
		oldest[p] = objs[0].order
	}
	sort.Slice(paths, func(i, j int) bool {
		if oldest[paths[i]] != oldest[paths[j]] {
			return oldest[paths[i]] > oldest[paths[j]]
		}
		return paths[i] < paths[j]
	})
	for _, p := range paths {
		for _, o := range w.byPath[p] {
			w.inv.Objects = append(w.inv.Objects, o)
			w.inv.Logical += o.Size
		}
	}
}

// gitDir is the repository's git directory.
func gitDir(repo *git.Repository, dir string) string {
	if fs, ok := repo.Storer.(*filesystem.Storage); ok {
		return fs.Filesystem().Root()
	}
	if d := filepath.Join(dir, ".git"); isDir(d) {
		return d
	}
	return dir
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
