// Package mount shows one revision of a repository as a read-only file system (FUSE, Linux): its
// tree from git's objects (internal/gittree), files that are not LFS files with their blobs' content,
// LFS files with their objects' sizes and content read through Xet on demand (agent/mount/xetfile).
// Nothing is read until it is: listing the tree reads git objects only, and an LFS file's source
// (its Xet hash and CAS, Options.Find) is asked for at its first read, in batches.
//
// Lifetime: Start mounts and serves; Stop unmounts (lazily when files are open) and waits for the
// serving to end; Done is closed when the file system is unmounted from outside (Unmount, or
// fusermount -u). A mount point left by a process that died ("transport endpoint is not connected")
// is cleaned by Start and by Unmount.
package mount

import (
	"context"
	"errors"
	"sync"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/mount/xetfile"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gittree"
)

// ErrNotSupported: this platform has no mount (FUSE on Linux only).
var ErrNotSupported = errors.New("git-xet-transfer mount needs FUSE, which it supports on Linux only")

// FSType is the file system type of a mount, as /proc/self/mountinfo shows it.
const FSType = "fuse.git-xet-transfer"

// Object is an LFS object: its oid and size.
type Object struct {
	Oid  string
	Size int64
}

// Found is where an object is read from, or why it cannot be.
type Found struct {
	Source xetfile.Source
	Err    error
}

// MaxBatch is the most objects one Find is asked about.
const MaxBatch = 100

// FindFunc finds the sources of objs (at most MaxBatch), in order.
type FindFunc func(ctx context.Context, objs []Object) []Found

// Options configure a mount.
type Options struct {
	Dir   string // the mount point (a directory)
	Tree  *gittree.Tree
	Files *xetfile.Files
	Find  FindFunc
	// Object is where git-lfs keeps a whole copy of an object ("" for none): read from there while
	// it is there.
	Object func(oid string) string
	Log    zerolog.Logger
	Name   string // the source a listing of mounts shows (e.g. "repo@v1")
}

// resolver asks Find about the objects reads need, as many at once as are waiting when a batch
// starts: the first read starts a batch, the reads that come while it runs form the next. Each
// found source is kept; a failure is not (the next read asks again). Its batches run on goroutines
// that close joins.
type resolver struct {
	find    FindFunc
	cancel  context.CancelFunc // of the batches' context
	closing chan struct{}      // closed by close
	wg      sync.WaitGroup

	mu      sync.Mutex
	found   map[string]xetfile.Source
	waiting map[string]*resolveCall // asked for, not answered yet
	queue   []*resolveCall          // not sent yet
	running bool
}

type resolveCall struct {
	obj  Object
	done chan struct{}
	res  Found
}

func newResolver(find FindFunc) *resolver {
	return &resolver{find: find, closing: make(chan struct{}), found: map[string]xetfile.Source{}, waiting: map[string]*resolveCall{}}
}

// close stops the batches and waits for them; calls still waiting fail.
func (r *resolver) close() {
	r.mu.Lock()
	select {
	case <-r.closing:
	default:
		close(r.closing)
		if r.cancel != nil {
			r.cancel()
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *resolver) isClosed() bool {
	select {
	case <-r.closing:
		return true
	default:
		return false
	}
}

// resolve returns the source of o.
func (r *resolver) resolve(ctx context.Context, o Object) (xetfile.Source, error) {
	r.mu.Lock()
	if s, ok := r.found[o.Oid]; ok {
		r.mu.Unlock()
		return s, nil
	}
	c := r.waiting[o.Oid]
	if c == nil {
		c = &resolveCall{obj: o, done: make(chan struct{})}
		r.waiting[o.Oid] = c
		r.queue = append(r.queue, c)
		if !r.running && !r.isClosed() {
			r.running = true
			ctx, cancel := context.WithCancel(context.Background())
			r.cancel = cancel
			r.wg.Add(1)
			go r.run(ctx, cancel)
		}
	}
	r.mu.Unlock()
	select {
	case <-c.done:
		return c.res.Source, c.res.Err
	case <-ctx.Done():
		return xetfile.Source{}, ctx.Err()
	case <-r.closing:
		return xetfile.Source{}, xetfile.ErrClosed
	}
}

// run sends the queue in batches until it is empty (ctx: the batches', which close cancels).
func (r *resolver) run(ctx context.Context, cancel context.CancelFunc) {
	defer r.wg.Done()
	defer cancel()
	for {
		r.mu.Lock()
		n := min(len(r.queue), MaxBatch)
		if n == 0 || ctx.Err() != nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		batch := append([]*resolveCall(nil), r.queue[:n]...)
		r.queue = r.queue[n:]
		r.mu.Unlock()
		objs := make([]Object, len(batch))
		for i, c := range batch {
			objs[i] = c.obj
		}
		res := r.find(ctx, objs)
		r.mu.Lock()
		for i, c := range batch {
			if i < len(res) {
				c.res = res[i]
			} else {
				c.res.Err = errors.New("no answer for the object")
			}
			if c.res.Err == nil {
				r.found[c.obj.Oid] = c.res.Source
			}
			delete(r.waiting, c.obj.Oid)
			close(c.done)
		}
		r.mu.Unlock()
	}
}
