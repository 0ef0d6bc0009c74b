package client

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// lfsFallback serves a download from a local remote that keeps the object as a plain LFS file
// (<remote git dir>/lfs/objects/aa/bb/oid, pushed before Xet was installed): it copies it to a
// temp file in tmp, checking size and SHA-256 on the way.
func (x *Client) lfsFallback(ctx context.Context, r LocalRemote, obj agent.Object, sha [32]byte, tmp string, progress func(int64)) (agent.Result, error) {
	src := r.LFSObject(obj.Oid)
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return agent.Result{}, fmt.Errorf("object %s is neither in the Xet store %s nor in %s: the remote %q does not have it "+
			"(push it from a clone that has the file: `git lfs push --all %s`)", obj.Oid, x.storeDirOf(r), src, redact.URL(x.init.Remote), redact.URL(x.init.Remote))
	}
	if err != nil {
		return agent.Result{}, fmt.Errorf("reading the LFS object of remote %q: %w", redact.URL(x.init.Remote), err)
	}
	defer in.Close()
	out, err := os.CreateTemp(tmp, "xet-lfs-"+obj.Oid+"-*")
	if err != nil {
		return agent.Result{}, fmt.Errorf("creating a temp file in %s: %w", tmp, err)
	}
	ok := false
	defer func() {
		if !ok {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), &progressReader{stopped: ctx.Err, r: in, progress: progress})
	if err != nil {
		return agent.Result{}, fmt.Errorf("copying %s: %w", src, err)
	}
	if n != obj.Size {
		return agent.Result{}, fmt.Errorf("the LFS object %s in remote %q has %d bytes, want %d: the remote's copy is damaged", src, redact.URL(x.init.Remote), n, obj.Size)
	}
	if got := h.Sum(nil); string(got) != string(sha[:]) {
		return agent.Result{}, fmt.Errorf("the LFS object %s in remote %q has SHA-256 %x, want %s: the remote's copy is damaged", src, redact.URL(x.init.Remote), got, obj.Oid)
	}
	if err := out.Close(); err != nil {
		return agent.Result{}, fmt.Errorf("writing %s: %w", out.Name(), err)
	}
	ok = true
	return agent.Result{Mode: agent.ModeLFSFile, Path: out.Name(), NewBytes: n}, nil
}

func (x *Client) storeDirOf(r LocalRemote) string {
	if x.storeDir() != "" {
		return x.storeDir()
	}
	return r.StoreDir()
}

// progressReader reports bytes read and stops once stopped returns an error (a ctx's Err).
type progressReader struct {
	stopped  func() error
	r        io.Reader
	n        int64
	progress func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.stopped(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	if n > 0 && p.progress != nil {
		p.progress(p.n)
	}
	return n, err
}
