package client

// Tuning is how much one agent process does at once. git-lfs runs lfs.concurrenttransfers agent
// processes side by side (8 by default), each transferring one object at a time; the machine's
// cores are shared between them, so each process takes its share instead of all of them.
type Tuning struct {
	Procs    int // GOMAXPROCS of this process
	Upload   int // xorb uploads in flight per session
	Download int // ranges fetched in flight per download
}

// Tune returns the share of one of concurrentTransfers processes on a machine with numCPU cores:
// GOMAXPROCS = ceil(2*numCPU/concurrentTransfers) (at least 1, at most numCPU), xorb uploads in
// flight = max(1, 2*numCPU/concurrentTransfers), ranges in flight = max(2, 4*numCPU/concurrentTransfers).
// A positive concurrency (Options.Concurrency) overrides the in-flight counts.
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
	if concurrency > 0 {
		t.Upload, t.Download = concurrency, concurrency
	}
	return t
}
