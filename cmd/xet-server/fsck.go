package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// runFsck checks the store of a data directory: exit 0 when consistent, 1 when problems were
// found (listed), 2 on bad usage.
func runFsck(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("xet-server fsck", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o store.FsckOptions
	var f serveFlags
	fl.StringVar(&f.storage, "storage", "", "check this storage (as serve's --storage, e.g. s3://BUCKET/PREFIX) instead of DATA-DIR/cas")
	fl.BoolVar(&o.CleanTemp, "clean-temp", false, "also remove temp files older than an hour (left by writers that were killed)")
	fl.BoolVar(&o.VerifyData, "verify-data", false, "read every xorb whole and check its chunks, not only its footer")
	fl.BoolVar(&o.Repair, "repair", false, "with --verify-data: move damaged xorbs aside (run with the server stopped); pushing the files that use them stores them again")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: xet-server fsck [--clean-temp] [--verify-data [--repair]] (DATA-DIR | --storage URL)")
	}
	if err := fl.Parse(args); err != nil || !storeArg(fl, &f) {
		fl.Usage()
		return 2
	}
	var report string
	var ok bool
	var err error
	if f.storage == "" {
		report, ok, err = store.Fsck(context.Background(), filepath.Join(f.data, "cas"), o)
	} else {
		var st *store.Store
		if st, _, err = openStorage(&f, zerolog.New(stderr).Level(zerolog.WarnLevel)); err == nil {
			defer st.Close()
			report, ok, err = store.NewMaint(st).Fsck(context.Background(), f.storage, o)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "xet-server fsck:", err)
		return 1
	}
	fmt.Fprint(stdout, report)
	if !ok {
		return 1
	}
	return 0
}
