// Package gittree reads the tree of one commit of a repository from git's objects (go-git), for
// the mount: a directory's entries with their modes and sizes, LFS pointers decoded
// (internal/lfspointer), and the content of blobs that are not LFS files.
//
// go-git's object storage is not safe for concurrent use (pack files are read through shared
// descriptors): every access goes through one lock.
package gittree

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lfspointer"
)

// Kind is what an entry is.
type Kind uint8

const (
	Dir       Kind = iota // a tree
	File                  // a blob that is not an LFS pointer
	LFS                   // an LFS pointer: the file is the object it names
	Symlink               // a symbolic link (the blob is its target)
	Submodule             // a gitlink (shown as an empty directory)
)

// Entry is one name of a directory.
type Entry struct {
	Name       string
	Kind       Kind
	Executable bool
	Hash       plumbing.Hash // the tree, blob or commit
	Size       int64         // of the blob (File, Symlink), or of the object (LFS)
	Oid        string        // LFS: the object's SHA-256
}

// Tree is the tree of one commit.
type Tree struct {
	mu   sync.Mutex
	repo *git.Repository
	root plumbing.Hash
	when time.Time
}

// Open reads commit (a full hash) of the repository at or above dir.
func Open(dir, commit string) (*Tree, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("opening the repository at %s: %w", dir, err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	return &Tree{repo: repo, root: c.TreeHash, when: c.Committer.When}, nil
}

// Root is the hash of the commit's tree.
func (t *Tree) Root() plumbing.Hash { return t.root }

// Time is the commit's time (the mount's files are shown with it).
func (t *Tree) Time() time.Time { return t.when }

// Dir lists tree h, sorted by name: blob sizes read from the object headers, and the blobs small
// enough to be pointers read and decoded.
func (t *Tree) Dir(h plumbing.Hash) ([]Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tree, err := t.repo.TreeObject(h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", h, err)
	}
	out := make([]Entry, 0, len(tree.Entries))
	for _, te := range tree.Entries {
		e := Entry{Name: te.Name, Hash: te.Hash}
		switch te.Mode {
		case filemode.Dir:
			e.Kind = Dir
		case filemode.Submodule:
			e.Kind = Submodule
		case filemode.Symlink, filemode.Regular, filemode.Executable, filemode.Deprecated:
			if err := t.blobEntry(&e, te.Mode); err != nil {
				return nil, err
			}
		default:
			continue // no other mode is written by git
		}
		out = append(out, e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// blobEntry fills e, a blob of mode m: its size, and for a regular file that is a pointer, the
// object it names.
func (t *Tree) blobEntry(e *Entry, m filemode.FileMode) error {
	e.Kind, e.Executable = File, m == filemode.Executable
	if m == filemode.Symlink {
		e.Kind = Symlink
	}
	size, err := t.blobSize(e.Hash)
	if err != nil {
		return err
	}
	e.Size = size
	if e.Kind != File || size >= lfspointer.MaxSize {
		return nil
	}
	b, err := t.blobLocked(e.Hash, lfspointer.MaxSize)
	if err != nil {
		return err
	}
	if p, ok := lfspointer.Decode(b); ok && size > 0 {
		e.Kind, e.Size, e.Oid = LFS, p.Size, p.Oid
	}
	return nil
}

// blobSize is the size of blob h from its object header (no blob is read whole for it).
func (t *Tree) blobSize(h plumbing.Hash) (int64, error) {
	n, err := t.repo.Storer.EncodedObjectSize(h)
	if err != nil {
		return 0, fmt.Errorf("reading blob %s: %w", h, err)
	}
	return n, nil
}

// ErrTooBig: a blob read whole was larger than asked for.
var ErrTooBig = errors.New("gittree: blob larger than the limit")

// Blob returns the content of blob h, at most limit bytes (ErrTooBig beyond).
func (t *Tree) Blob(h plumbing.Hash, limit int64) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blobLocked(h, limit)
}

func (t *Tree) blobLocked(h plumbing.Hash, limit int64) ([]byte, error) {
	b, err := t.repo.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	if b.Size > limit {
		return nil, fmt.Errorf("blob %s of %d bytes: %w (%d)", h, b.Size, ErrTooBig, limit)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, b.Size))
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	return out, nil
}

// CopyBlob writes the content of blob h to w.
func (t *Tree) CopyBlob(h plumbing.Hash, w io.Writer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, err := t.repo.BlobObject(h)
	if err != nil {
		return fmt.Errorf("reading blob %s: %w", h, err)
	}
	r, err := b.Reader()
	if err != nil {
		return fmt.Errorf("reading blob %s: %w", h, err)
	}
	defer r.Close()
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("reading blob %s: %w", h, err)
	}
	return nil
}
