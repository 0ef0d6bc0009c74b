package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/xetlog"
	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
)

type logFlags struct {
	json   bool
	remote string
	jobs   int
	revs   []string
	paths  []string
}

// runLog prints, for each commit of a history and each LFS path it changed, the bytes the previous
// version already stored and the new ones, from the remote's reconstruction plans. Exit 0, or 1
// when git fails or some plan could not be had (those records say why), 2 for bad arguments.
func runLog(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, ok := parseLogFlags(args, stderr)
	if !ok {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g := client.Git{}
	env := readEnvironment(os.Getenv, os.Environ())
	cfg := agentConfig(ctx, g, env)
	log, closeLog := agentLogger(cfg, stderr)
	defer closeLog()
	defer stopLeftPrograms(log)
	o := env.clientOptions()
	o.Log, o.Git = log, g
	o.StoreDir = func() string { return cfg("GIT_XET_STORE", "xet.store") }
	plans, err := client.NewPlans(ctx, o, f.remote)
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer log: %s\n", shown(err))
		return 1
	}
	defer plans.Close()
	recs, err := xetlog.Run(ctx, xetlog.Options{Git: g, Revs: f.revs, Paths: f.paths, Source: plans, Jobs: f.jobs})
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer log: %s\n", shown(err))
		return 1
	}
	if f.json {
		err = writeLogJSON(stdout, recs)
	} else {
		err = writeLogTable(stdout, recs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer log: %v\n", err)
		return 1
	}
	for _, r := range recs {
		if r.State == "error" {
			fmt.Fprintf(stderr, "git-xet-transfer log: %s at %.12s: %s\n", oneLine(r.Path), r.Commit, oneLine(r.Error))
			return 1
		}
	}
	return 0
}

// parseLogFlags reads [flags] [REV…] [-- PATH…]; flags may come between revisions.
func parseLogFlags(args []string, stderr io.Writer) (logFlags, bool) {
	var f logFlags
	if i := indexOf(args, "--"); i >= 0 {
		args, f.paths = args[:i], args[i+1:]
	}
	fs := flag.NewFlagSet("git-xet-transfer log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&f.json, "json", false, "print one JSON array of records with exact byte counts instead of the table")
	fs.StringVar(&f.remote, "remote", "origin", "the remote whose CAS plans the files (as a download from it would reach it)")
	fs.IntVar(&f.jobs, "jobs", xetlog.DefaultJobs, "plan requests in flight")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: git-xet-transfer log [--json] [--remote NAME] [--jobs N] [REV-RANGE…] [-- PATH…]")
		fs.PrintDefaults()
	}
	for {
		if err := fs.Parse(args); err != nil {
			return f, false
		}
		if fs.NArg() == 0 {
			break
		}
		f.revs = append(f.revs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if f.jobs < 1 || f.jobs > 256 {
		fmt.Fprintf(stderr, "git-xet-transfer log: --jobs %d: want 1 to 256\n", f.jobs)
		return f, false
	}
	return f, true
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

func writeLogJSON(w io.Writer, recs []xetlog.Record) error {
	if recs == nil {
		recs = []xetlog.Record{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}

// writeLogTable prints the records as aligned columns with human sizes; a note says what a row's
// numbers are not (estimated, a path new here, a renamed one, an object not in Xet).
func writeLogTable(w io.Writer, recs []xetlog.Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMIT\tPATH\tSIZE\tSHARED\tNEW\tSAVED\tNOTE")
	for _, r := range recs {
		shared, nw, saved := "-", "-", "-"
		if r.State == "xet" {
			shared, nw, saved = humanBytes(*r.Shared), humanBytes(*r.New), fmt.Sprintf("%.1f %%", 100**r.Saved)
		}
		fmt.Fprintf(tw, "%.10s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Commit, oneLine(r.Path), humanBytes(r.Size), shared, nw, saved, logNote(r))
	}
	return tw.Flush()
}

// logNote says what a row's numbers are not.
func logNote(r xetlog.Record) string {
	var notes []string
	switch r.State {
	case "missing":
		notes = append(notes, "not on the remote (not pushed?)")
	case "lfs":
		notes = append(notes, "a plain LFS object, not in Xet")
	case "error":
		notes = append(notes, "error: "+oneLine(r.Error))
	}
	switch {
	case r.PrevOid == "":
		notes = append(notes, "new path")
	case r.PrevByContent:
		notes = append(notes, "from "+oneLine(r.PrevPath)+" (deleted here; by shared chunks)")
	case r.PrevPath != r.Path:
		notes = append(notes, "from "+oneLine(r.PrevPath))
	}
	if r.State == "xet" && r.PrevState != "" && r.PrevState != "xet" {
		notes = append(notes, "previous version "+map[string]string{"missing": "not on the remote", "lfs": "not in Xet", "error": "not planned"}[r.PrevState])
	}
	if r.State == "xet" && !r.Exact {
		notes = append(notes, "estimated")
	}
	return strings.Join(notes, "; ")
}

// oneLine keeps a path or message on its row, with no terminal escape: paths come from the
// repository, messages from its remote's server (redact.Printable quotes the text as git quotes
// such paths; it leaves a tab, which would break the columns).
func oneLine(s string) string {
	return strings.ReplaceAll(redact.Printable(s), "\t", `\t`)
}
