package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// runFsck checks the store of a data directory: exit 0 when consistent, 1 when problems were
// found (listed), 2 on bad usage.
func runFsck(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("xet-server fsck", flag.ContinueOnError)
	fl.SetOutput(stderr)
	clean := fl.Bool("clean-temp", false, "also remove temp files older than an hour (left by writers that were killed)")
	fl.Usage = func() { fmt.Fprintln(stderr, "usage: xet-server fsck [--clean-temp] DATA-DIR") }
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 {
		fl.Usage()
		return 2
	}
	report, ok, err := store.Fsck(context.Background(), filepath.Join(fl.Arg(0), "cas"), *clean)
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
