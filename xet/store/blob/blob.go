// Package blob is the storage under a CAS store: named immutable blobs, each written whole and
// atomically, read by ranges. It holds the Backend interface every storage implements, with the
// roles only some have as small interfaces of their own, the types they share, and the naming rule
// every backend enforces. Implementations: blob/fs (a directory) and blob/s3 (an S3-compatible
// bucket); blob/blobtest is the conformance suite both pass.
//
// The store (xet/store) gives each name only to equivalent content, which lets backends make
// racing writers of one name both succeed.
package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ErrNotFound: no blob of that name.
var ErrNotFound = errors.New("not found")

// ErrPacked: the blob lives in a pack file (blob/fs), which is not moved or deleted one blob at a
// time; see PackSweeper.
var ErrPacked = errors.New("packed blob: not moved or deleted one by one")

// Backend is the blob storage under a store. Every method is safe for concurrent use by goroutines
// and, where the implementation says so, by several processes sharing the storage. A reader never
// sees a partly written blob.
type Backend interface {
	// Create stores the bytes of r under name unless a blob of that name exists. When r is Sized,
	// Size is the exact length of the blob, and the backend may reserve the space up front; a
	// *BytesBlob may be written from its parts without being read through. When r is a LongStream,
	// the backend may write it as it reads it. It returns created=false (and reads r no further) when
	// the name was taken, by this or another writer, before this one became visible. On error
	// nothing is visible under name. Writers racing on one name may both report created=true.
	Create(ctx context.Context, name string, r io.Reader) (created bool, err error)
	// CreateBatch creates each blob as Create would, in order: a blob is visible only once every
	// blob before it in the batch is, so an entry may name one written earlier in its batch. It
	// returns, per blob, whether this call created it. On error a prefix of the batch may have been
	// created (a retry completes it). A backend that cannot do better calls CreateEach.
	CreateBatch(ctx context.Context, blobs []NewBlob) (created []bool, err error)
	// Open opens a blob for ranged reads; a missing blob gives an error matching ErrNotFound.
	Open(ctx context.Context, name string) (Blob, error)
	// Exists reports whether a blob of that name exists. It is for checks before a write, where a
	// wrong "no" costs a duplicate write of the same content: a backend may miss a blob another
	// process wrote very recently (blob/fs: up to 100 ms for packed ones); Open never misses one.
	Exists(ctx context.Context, name string) (bool, error)
	// List returns the names under prefix (a "dir/" form), sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// ListInfo is List with each blob's size and last write time. A packed blob (Info.Packed) is
	// reported with its pack's modification time, never earlier than the blob's own write.
	ListInfo(ctx context.Context, prefix string) ([]Info, error)
	// Move gives the blob from the name to (replacing a blob there, which the store only does with
	// the same content) and stamps it with the current time. ErrNotFound when from is missing;
	// ErrPacked for a packed blob.
	Move(ctx context.Context, from, to string) error
	// Delete removes a blob. ErrNotFound when it is missing; ErrPacked for a packed blob.
	Delete(ctx context.Context, name string) error
	// Quarantine moves a damaged blob out of the way (kept for inspection, no longer listed or
	// opened), so that its name can be written again; ErrNotFound when there is none. A backend may
	// refuse for blobs it cannot move (packed ones).
	Quarantine(ctx context.Context, name string) error
	// CleanTemp removes what writers killed mid-write left more than age ago (temp files, stray
	// packs, unfinished multipart uploads) and returns how many it removed. Writes in progress are
	// younger: pass an age well above the longest write (an hour, say).
	CleanTemp(ctx context.Context, age time.Duration) (removed int, err error)
	// Features says what the backend does well, for the store's choices.
	Features() Features
	// Close lets go of what the backend holds for writing (blob/fs: its pack), for a process about
	// to exit. The backend stays usable.
	Close() error
}

// Features are the properties of a backend the store chooses by.
type Features struct {
	// StreamsCreates: Create writes a LongStream as it reads it, at the memory of a buffer, so a
	// large blob can be handed over as a stream that is checked as it passes. Otherwise the store
	// hands over whole blobs (an S3 PUT signs its whole payload).
	StreamsCreates bool
	// CachedReads: reads are served from the operating system's page cache, so the store keeps no
	// cache of its own for small index entries.
	CachedReads bool
}

// PackSweeper is a Backend whose packed blobs (Info.Packed) can be moved and deleted, a batch at a
// time, by rewriting the packs that hold them: what gc needs of a backend that packs blobs.
type PackSweeper interface {
	// SweepPacked applies changes and returns those applied: a change whose pack another writer
	// holds is left for a later call.
	SweepPacked(ctx context.Context, changes []PackChange) (applied []PackChange, err error)
}

// PackChange is what gc does to one packed blob: rename it (To) or drop it (To empty).
type PackChange struct {
	Name, To string
}

// Checker is a Backend with its own consistency check (fsck): damaged blobs it can name, and the
// leftovers of interrupted writes.
type Checker interface {
	// Check returns the damaged blobs (name: what is wrong) and the number of temp files and stray
	// packs writers left. The error is for failing to check at all.
	Check(ctx context.Context) (damaged map[string]string, temp int, err error)
}

// Presigner is a Backend whose blobs clients can fetch straight from the storage.
type Presigner interface {
	// PresignGet returns a URL of a GET of the blob, valid for ttl, which accepts a Range header.
	PresignGet(ctx context.Context, name string, ttl time.Duration) (string, error)
}

// Blob is an open blob: ranged reads and its size.
type Blob interface {
	// ReadAt reads len(p) bytes at off, as io.ReaderAt does, under ctx.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	// Section streams n bytes at off, as a sequential reader of a long range wants them (one
	// ranged request of an object store; O_DIRECT reads of a long range of a file).
	Section(ctx context.Context, off, n int64) (io.ReadCloser, error)
	Size() int64
	Close() error
}

// Filer is a Blob that is a whole file of the local filesystem (blob/fs's blobs that are not
// packed): a reader may use the file itself, e.g. for the kernel's sendfile. The file belongs to
// the Blob (Close closes it); reads of it ignore contexts, as the Blob's own do.
type Filer interface {
	File() *os.File
}

// ReaderAt is b read under ctx, as an io.ReaderAt (for io.SectionReader and the parsers that read
// through one). It is good for as long as ctx and b are.
func ReaderAt(ctx context.Context, b Blob) io.ReaderAt {
	return readerAt(func(p []byte, off int64) (int, error) { return b.ReadAt(ctx, p, off) })
}

type readerAt func(p []byte, off int64) (int, error)

func (f readerAt) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }

// Sized is a source of Create that knows its exact length.
type Sized interface{ Size() int64 }

// LongStream is a source of Create of unknown length that is at least SizeAtLeast bytes long
// whenever it is read whole (a streamed upload being checked as it passes).
type LongStream interface{ SizeAtLeast() int64 }

// Info is one listed blob.
type Info struct {
	Name    string
	Size    int64
	ModTime time.Time
	Packed  bool // in a pack (blob/fs): moved and deleted only through PackSweeper
}

// NewBlob is one blob of a CreateBatch.
type NewBlob struct {
	Name string
	Data []byte
}

// CreateEach is CreateBatch for a backend without batches: one Create after the other.
func CreateEach(ctx context.Context, be Backend, blobs []NewBlob) ([]bool, error) {
	created := make([]bool, len(blobs))
	for i, b := range blobs {
		c, err := be.Create(ctx, b.Name, bytes.NewReader(b.Data))
		if err != nil {
			return created, err
		}
		created[i] = c
	}
	return created, nil
}

// MaxNameLen bounds a blob name.
const MaxNameLen = 1024

// CheckName refuses blob names that could leave the storage's namespace or collide with a
// backend's own directories (tmp/, packs/, quarantine/). Every backend checks names with it.
func CheckName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return fmt.Errorf("store: bad blob name %q", name)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("store: blob name of %d bytes", len(name))
	}
	for i, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || (i == 0 && (part == "tmp" || part == "packs" || part == "quarantine")) {
			return fmt.Errorf("store: bad blob name %q", name)
		}
	}
	return nil
}

// BytesBlob is a blob held in memory in parts (a xorb's records and its footer). It is an
// io.Reader like any blob source, and Sized; blob/fs writes its large parts without copying them
// into the page cache (O_DIRECT, where the filesystem allows it). The parts must not change until
// Create returns.
type BytesBlob struct {
	parts [][]byte
	size  int64
	r     io.Reader
}

// NewBytesBlob returns the blob made of parts, in order.
func NewBytesBlob(parts ...[]byte) *BytesBlob {
	b := &BytesBlob{parts: parts}
	rs := make([]io.Reader, len(parts))
	for i, p := range parts {
		b.size += int64(len(p))
		rs[i] = bytes.NewReader(p)
	}
	b.r = io.MultiReader(rs...)
	return b
}

// Parts returns the blob's parts, in order (not to be changed).
func (b *BytesBlob) Parts() [][]byte { return b.parts }

// Size returns the blob's length.
func (b *BytesBlob) Size() int64 { return b.size }

// Read reads the blob.
func (b *BytesBlob) Read(p []byte) (int, error) { return b.r.Read(p) }

// WriteTo writes the (unread part of the) blob to w, one write per part.
func (b *BytesBlob) WriteTo(w io.Writer) (int64, error) { return b.r.(io.WriterTo).WriteTo(w) }
