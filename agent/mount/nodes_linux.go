package mount

import (
	"context"
	"encoding/hex"
	"errors"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/git-xet-transfer/git-xet-transfer/agent/mount/xetfile"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gittree"
)

// fsys is what every node of one mount shares.
type fsys struct {
	o    Options
	res  *resolver
	when time.Time
}

// setTimes gives an attribute the commit's time.
func (s *fsys) setTimes(a *fuse.Attr) {
	t := s.when
	a.SetTimes(&t, &t, &t)
}

// dirNode is a tree. Its children are made at its first lookup or listing, all at once: a
// directory of the tree is listed from one tree object.
type dirNode struct {
	fs.Inode
	s    *fsys
	path string
	tree gitHash
	once sync.Once
	ents []gittree.Entry
	err  error
}

type gitHash = [20]byte

var (
	_ fs.NodeStatfser  = (*dirNode)(nil)
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
)

func (d *dirNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Nlink = fuse.S_IFDIR|0o555, 2
	d.s.setTimes(&out.Attr)
	return 0
}

// Statfs answers df and statfs(2): a read-only file system with nothing free.
func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize, out.Frsize, out.NameLen = blockSize, blockSize, 255
	return 0
}

// maxDirPath bounds the paths the mount lists: PATH_MAX, longer than any path a checkout can
// hold. Each node keeps its path, so a tree nested deeper would cost memory growing with the
// square of its depth as a walk of the mount went down it.
const maxDirPath = 4096

// load lists the tree and adds a child per entry.
func (d *dirNode) load(ctx context.Context) syscall.Errno {
	if len(d.path) > maxDirPath {
		return syscall.ENAMETOOLONG
	}
	d.once.Do(func() {
		if d.tree == (gitHash{}) { // a submodule: nothing
			return
		}
		d.ents, d.err = d.s.o.Tree.Dir(d.tree)
		if d.err != nil {
			d.s.o.Log.Error().Err(d.err).Str("path", d.path).Msg("mount: reading a directory")
			return
		}
		for _, e := range d.ents {
			d.AddChild(e.Name, d.NewPersistentInode(ctx, d.s.node(d.path, e), fs.StableAttr{Mode: modeOf(e)}), false)
		}
	})
	if d.err != nil {
		return syscall.EIO
	}
	return 0
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := d.load(ctx); errno != 0 {
		return nil, errno
	}
	ch := d.GetChild(name)
	if ch == nil {
		return nil, syscall.ENOENT
	}
	var a fuse.AttrOut
	if ga, ok := ch.Operations().(fs.NodeGetattrer); ok {
		ga.Getattr(ctx, nil, &a)
	}
	out.Attr = a.Attr
	return ch, 0
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if errno := d.load(ctx); errno != 0 {
		return nil, errno
	}
	list := make([]fuse.DirEntry, len(d.ents))
	for i, e := range d.ents {
		list[i] = fuse.DirEntry{Name: e.Name, Mode: modeOf(e)}
	}
	return fs.NewListDirStream(list), 0
}

// modeOf is the file type of an entry.
func modeOf(e gittree.Entry) uint32 {
	switch e.Kind {
	case gittree.Dir, gittree.Submodule:
		return fuse.S_IFDIR
	case gittree.Symlink:
		return fuse.S_IFLNK
	}
	return fuse.S_IFREG
}

// permOf is the permission bits of an entry: read-only, executable when git says so.
func permOf(e gittree.Entry) uint32 {
	if e.Executable {
		return 0o555
	}
	return 0o444
}

// node makes the node of entry e of directory dir.
func (s *fsys) node(dir string, e gittree.Entry) fs.InodeEmbedder {
	p := path.Join(dir, e.Name)
	switch e.Kind {
	case gittree.Dir:
		return &dirNode{s: s, path: p, tree: e.Hash}
	case gittree.Submodule:
		return &dirNode{s: s, path: p}
	case gittree.Symlink:
		return &linkNode{s: s, e: e}
	case gittree.LFS:
		return &lfsNode{s: s, path: p, e: e}
	}
	return &blobNode{s: s, path: p, e: e}
}

// linkNode is a symbolic link; its target is the blob.
type linkNode struct {
	fs.Inode
	s *fsys
	e gittree.Entry
}

var _ fs.NodeReadlinker = (*linkNode)(nil)

func (l *linkNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size, out.Nlink = fuse.S_IFLNK|0o777, uint64(l.e.Size), 1
	l.s.setTimes(&out.Attr)
	return 0
}

func (l *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	b, err := l.s.o.Tree.Blob(l.e.Hash, 4096)
	if err != nil {
		l.s.o.Log.Error().Err(err).Msg("mount: reading a symbolic link")
		return nil, syscall.EIO
	}
	return b, 0
}

// lfsNode is an LFS file: the object its pointer names, read through Xet.
type lfsNode struct {
	fs.Inode
	s    *fsys
	path string
	e    gittree.Entry
	once sync.Once
	file *xetfile.File
}

var (
	_ fs.NodeOpener = (*lfsNode)(nil)
	_ fs.NodeReader = (*lfsNode)(nil)
)

func (n *lfsNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size, out.Nlink = fuse.S_IFREG|permOf(n.e), uint64(n.e.Size), 1
	out.Blocks, out.Blksize = (uint64(n.e.Size)+511)/512, blockSize
	n.s.setTimes(&out.Attr)
	return 0
}

// blockSize is the st_blksize of files: tools size their reads by it (cat and cp read 128 KiB or
// this, whichever is larger), and a larger read crosses the mount in fewer requests.
const blockSize = 1 << 20

// xet returns the file's reader, made once.
func (n *lfsNode) xet() *xetfile.File {
	n.once.Do(func() {
		obj := Object{Oid: n.e.Oid, Size: n.e.Size}
		var sha [32]byte
		hex.Decode(sha[:], []byte(n.e.Oid)) // a pointer's oid is 64 lowercase hex digits
		local := ""
		if n.s.o.Object != nil {
			local = n.s.o.Object(n.e.Oid)
		}
		n.file = n.s.o.Files.Open(n.e.Oid, n.e.Size, sha, local, func(ctx context.Context) (xetfile.Source, error) {
			return n.s.res.resolve(ctx, obj)
		})
	})
	return n.file
}

func (n *lfsNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	// The content of an oid never changes: the kernel may keep its pages from one open to the next.
	return n.xet().NewReader(), fuse.FOPEN_KEEP_CACHE, 0
}

func (n *lfsNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	r, ok := f.(*xetfile.Reader)
	if !ok {
		r = n.xet().NewReader()
	}
	got, err := r.ReadAt(ctx, dest, off)
	if err != nil {
		return nil, n.s.readError(ctx, n.path, n.e.Oid, off, len(dest), err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

// readError logs why a read failed and returns its errno: EINTR when the reader was interrupted,
// else EIO.
func (s *fsys) readError(ctx context.Context, p, oid string, off int64, n int, err error) syscall.Errno {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return syscall.EINTR
	}
	s.o.Log.Error().Err(err).Str("path", p).Str("oid", oid).Int64("offset", off).Int("bytes", n).Msg("mount: read failed (EIO)")
	return syscall.EIO
}
