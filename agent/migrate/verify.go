package migrate

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// sampleSize is how many objects uploaded in a run are reconstructed without VerifyAll.
const sampleSize = 8

// verify checks that the target maps every migrated oid, and reconstructs a sample of this run's
// uploads (every one with VerifyAll) to check their SHA-256.
func verify(ctx context.Context, o Options, inv *Inventory, rep *Report) error {
	failed := map[string]bool{}
	for _, f := range rep.Failed {
		failed[f.Object.Oid] = true
	}
	var want []*Object
	for _, obj := range inv.Objects {
		if !failed[obj.Oid] {
			want = append(want, obj)
		}
	}
	for i := 0; i < len(want); i += 100 {
		miss, err := o.Target.Missing(ctx, want[i:min(i+100, len(want))])
		if err != nil {
			return fmt.Errorf("verifying: %w", err)
		}
		if len(miss) > 0 {
			return fmt.Errorf("verifying: %s does not map %s (%s) after the migration", o.Target.Where(), miss[0].Oid, miss[0].Path)
		}
	}
	var sample []*Object
	for _, obj := range want {
		if _, ok := rep.files[obj.Oid]; ok {
			sample = append(sample, obj)
		}
	}
	if !o.VerifyAll && len(sample) > sampleSize {
		step := len(sample) / sampleSize
		var s []*Object
		for i := 0; i < len(sample) && len(s) < sampleSize; i += step {
			s = append(s, sample[i])
		}
		sample = s
	}
	if len(sample) == 0 {
		return nil
	}
	client, err := o.Target.CAS(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "xet-migrate-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, obj := range sample {
		var sha [32]byte
		if _, err := hex.Decode(sha[:], []byte(obj.Oid)); err != nil {
			return fmt.Errorf("oid %q: %w", obj.Oid, err)
		}
		path := dir + "/" + obj.Oid
		err := download.Download(ctx, download.Config{CAS: client, Log: o.Log, BufferedIO: true},
			download.Request{File: rep.files[obj.Oid], SHA256: &sha, Size: obj.Size, Path: path})
		if err != nil {
			return fmt.Errorf("verifying %s (%s) on %s: %w", obj.Oid, obj.Path, o.Target.Where(), err)
		}
		os.Remove(path)
		rep.Verified++
	}
	return nil
}

// dryRun chunks and compresses the objects into a throwaway store to estimate what the target would
// store: local copies where they verify, else copies fetched from the old LFS server into a temp
// directory. It writes nothing in the repository and opens no target.
func dryRun(ctx context.Context, o Options, inv *Inventory, src *source, rep *Report) error {
	rep.DryRun = true
	dir, err := os.MkdirTemp("", "xet-migrate-dry-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	t, err := OpenEmbedded(dir+"/store", zerolog.Nop())
	if err != nil {
		return err
	}
	client, _ := t.CAS(ctx)
	counted := &countingCAS{Client: client}
	sess := upload.NewSession(upload.Config{CAS: counted, Policy: xorb.PolicyAuto, Concurrency: 1, TempDir: dir, Log: o.Log})
	defer sess.Close()
	src.spool = filepath.Join(dir, "objects")
	if err := os.MkdirAll(src.spool, 0o755); err != nil {
		return err
	}
	err = eachVerified(ctx, inv.Objects, src, rep, func(obj *Object) error {
		res, err := uploadOne(ctx, sess, src.path(obj.Oid), obj)
		if err != nil {
			return err
		}
		rep.add(obj, res)
		if src.path(obj.Oid) != src.localPath(obj.Oid) { // a fetched copy in the spool
			os.Remove(src.path(obj.Oid))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := sess.Finish(ctx); err != nil {
		return err
	}
	rep.StoredXorbs, rep.StoredShards = counted.xorbs.Load(), counted.shards.Load()
	return nil
}
