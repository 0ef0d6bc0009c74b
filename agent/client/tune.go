package client

import (
	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
)

// Tuning is how much one agent process does at once. git-lfs runs lfs.concurrenttransfers agent
// processes side by side (8 by default), each transferring one object at a time; the machine's
// cores are shared between them, so each process takes its share instead of all of them.
//
// Against the embedded store the in-flight counts are fixed (Upload, Download). Over the network
// they adapt to the link (xet/concurrency), one controller per endpoint and direction: they start
// modest (the fixed count brought within [AdaptDownloadStart, 2·AdaptDownloadStart], uploads
// likewise) and grow while throughput grows, up to UploadMax and DownloadMax.
type Tuning struct {
	Procs       int // GOMAXPROCS of this process
	Upload      int // xorb uploads in flight per session (the embedded store)
	Download    int // ranges fetched in flight per download (the embedded store)
	UploadMax   int // ceiling of xorb uploads in flight to a network endpoint
	DownloadMax int // ceiling of ranges in flight from a network endpoint
}

// Floors of the first adaptive limits, and the default ceilings. A range in flight holds 1.5 MiB
// of buffers; a xorb upload holds its body, up to 64 MiB when its chunks compress (incompressible
// chunks are sent from the file), so uploads have the lower ceiling.
const (
	AdaptDownloadStart = 4
	AdaptUploadStart   = 2
	DefaultDownloadMax = 32
	DefaultUploadMax   = 4
)

// Tune returns the share of one of concurrentTransfers processes on a machine with numCPU cores:
// GOMAXPROCS = ceil(2*numCPU/concurrentTransfers) (at least 1, at most numCPU), xorb uploads in
// flight = max(1, 2*numCPU/concurrentTransfers), ranges in flight = max(2, 4*numCPU/concurrentTransfers),
// network ceilings DefaultUploadMax and DefaultDownloadMax (or the fixed counts when higher).
// A positive concurrency (Options.Concurrency, GIT_XET_CONCURRENCY) sets every in-flight count
// and ceiling.
func Tune(numCPU, concurrentTransfers, concurrency int) Tuning {
	if numCPU < 1 {
		numCPU = 1
	}
	n := concurrentTransfers
	if n < 1 {
		n = 1
	}
	t := Tuning{
		Procs:    min(numCPU, max(1, (2*numCPU+n-1)/n)),
		Upload:   max(1, 2*numCPU/n),
		Download: max(2, 4*numCPU/n),
	}
	t.UploadMax, t.DownloadMax = max(t.Upload, DefaultUploadMax), max(t.Download, DefaultDownloadMax)
	if concurrency > 0 {
		t.Upload, t.Download, t.UploadMax, t.DownloadMax = concurrency, concurrency, concurrency, concurrency
	}
	return t
}

// adaptive returns the controllers of a network endpoint's uploads and downloads.
func (t Tuning) adaptive() (up, down *concurrency.Controller) {
	up = concurrency.New(concurrency.Config{Start: min(max(t.Upload, AdaptUploadStart), 2*AdaptUploadStart), Max: t.UploadMax})
	down = concurrency.New(concurrency.Config{Start: min(max(t.Download, AdaptDownloadStart), 2*AdaptDownloadStart), Max: t.DownloadMax})
	return up, down
}

// logAdapt logs where an endpoint's controller stands after a transfer (c nil: fixed counts).
func logAdapt(log zerolog.Logger, msg string, c *concurrency.Controller) {
	if c == nil {
		return
	}
	st := c.Stats()
	log.Debug().Int("limit", c.Limit()).Int("max", c.Max()).Int("low", st.Low).Int("peak", st.Peak).Int("grown", st.Grown).
		Int("throttled", st.Throttled).Int("failed", st.Failed).Int("slow", st.Slow).Msg(msg)
}
