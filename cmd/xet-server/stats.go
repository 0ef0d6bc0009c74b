package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// runStats prints what a store holds (store.Maint.Stats) as a table or JSON: exit 0, 1 on an error, 2
// on bad usage.
func runStats(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("xet-server stats", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var f serveFlags
	asJSON := fl.Bool("json", false, "print JSON instead of a table")
	fl.StringVar(&f.storage, "storage", "", "the CAS's storage, as serve's --storage (s3://BUCKET[/PREFIX] or a directory); default DATA-DIR/cas")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: xet-server stats [--json] (DATA-DIR | --storage URL)")
		fl.PrintDefaults()
	}
	if code := parseStoreArgs(fl, args, &f, "stats", stderr); code != 0 {
		return code
	}
	st, _, err := openStorage(&f, zerolog.New(stderr).Level(zerolog.WarnLevel))
	if err != nil {
		fmt.Fprintln(stderr, "xet-server stats:", err)
		return 1
	}
	defer st.Close()
	s, err := store.NewMaint(st).Stats(context.Background())
	if err != nil {
		fmt.Fprintln(stderr, "xet-server stats:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(statsJSON(s)); err != nil {
			fmt.Fprintln(stderr, "xet-server stats:", err)
			return 1
		}
		return 0
	}
	printStats(stdout, s)
	return 0
}

type usageJSON struct {
	store.Usage
	Ratio float64 `json:"dedupe_ratio"`
}

type statsOut struct {
	Format    int                  `json:"format"`
	Total     usageJSON            `json:"total"`
	Xorbs     int                  `json:"xorbs"`
	XorbBytes int64                `json:"xorb_bytes"`
	Repos     map[string]usageJSON `json:"repositories"`
}

func statsJSON(s *store.Stats) statsOut {
	o := statsOut{Format: s.Format, Total: usageJSON{s.Usage, s.Ratio()}, Xorbs: s.Xorbs, XorbBytes: s.XorbBytes,
		Repos: map[string]usageJSON{}}
	for name, u := range s.Repos {
		o.Repos[name] = usageJSON{u, u.Ratio()}
	}
	return o
}

// printStats writes the table: the store's totals, then one row per repository.
func printStats(w io.Writer, s *store.Stats) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "REPOSITORY\tFILES\tLOGICAL\tSTORED\tDEDUPE\t\n")
	names := make([]string, 0, len(s.Repos))
	for n := range s.Repos {
		names = append(names, n)
	}
	sort.Strings(names)
	row := func(name string, u store.Usage) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2fx\t\n", name, u.Files, humanBytes(int64(u.Logical)), humanBytes(int64(u.Stored)), u.Ratio())
	}
	for _, n := range names {
		row(n, s.Repos[n])
	}
	row("(all)", s.Usage)
	tw.Flush()
	fmt.Fprintf(w, "store format %d; %d xorbs, %s on storage\n", s.Format, s.Xorbs, humanBytes(s.XorbBytes))
}

// humanBytes is n in B, KiB, MiB, GiB or TiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}
