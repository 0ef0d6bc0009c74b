// Package migrate moves an existing LFS repository's objects to Xet without rewriting history:
// walk the refs for pointers (go-git, a pointer decoder held to git-lfs's), get each object's bytes (the
// local .git/lfs/objects, else the old LFS server by its batch API, SHA-256 verified), upload them
// in multi-file sessions ordered so that versions of one path follow each other, verify them on
// the target, and report. A state file under .git/xet/ records finished sessions; a run killed at
// any point and started again asks the target what it holds and goes on from there.
package migrate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-lfs/git-lfs/v3/config"
	"github.com/git-lfs/git-lfs/v3/lfshttp"
	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/agent/hub"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitnet"
	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"

	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Options of a migration.
type Options struct {
	// Warnings receives the one warning of a process that does not verify TLS certificates
	// (http.sslVerify=false); the command gives stderr.
	Warnings io.Writer
	Dir      string   // inside the repository
	Remote   string   // whose old LFS server objects come from (default "origin")
	Refs     []string // nil or ["all"]: every ref
	Target   Target
	DryRun   bool // walk and estimate (chunking local objects into a throwaway store); change nothing
	Cache    upload.ShardCache
	// SessionBytes bounds one upload session (default 1 GiB): a finished session is durable and
	// recorded, so a killed run loses at most one session's work.
	SessionBytes int64
	VerifyAll    bool            // reconstruct every object (default: a sample)
	Jobs         int             // xorb uploads in flight (default 2, 1 for an embedded target)
	Env          credentials.Env // the environment the old LFS server's credential is found with
	Log          zerolog.Logger
	Progress     func(Progress)
}

// Progress is reported after each object.
type Progress struct {
	Objects, TotalObjects int
	Bytes, TotalBytes     int64
	Elapsed               time.Duration
}

// Run migrates. The report says what moved; failures of single objects (missing everywhere) are in
// Report.Failed and make the migration partial, not an error.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.SessionBytes <= 0 {
		o.SessionBytes = 1 << 30
	}
	if o.Remote == "" {
		o.Remote = "origin"
	}
	began := time.Now()
	inv, err := Walk(ctx, o.Dir, o.Refs)
	if err != nil {
		return nil, err
	}
	rep := newReport(inv)
	rep.WalkTime = time.Since(began)
	crashPoint("walk")
	o.Log.Info().Int("commits", inv.Commits).Int("objects", len(inv.Objects)).Int64("bytes", inv.Logical).Dur("took", rep.WalkTime).Msg("migrate: walked")
	src, err := newSource(ctx, o)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		err = dryRun(ctx, o, inv, src, rep)
	} else {
		err = migrate(ctx, o, inv, src, rep)
	}
	rep.Time = time.Since(began)
	return rep, err
}

func newSource(ctx context.Context, o Options) (*source, error) {
	repo := gitrepo.Open(o.Dir)
	loc, err := repo.Location(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s is not inside a git repository: %w", o.Dir, err)
	}
	creds, err := credentials.New(ctx, repo, o.Env, o.Remote, "download")
	if err != nil {
		return nil, err
	}
	lfsDir, err := repo.LFSDir(ctx)
	if err != nil {
		return nil, err
	}
	s := &source{gitDir: loc.CommonDir, lfsDir: lfsDir, remote: o.Remote, creds: creds,
		api: hub.NewAPI(creds, httpClient(repo, o.Env.OS, o.Warnings, 0), cas.DefaultUserAgent())}
	ep, err := repo.Endpoint(ctx, "download", o.Remote)
	switch {
	case err != nil:
		return nil, err
	case ep.Local():
		dir := ep.LocalDir
		if d := filepath.Join(dir, ".git"); isDir(d) {
			dir = d
		}
		s.remoteObjects = filepath.Join(dir, "lfs", "objects")
	case ep.Url != "" && ep.Url != lfshttp.UrlUnknown:
		s.lfsURL = strings.TrimSuffix(ep.Url, "/")
	}
	return s, nil
}

// migrate uploads every object the target lacks, session by session.
func migrate(ctx context.Context, o Options, inv *Inventory, src *source, rep *Report) error {
	st := newState(src.gitDir, o.Target.Where())
	var todo []*Object
	for i := 0; i < len(inv.Objects); i += 100 {
		chunk := inv.Objects[i:min(i+100, len(inv.Objects))]
		miss, err := o.Target.Missing(ctx, chunk)
		if err != nil {
			return err
		}
		todo = append(todo, miss...)
	}
	rep.AlreadyThere = len(inv.Objects) - len(todo)
	if len(todo) > 0 {
		if err := uploadAll(ctx, o, todo, src, st, rep); err != nil {
			return err
		}
	}
	return verify(ctx, o, inv, rep)
}

// uploadAll runs sessions of up to o.SessionBytes over todo (in upload order), fetching objects
// 100 at a time ahead of the session that needs them.
func uploadAll(ctx context.Context, o Options, todo []*Object, src *source, st *state, rep *Report) error {
	client, err := o.Target.CAS(ctx)
	if err != nil {
		return err
	}
	counted := &countingCAS{Client: client}
	cfg := sessionConfig(o, counted, src.lfsDir)
	_ = os.MkdirAll(cfg.TempDir, 0o755)
	u := &uploader{o: o, sess: upload.NewSession(cfg), st: st, total: len(todo), totalBytes: sumSize(todo), began: time.Now()}
	defer u.sess.Close()
	err = eachVerified(ctx, todo, src, rep, func(obj *Object) error {
		res, err := uploadOne(ctx, u.sess, src.path(obj.Oid), obj)
		if err != nil {
			return err
		}
		rep.add(obj, res)
		return u.uploaded(ctx, obj)
	})
	if err != nil {
		return err
	}
	if err := u.finish(ctx); err != nil {
		return err
	}
	rep.StoredXorbs, rep.StoredShards, rep.ResentSkipped = counted.xorbs.Load(), counted.shards.Load(), u.sess.Resumed()
	return nil
}

// eachVerified hands each of objs whose verified bytes src makes available (src.ensure, 100 at a
// time ahead of their use) to use, in order; the others are reported failed (counted as not local
// in a dry run, whose copies only come from the old server).
func eachVerified(ctx context.Context, objs []*Object, src *source, rep *Report, use func(*Object) error) error {
	for i := 0; i < len(objs); i += 100 {
		chunk := objs[i:min(i+100, len(objs))]
		failed, err := src.ensure(ctx, chunk)
		if err != nil {
			return err
		}
		for _, obj := range chunk {
			if ferr, bad := failed[obj.Oid]; bad {
				if rep.DryRun {
					rep.NotLocal++
				}
				rep.fail(obj, ferr)
				continue
			}
			if err := use(obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// sessionConfig is the configuration of migrate's upload sessions to c, spilling under the
// repository's git-lfs temp directory (in lfsDir, git-lfs's storage directory). Every xorb is
// asked about first: a run killed after some xorbs and before their shard does not send them again.
func sessionConfig(o Options, c cas.Client, lfsDir string) upload.Config {
	cfg := upload.Config{CAS: c, Cache: o.Cache, Policy: xorb.PolicyAuto, GlobalDedupe: true, Log: o.Log,
		TempDir: filepath.Join(lfsDir, "tmp"), Concurrency: 2, ResumeCheckBytes: 1}
	if o.Target.Embedded() {
		cfg.Concurrency = 1
	}
	if o.Jobs > 0 {
		cfg.Concurrency = o.Jobs
	}
	return cfg
}

// uploader is uploadAll's session and what it uploaded and has not registered yet (pending):
// a session is finished, and its files recorded in the state, every o.SessionBytes or 5,000 files.
type uploader struct {
	o            Options
	sess         *upload.Session
	st           *state
	pending      []*Object
	pendingBytes int64
	done, total  int
	doneBytes    int64
	totalBytes   int64
	began        time.Time
}

// uploaded counts obj, uploaded into the session, reports the progress and finishes the session
// when it holds enough.
func (u *uploader) uploaded(ctx context.Context, obj *Object) error {
	u.pending = append(u.pending, obj)
	u.pendingBytes += obj.Size
	u.done++
	u.doneBytes += obj.Size
	if u.o.Progress != nil {
		u.o.Progress(Progress{Objects: u.done, TotalObjects: u.total, Bytes: u.doneBytes, TotalBytes: u.totalBytes, Elapsed: time.Since(u.began)})
	}
	if u.pendingBytes >= u.o.SessionBytes || len(u.pending) >= 5000 {
		return u.finish(ctx)
	}
	return nil
}

// finish registers the pending files (the session's shard) and records them in the state.
func (u *uploader) finish(ctx context.Context) error {
	if len(u.pending) == 0 {
		return nil
	}
	if err := u.sess.Finish(ctx); err != nil {
		return fmt.Errorf("registering %d files on %s: %w", len(u.pending), u.o.Target.Where(), err)
	}
	if err := u.st.record(u.pending); err != nil {
		return err
	}
	u.pending, u.pendingBytes = nil, 0
	crashPoint("shard")
	return nil
}

// uploadOne adds one verified local object to the session and checks what the chunker hashed.
func uploadOne(ctx context.Context, sess *upload.Session, path string, obj *Object) (*upload.FileResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := sess.Upload(ctx, f, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("uploading %s (%s): %w", obj.Oid, obj.Path, err)
	}
	if fmt.Sprintf("%x", res.SHA256) != obj.Oid || res.Size != obj.Size {
		return nil, fmt.Errorf("%s changed while it was uploaded (SHA-256 %x): run again", path, res.SHA256)
	}
	return res, nil
}

func sumSize(objs []*Object) int64 {
	var n int64
	for _, o := range objs {
		n += o.Size
	}
	return n
}

// httpClient sends each request as git-lfs would (internal/gitnet over repo's config snapshot and
// osEnv): the old LFS server and the batch target behind the user's proxy, with their private CA.
// stall bounds the wait for an answer's headers (0: the CAS client's default).
func httpClient(repo *gitrepo.Repo, osEnv []string, warnings io.Writer, stall time.Duration) *http.Client {
	if stall <= 0 {
		stall = cas.DefaultStallTimeout
	}
	return gitnet.Client(gitnet.Options{
		Config:       func() *config.Configuration { return repo.LFSConfiguration(osEnv) },
		StallTimeout: stall,
		Warnings:     warnings,
	})
}
