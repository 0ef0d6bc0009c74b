package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// lfsFallback serves a download from a local remote that keeps the object as a plain LFS file
// (<remote git dir>/lfs/objects/aa/bb/oid, pushed before Xet was installed): it copies it to a
// temp file in tmp, checking size and SHA-256 on the way (hub.SaveVerified).
func (x *Client) lfsFallback(ctx context.Context, r LocalRemote, obj agent.Object, tmp string, progress func(int64)) (agent.Result, error) {
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
	out.Close()
	err = hub.SaveVerified(ctx, in, out.Name(), obj.Oid, obj.Size, progress)
	if errors.Is(err, hub.ErrMismatch) {
		return agent.Result{}, fmt.Errorf("the LFS object %s in remote %q is not the object: %w: the remote's copy is damaged", src, redact.URL(x.init.Remote), err)
	}
	if err != nil {
		return agent.Result{}, fmt.Errorf("copying %s: %w", src, err)
	}
	return agent.Result{Mode: agent.ModeLFSFile, Path: out.Name(), NewBytes: obj.Size}, nil
}

func (x *Client) storeDirOf(r LocalRemote) string {
	if x.storeDir() != "" {
		return x.storeDir()
	}
	return r.StoreDir()
}
