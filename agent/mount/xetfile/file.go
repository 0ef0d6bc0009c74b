package xetfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// File is one LFS object read through Xet. Safe for concurrent use.
type File struct {
	fs      *Files
	oid     string
	size    int64
	sha     [32]byte
	object  string // a whole copy in .git/lfs/objects ("" none)
	resolve func(ctx context.Context) (Source, error)
	plan    lazy[*plan]
	track   shaTrack
}

// Open returns the reader of object oid (size bytes, SHA-256 sha). object, when not "", is where
// git-lfs may keep a whole copy of it (read from there while it is there, with the right size).
// resolve finds its source, once, at the first read that needs it.
func (fs *Files) Open(oid string, size int64, sha [32]byte, object string, resolve func(ctx context.Context) (Source, error)) *File {
	return &File{fs: fs, oid: oid, size: size, sha: sha, object: object, resolve: resolve}
}

// Size is the file's size.
func (f *File) Size() int64 { return f.size }

// ReadAt reads len(p) bytes at off (fewer at the end of the file), every one verified. It fails
// when a byte cannot be had within Config.Wait, when the source answers with bytes that do not
// verify, and when the file, read whole, does not match its SHA-256.
func (f *File) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := f.track.failed(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if off >= f.size {
		return 0, nil
	}
	p = p[:min(int64(len(p)), f.size-off)]
	if ok, err := f.readObject(p, off); ok || err != nil {
		if err == nil {
			err = f.tracked(p, off)
		}
		return len(p), err
	}
	pl, err := f.getPlan(ctx)
	if err != nil {
		return 0, err
	}
	pieces, err := f.locate(ctx, pl, off, len(p))
	if err != nil {
		return 0, err
	}
	refs := refsOf(pieces)
	data, err := f.chunks(ctx, pl, refs, true)
	if err != nil {
		return 0, err
	}
	if err := f.checkPlan(pl); err != nil {
		return 0, err
	}
	for _, pc := range pieces {
		copy(p[pc.dst:], data[pc.ref][pc.lo:pc.hi])
	}
	return len(p), f.tracked(p, off)
}

func (f *File) getPlan(ctx context.Context) (*plan, error) {
	return f.plan.get(ctx, f.fs, "the plan of object "+f.oid, f.loadPlan)
}

// replan drops plan old (its URLs were refused) and asks for a new one.
func (f *File) replan(ctx context.Context, old *plan) (*plan, error) {
	f.plan.forget(old)
	return f.getPlan(ctx)
}

// readObject reads from the whole copy in .git/lfs/objects when there is one of the right size
// (ok false: there is none, read through Xet).
func (f *File) readObject(p []byte, off int64) (ok bool, err error) {
	if f.object == "" {
		return false, nil
	}
	o, err := os.Open(f.object)
	if err != nil {
		return false, nil
	}
	defer o.Close()
	if fi, err := o.Stat(); err != nil || fi.Size() != f.size {
		return false, nil
	}
	if _, err := o.ReadAt(p, off); err != nil && !errors.Is(err, io.EOF) {
		return true, fmt.Errorf("reading %s: %w", f.object, err)
	}
	f.fs.st.fromObject.Add(int64(len(p)))
	return true, nil
}

// hasObject reports whether the whole copy in .git/lfs/objects is there (reads need no read-ahead).
func (f *File) hasObject() bool {
	if f.object == "" {
		return false
	}
	fi, err := os.Stat(f.object)
	return err == nil && fi.Size() == f.size
}

// chunkRef is chunk idx of xorb, its hash and raw size.
type chunkRef struct {
	xorb hash.Hash
	idx  uint32
	hash hash.Hash
	size int
}

// piece is bytes [lo, hi) of chunk refs[ref] of a read, which go to the read's buffer at dst.
type piece struct {
	ref, lo, hi, dst int
	chunk            chunkRef
}

// locate lays the n bytes at off over the chunks of plan p, reading the footers of their xorbs.
func (f *File) locate(ctx context.Context, p *plan, off int64, n int) ([]piece, error) {
	var out []piece
	end := off + int64(n)
	first := p.termAt(off)
	for ti := first + 1; ti < len(p.terms) && p.terms[ti].pos < end; ti++ {
		f.fs.footers.start(f, p, p.terms[ti].xorb) // every footer the range needs, at once
	}
	for ti := first; ti < len(p.terms) && p.terms[ti].pos < end; ti++ {
		t := p.terms[ti]
		info, err := f.fs.footers.get(ctx, f, p, t.xorb)
		if err != nil {
			return nil, err
		}
		if err := info.checkTerm(t); err != nil {
			return nil, err
		}
		base := info.rawStart(t.start) - t.pos // file offset + base = raw offset in the xorb
		from := max(off, t.pos)
		for k := info.chunkAt(t.start, t.end, from+base); k < t.end; k++ {
			cs := info.rawStart(k) - base // the chunk's offset in the file
			if cs >= end {
				break
			}
			lo, hi := max(off, cs), min(end, info.rawEnd[k]-base)
			out = append(out, piece{lo: int(lo - cs), hi: int(hi - cs), dst: int(lo - off),
				chunk: chunkRef{xorb: t.xorb, idx: k, hash: info.hashes[k], size: info.size(k)}})
		}
	}
	return out, nil
}

// refsOf numbers the distinct chunks of pieces (piece.ref) and returns them.
func refsOf(pieces []piece) []chunkRef {
	var refs []chunkRef
	seen := map[chunkRef]int{}
	for i := range pieces {
		r, ok := seen[pieces[i].chunk]
		if !ok {
			r = len(refs)
			seen[pieces[i].chunk] = r
			refs = append(refs, pieces[i].chunk)
		}
		pieces[i].ref = r
	}
	return refs
}
