package client

import (
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
)

// A download from the store on this machine fetches one range at a time (no latency to hide; a
// second range costs CPU and the core git-lfs re-hashes on); one across a network keeps its
// tuned count; a concurrency the user set wins in both.
func TestDownloadConcurrency(t *testing.T) {
	local := &endpoint{local: embedded.New(nil, "")}
	remote := &endpoint{}
	x := &Client{tune: Tune(2, 8, 0)}
	if got := x.downloadConcurrency(local); got != 1 {
		t.Errorf("embedded store: %d ranges at once, want 1", got)
	}
	if got, want := x.downloadConcurrency(remote), x.tune.Download; got != want || want < 2 {
		t.Errorf("network CAS: %d ranges at once, want the tuned %d (at least 2)", got, want)
	}
	x = &Client{o: Options{Concurrency: 6}, tune: Tune(2, 8, 6)}
	for _, e := range []*endpoint{local, remote} {
		if got := x.downloadConcurrency(e); got != 6 {
			t.Errorf("GIT_XET_CONCURRENCY=6: %d ranges at once (embedded %v)", got, e.local != nil)
		}
	}
}
