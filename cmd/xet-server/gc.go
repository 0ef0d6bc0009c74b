package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// runGC collects the xorbs no file record names (store.Maint.Collect): exit 0 when done, 1 on an
// error, 2 on bad usage. It is safe while servers run on the same storage.
func runGC(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("xet-server gc", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var f serveFlags
	var o store.GCOptions
	fl.StringVar(&f.storage, "storage", "", "the CAS's storage, as serve's --storage (s3://BUCKET[/PREFIX] or a directory); default DATA-DIR/cas")
	fl.DurationVar(&o.Grace, "grace", store.DefaultGrace, fmt.Sprintf("keep unreferenced xorbs younger than this (uploads whose shard is still to come), and trash this long before deleting; above %v", store.RegisterWithin))
	fl.BoolVar(&o.DryRun, "dry-run", false, "report what would be moved and deleted; change nothing")
	fl.BoolVar(&o.Unsafe, "unsafe-grace", false, "allow a grace period at or under the registration bound (tests only: a registration slower than the grace period could then name a deleted xorb)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: xet-server gc [--dry-run] [--grace DURATION] (DATA-DIR | --storage URL)")
		fl.PrintDefaults()
	}
	if code := parseStoreArgs(fl, args, &f, "gc", stderr); code != 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := zerolog.New(stderr).Level(zerolog.WarnLevel)
	st, _, err := openStorage(&f, log)
	if err != nil {
		fmt.Fprintln(stderr, "xet-server gc:", err)
		return 1
	}
	defer st.Close() // gc's pack of trashed blobs, with its zeros cut
	r, err := store.NewMaint(st).Collect(ctx, o)
	if r != nil {
		fmt.Fprintln(stdout, r)
	}
	if err != nil {
		fmt.Fprintln(stderr, "xet-server gc:", err)
		return 1
	}
	if !o.DryRun {
		n, err := cleanTemp(ctx, st)
		if err != nil {
			fmt.Fprintln(stderr, "xet-server gc:", err)
			return 1
		}
		fmt.Fprintf(stdout, "removed %d temp files or unfinished uploads older than an hour\n", n)
	}
	return 0
}

// parseStoreArgs parses a maintenance command's args with fl and finds the store they name (a data
// directory that exists, or --storage); a code other than 0 is the command's exit code, its reason
// said on stderr.
func parseStoreArgs(fl *flag.FlagSet, args []string, f *serveFlags, name string, stderr io.Writer) (code int) {
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if !storeArg(fl, f) {
		fl.Usage()
		return 2
	}
	if f.data != "" {
		if fi, err := os.Stat(f.data); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "xet-server %s: no data directory at %s\n", name, f.data)
			return 1
		}
	}
	// Opening a store on the filesystem makes one where there is none: a mistyped path would get an
	// empty store written into it and an empty report (gc --dry-run too, which changes nothing). As
	// fsck, a maintenance command asks for a store that is there.
	if dir := localStoreDir(f); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "xet-server %s: no Xet store at %s (a data directory holds it in cas/, once a server ran there)\n", name, dir)
			return 1
		}
	}
	return 0
}

// localStoreDir is the directory of the filesystem store f names (openStorage's), or "" for S3.
func localStoreDir(f *serveFlags) string {
	switch {
	case f.storage == "":
		return filepath.Join(f.data, "cas")
	case strings.HasPrefix(f.storage, "s3://"):
		return ""
	}
	return f.storage
}

// storeArg takes the store a maintenance command works on: a data directory as the one argument
// (f.data), or --storage (f.storage), not both. false: neither or both.
func storeArg(fl *flag.FlagSet, f *serveFlags) bool {
	switch {
	case fl.NArg() == 1 && f.storage == "":
		f.data = fl.Arg(0)
		return true
	case fl.NArg() == 0 && f.storage != "":
		return true
	}
	return false
}
