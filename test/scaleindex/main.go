// Command scaleindex is test/scale-server.sh's helper for row 5 of issue 44 (a large global index):
// it writes a store holding many global-dedupe entries and files through the store's own API, and
// measures what xet-server pays on it.
//
//	scaleindex fill DIR ENTRIES FILES SAMPLES   a store in DIR with FILES files and ENTRIES
//	                                            global-dedupe entries; a sample of the chunk and
//	                                            file hashes written goes to SAMPLES
//	scaleindex serve SERVER DATA SAMPLES N      starts SERVER (xet-server) on DATA (its store in
//	                                            DATA/cas), times it until its first answer, asks N
//	                                            global-dedupe queries and N reconstructions of the
//	                                            sampled hashes, one at a time, and stops it
//
// fill writes the way an in-process upload session does (store.PutShardWithXorbs: shards of 1000
// files, each shard's xorbs stored in the same batch as its entries, one fsync per shard), not by
// faking blobs: every entry is one the store's registration itself decided to write. A file is one
// term of 1 + m tiny chunks in one xorb: the store indexes a file's first chunk and every chunk whose
// hash % store.DedupeModulus == 0, so the m further chunks of each file are mined (about 1024
// hashes each) to make the store index exactly ENTRIES chunks. Mining is most of fill's CPU.
//
// serve prints one "name value" line per figure: start_s, query_p50_ms, query_p99_ms,
// miss_p50_ms, miss_p99_ms (chunks not indexed), recon_p50_ms, recon_p99_ms, health_p50_ms,
// health_p99_ms (GET /healthz, which reads nothing: the same run's baseline), server_peak_rss_mb.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "scaleindex:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 5 && args[0] == "fill":
		e, err1 := strconv.ParseInt(args[2], 10, 64)
		f, err2 := strconv.ParseInt(args[3], 10, 64)
		if err1 != nil || err2 != nil || f < 1 || e < f {
			return fmt.Errorf("fill: want ENTRIES ≥ FILES ≥ 1, got %q %q", args[2], args[3])
		}
		return fill(args[1], e, f, args[4])
	case len(args) == 5 && args[0] == "serve":
		n, err := strconv.Atoi(args[4])
		if err != nil || n < 1 {
			return fmt.Errorf("serve: %q is not a count of queries", args[4])
		}
		return serve(args[1], args[2], args[3], n)
	}
	return errors.New("usage: scaleindex {fill DIR ENTRIES FILES SAMPLES | serve SERVER DATA SAMPLES N}")
}
