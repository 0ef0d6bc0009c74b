package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

// ErrMissing marks an object found neither locally nor on the old LFS server.
var ErrMissing = errors.New("object missing")

// source finds the bytes of objects: git-lfs's objects directory, else the old LFS server (basic
// transfer).
type source struct {
	gitDir string // the git directory linked work trees share (migrate's state)
	lfsDir string // git-lfs's storage directory (gitrepo.LFSDir): objects/ and tmp/
	// remoteObjects is a local remote's git-lfs store (<remote>/lfs/objects), where plain git-lfs
	// pushed to a path remote keeps objects; "" for network remotes.
	remoteObjects string
	remote        string
	creds         *credentials.Resolver
	api           *hub.API
	lfsURL        string // the old LFS server (…/info/lfs; for SSH remotes found through ssh when needed); "" none
	// spool, when set (dry runs), receives fetched objects instead of .git/lfs/objects.
	spool string
	at    map[string]string // oid → a verified copy, filled by ensure
}

// dest is where a fetched or copied object goes.
func (s *source) dest(oid string) string {
	if s.spool != "" {
		return filepath.Join(s.spool, oid)
	}
	return s.localPath(oid)
}

// path is the verified copy of oid ensure found or made.
func (s *source) path(oid string) string { return s.at[oid] }

// localPath is where git-lfs keeps oid.
func (s *source) localPath(oid string) string {
	return filepath.Join(s.lfsDir, "objects", oid[0:2], oid[2:4], oid)
}

// verifyFile reports whether path holds exactly oid (size and SHA-256).
func verifyFile(path, oid string, size int64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return false, err
	}
	return n == size && hex.EncodeToString(h.Sum(nil)) == oid, nil
}

// ensure makes the verified bytes of each object available (path), fetching those missing or
// corrupt locally from the old LFS server in one batch (at most 100). It returns, per object that
// could not be had, the reason.
func (s *source) ensure(ctx context.Context, objs []*Object) (map[string]error, error) {
	failed := map[string]error{}
	fetch, err := s.local(ctx, objs)
	if err != nil {
		return nil, err
	}
	if len(fetch) == 0 {
		return failed, nil
	}
	if s.lfsURL == "" {
		for _, o := range fetch {
			failed[o.Oid] = fmt.Errorf("%w: not in %s (or corrupt there) and no LFS server to fetch it from", ErrMissing, filepath.Join(s.lfsDir, "objects"))
		}
		return failed, nil
	}
	if s.creds.SSH() {
		u, err := s.creds.LFSURL(ctx)
		if err != nil {
			return nil, err
		}
		s.lfsURL = u
	}
	a, err := batch(ctx, s.api, s.lfsURL, "download", []string{"basic"}, fetch)
	if err != nil {
		return nil, err
	}
	got := map[string]bool{}
	for _, r := range a.Objects {
		got[r.OID] = true
		var o *Object
		for _, f := range fetch {
			if f.Oid == r.OID {
				o = f
			}
		}
		switch {
		case o == nil:
			return nil, fmt.Errorf("LFS batch at %s answered for object %q, not asked for", hub.Where(s.lfsURL), r.OID)
		case r.Error != nil:
			failed[o.Oid] = fmt.Errorf("%w: the LFS server at %s says %d %s", ErrMissing, hub.Where(s.lfsURL), r.Error.Code, redact.Printable(r.Error.Message))
		case r.Actions["download"] == nil:
			failed[o.Oid] = fmt.Errorf("%w: the LFS server at %s gave no download action", ErrMissing, hub.Where(s.lfsURL))
		default:
			if err := s.get(ctx, o, r.Actions["download"].Href, r.Actions["download"].Header); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				failed[o.Oid] = err
			} else {
				s.at[o.Oid] = s.dest(o.Oid)
			}
		}
	}
	for _, o := range fetch {
		if !got[o.Oid] {
			failed[o.Oid] = fmt.Errorf("%w: the LFS server at %s left it out of its answer", ErrMissing, hub.Where(s.lfsURL))
		}
	}
	return failed, nil
}

// local finds the objects of objs with a verified copy on this machine (.git/lfs/objects, or a
// local remote's store, copied in) and returns the others, to be fetched.
func (s *source) local(ctx context.Context, objs []*Object) (fetch []*Object, err error) {
	if s.at == nil {
		s.at = map[string]string{}
	}
	for _, o := range objs {
		ok, err := verifyFile(s.localPath(o.Oid), o.Oid, o.Size)
		if err != nil {
			return nil, fmt.Errorf("reading the local copy of %s: %w", o.Oid, err)
		}
		if ok {
			s.at[o.Oid] = s.localPath(o.Oid)
			continue
		}
		if s.remoteObjects != "" {
			if ok, err = s.copyFromRemote(ctx, o); err != nil {
				return nil, err
			}
		}
		if ok {
			s.at[o.Oid] = s.dest(o.Oid)
		} else {
			fetch = append(fetch, o)
		}
	}
	return fetch, nil
}

// get downloads one object into .git/lfs/objects: a temp file in .git/lfs/tmp, SHA-256 checked,
// then renamed, as git-lfs does.
func (s *source) get(ctx context.Context, o *Object, href string, header map[string]string) error {
	// As git-lfs's basic adapter: the action's headers, else (after a 401) the user's credential.
	resp, err := s.api.Do(ctx, hub.Request{Method: http.MethodGet, URL: href, Header: header, Anonymous: true, LFS: true})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	tmpDir := filepath.Join(s.lfsDir, "tmp")
	if s.spool != "" {
		tmpDir = s.spool
	}
	if err := s.place(ctx, o, tmpDir, resp.Body); err != nil {
		return fmt.Errorf("GET %s: %w", hub.Where(href), err)
	}
	return nil
}

// place writes r to a temp file in tmpDir, verified as object o (size and SHA-256), and renames it
// to dest(o): the one way an object copy is made.
func (s *source) place(ctx context.Context, o *Object, tmpDir string, r io.Reader) error {
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmpDir, ".migrate-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	if err := hub.SaveVerified(ctx, r, tmp, o.Oid, o.Size, nil); err != nil {
		return err
	}
	dst := s.dest(o.Oid)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// copyFromRemote copies oid from a local remote's git-lfs store to dest(o), verifying it while it
// is copied (one read). ok is false when the remote has no right copy: the caller reports it.
func (s *source) copyFromRemote(ctx context.Context, o *Object) (ok bool, err error) {
	in, err := os.Open(filepath.Join(s.remoteObjects, o.Oid[0:2], o.Oid[2:4], o.Oid))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer in.Close()
	err = s.place(ctx, o, filepath.Dir(s.dest(o.Oid)), in)
	if errors.Is(err, hub.ErrMismatch) {
		return false, nil
	}
	return err == nil, err
}
