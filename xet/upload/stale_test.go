package upload_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// A cache that promises xorbs a new CAS does not hold (the remote was recreated) makes Finish
// fail with a *StaleError naming them, and the cache is told to forget them; a session without
// the cache then uploads the file.
func TestStaleCache(t *testing.T) {
	ctx := context.Background()
	cache := newFakeCache()
	data := testutil.RandomBytes(3<<20, 31)
	run := func(c upload.Config) error {
		s := upload.NewSession(c)
		defer s.Close()
		if _, err := s.Upload(ctx, bytes.NewReader(data), nil, nil); err != nil {
			return err
		}
		return s.Finish(ctx)
	}
	if err := run(upload.Config{CAS: embeddedtest.New(t), Cache: cache}); err != nil {
		t.Fatal(err)
	}
	fresh := embeddedtest.New(t)
	err := run(upload.Config{CAS: fresh, Cache: cache})
	var stale *upload.StaleError
	if !errors.As(err, &stale) || len(stale.Missing) != 1 {
		t.Fatalf("want a StaleError naming the one xorb, got %v", err)
	}
	if len(cache.forgot) != 1 || cache.forgot[0] != stale.Missing[0] {
		t.Fatalf("the cache was told to forget %v", cache.forgot)
	}
	if err := run(upload.Config{CAS: fresh, Cache: cache}); err != nil {
		t.Fatalf("after Forget: %v", err)
	}
}

// losesXorbs is a CAS that acknowledges xorbs without storing them while lose is set: what a
// client sees when the CAS's gc removed its xorbs before its shard came.
type losesXorbs struct {
	cas.Client
	lose bool
}

func (c *losesXorbs) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	if c.lose {
		return true, nil
	}
	return c.Client.PutXorb(ctx, x)
}

// A shard naming a xorb the session sent itself but the CAS no longer holds fails with a
// *StaleError naming it (not a plain refusal that retrying the shard cannot fix), and a new
// session sends it again.
func TestStaleOwnXorb(t *testing.T) {
	ctx := context.Background()
	c := &losesXorbs{Client: embeddedtest.New(t), lose: true}
	data := testutil.RandomBytes(3<<20, 32)
	run := func() error {
		s := upload.NewSession(upload.Config{CAS: c})
		defer s.Close()
		if _, err := s.Upload(ctx, bytes.NewReader(data), nil, nil); err != nil {
			return err
		}
		return s.Finish(ctx)
	}
	var stale *upload.StaleError
	if err := run(); !errors.As(err, &stale) || len(stale.Missing) != 1 {
		t.Fatalf("want a StaleError naming the lost xorb, got %v", err)
	}
	c.lose = false
	if err := run(); err != nil {
		t.Fatalf("the upload again: %v", err)
	}
}
