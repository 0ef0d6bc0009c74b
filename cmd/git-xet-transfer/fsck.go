package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// runFsck checks an embedded Xet store: --store DIR, else the store of the remote (a local one).
func runFsck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("git-xet-transfer fsck", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("store", "", "the store directory (default: <remote git dir>/xet of --remote)")
	remote := fl.String("remote", "origin", "the local remote whose embedded store is checked")
	var o store.FsckOptions
	fl.BoolVar(&o.CleanTemp, "clean-temp", false, "also remove temp files older than an hour (left by killed writers)")
	fl.BoolVar(&o.VerifyData, "verify-data", false, "read every xorb whole and check its chunks, not only its footer")
	fl.BoolVar(&o.Repair, "repair", false, "with --verify-data: move damaged xorbs aside; pushing the files that use them stores them again")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 { // the store is --store DIR: a bare path would otherwise be ignored
		fmt.Fprintf(stderr, "git-xet-transfer fsck: unexpected argument %q (the store is --store DIR)\n", fl.Arg(0))
		return 2
	}
	if o.Repair && !o.VerifyData { // only a whole read finds a damaged xorb to move aside
		fmt.Fprintln(stderr, "git-xet-transfer fsck: --repair needs --verify-data")
		return 2
	}
	ctx := context.Background()
	if *dir == "" {
		r, err := client.ResolveLocalRemote(ctx, client.Git{}, "upload", *remote)
		if err != nil {
			fmt.Fprintf(stderr, "git-xet-transfer fsck: %v\n", err)
			return 1
		}
		*dir = r.StoreDir()
	}
	report, ok, err := store.Fsck(ctx, *dir, o)
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer fsck: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, report)
	if !ok {
		return 1
	}
	return 0
}
