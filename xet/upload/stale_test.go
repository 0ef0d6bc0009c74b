package upload_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
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
