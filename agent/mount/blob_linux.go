package mount

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gittree"
	"github.com/git-xet-transfer/git-xet-transfer/internal/scratch"
)

// blobNode is a file that is not an LFS file: its blob's content.
type blobNode struct {
	fs.Inode
	s    *fsys
	path string
	e    gittree.Entry
}

var (
	_ fs.NodeOpener   = (*blobNode)(nil)
	_ fs.NodeReader   = (*blobNode)(nil)
	_ fs.NodeReleaser = (*blobNode)(nil)
)

// memBlobBytes: a blob up to this size is held in memory while it is open; a larger one is copied
// to a scratch file (an unlinked temp file) at open. git's objects are compressed and may be
// deltas: a blob cannot be read at an offset without reading what comes before it.
const memBlobBytes = 16 << 20

func (b *blobNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size, out.Nlink = fuse.S_IFREG|permOf(b.e), uint64(b.e.Size), 1
	out.Blocks, out.Blksize = (uint64(b.e.Size)+511)/512, blockSize
	b.s.setTimes(&out.Attr)
	return 0
}

// blobHandle is an open blob: its bytes in memory, or in a scratch file.
type blobHandle struct {
	mu   sync.Mutex
	data []byte
	tmp  *scratch.File
}

func (b *blobNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	h := &blobHandle{}
	var err error
	if b.e.Size <= memBlobBytes {
		h.data, err = b.s.o.Tree.Blob(b.e.Hash, memBlobBytes)
	} else if h.tmp, err = scratch.Create("", "git-xet-mount-blob-*"); err == nil {
		err = b.s.o.Tree.CopyBlob(b.e.Hash, scratchWriter{h.tmp})
	}
	if err != nil {
		if h.tmp != nil {
			h.tmp.Close()
		}
		b.s.o.Log.Error().Err(err).Str("path", b.path).Msg("mount: reading a file from git's objects")
		return nil, 0, syscall.EIO
	}
	return h, fuse.FOPEN_KEEP_CACHE, 0
}

func (b *blobNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := f.(*blobHandle)
	if !ok || off < 0 {
		return nil, syscall.EIO
	}
	if off >= b.e.Size {
		return fuse.ReadResultData(nil), 0
	}
	n := min(int64(len(dest)), b.e.Size-off)
	if h.tmp == nil {
		return fuse.ReadResultData(h.data[off : off+n]), 0
	}
	h.mu.Lock() // a scratch file is not safe for concurrent use
	err := h.tmp.ReadAt(dest[:n], off)
	h.mu.Unlock()
	if err != nil {
		return nil, b.s.readError(ctx, b.path, "", off, len(dest), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (b *blobNode) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	if h, ok := f.(*blobHandle); ok && h.tmp != nil {
		h.tmp.Close()
	}
	return 0
}

// scratchWriter appends to a scratch file.
type scratchWriter struct{ f *scratch.File }

func (w scratchWriter) Write(p []byte) (int, error) {
	if _, err := w.f.Append(p); err != nil {
		return 0, err
	}
	return len(p), nil
}
