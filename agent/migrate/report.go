package migrate

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// Report is what a migration did (or, with DryRun, would do).
type Report struct {
	Commits      int
	Objects      int   // distinct LFS objects found
	Logical      int64 // their bytes
	AlreadyThere int   // objects the target held before this run
	Uploaded     int
	UploadedSize int64 // logical bytes of the uploaded objects
	NewBytes     int64 // chunk bytes the target did not have (before compression)
	StoredXorbs  int64 // bytes of xorbs stored (compressed)
	StoredShards int64
	// ResentSkipped is the bytes of xorbs an earlier, interrupted run had stored (not sent again).
	ResentSkipped int64
	Verified      int // objects reconstructed and checked against their SHA-256
	Failed        []Failure
	ByPath        map[string]*PathStat
	DryRun        bool
	NotLocal      int // dry run: objects found nowhere (also in Failed)
	WalkTime      time.Duration
	Time          time.Duration

	files map[string]hash.Hash // oid → Xet file hash, of objects uploaded this run
}

// PathStat is the bytes of one path's versions.
type PathStat struct {
	Versions int
	Logical  int64
	New      int64
}

// Failure is an object that could not be migrated.
type Failure struct {
	Object *Object
	Err    error
}

func newReport(inv *Inventory) *Report {
	return &Report{Commits: inv.Commits, Objects: len(inv.Objects), Logical: inv.Logical,
		ByPath: map[string]*PathStat{}, files: map[string]hash.Hash{}}
}

func (r *Report) add(o *Object, res *upload.FileResult) {
	r.Uploaded++
	r.UploadedSize += o.Size
	r.NewBytes += res.NewBytes
	r.files[o.Oid] = res.FileHash
	p := r.ByPath[o.Path]
	if p == nil {
		p = &PathStat{}
		r.ByPath[o.Path] = p
	}
	p.Versions++
	p.Logical += o.Size
	p.New += res.NewBytes
}

func (r *Report) fail(o *Object, err error) { r.Failed = append(r.Failed, Failure{o, err}) }

// Partial reports whether some objects could not be migrated.
func (r *Report) Partial() bool { return len(r.Failed) > 0 }

// Stored is the bytes the target stored for this run.
func (r *Report) Stored() int64 { return r.StoredXorbs + r.StoredShards }

// maxFailuresShown bounds the FAILED lines of a report.
const maxFailuresShown = 50

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	verb := "migrated"
	if r.DryRun {
		verb = "would migrate (dry run: local objects chunked and compressed into a throwaway store; nothing was changed)"
	}
	fmt.Fprintf(w, "walked %d commits in %s: %d LFS objects, %s\n", r.Commits, r.WalkTime.Round(time.Millisecond), r.Objects, human(r.Logical))
	fmt.Fprintf(w, "%s: %d objects (%s); %d were already on the target\n", verb, r.Uploaded, human(r.UploadedSize), r.AlreadyThere)
	if r.UploadedSize > 0 {
		fmt.Fprintf(w, "stored on the target: %s (%d bytes: %s xorbs + %s shards) = %.1f %% of the logical bytes; new chunk data %s (dedupe ratio %.2fx)\n",
			human(r.Stored()), r.Stored(), human(r.StoredXorbs), human(r.StoredShards), 100*float64(r.Stored())/float64(r.UploadedSize),
			human(r.NewBytes), float64(r.UploadedSize)/float64(max(1, r.NewBytes)))
	}
	if r.ResentSkipped > 0 {
		fmt.Fprintf(w, "resumed: %s of xorbs stored by an interrupted run were not sent again\n", human(r.ResentSkipped))
	}
	if r.NotLocal > 0 {
		fmt.Fprintf(w, "estimate: %d objects could be found neither locally nor on the old LFS server (listed below); they are not in the figures\n", r.NotLocal)
	}
	r.printPaths(w)
	if r.Verified > 0 {
		fmt.Fprintf(w, "verified: %d objects reconstructed from the target with the right SHA-256\n", r.Verified)
	}
	for i, f := range r.Failed {
		if i == maxFailuresShown {
			fmt.Fprintf(w, "... and %d more objects that could not be migrated\n", len(r.Failed)-i)
			break
		}
		fmt.Fprintf(w, "FAILED %s (path %s, commit %s): %s\n", f.Object.Oid, f.Object.Path, short(f.Object.Commit), redact.Printable(redact.Text(f.Err.Error())))
	}
	fmt.Fprintf(w, "took %s\n", r.Time.Round(time.Millisecond))
}

// printPaths lists the paths whose versions saved the most.
func (r *Report) printPaths(w io.Writer) {
	type row struct {
		path string
		s    *PathStat
	}
	var rows []row
	for p, s := range r.ByPath {
		if s.Logical > s.New {
			rows = append(rows, row{p, s})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].s.Logical-rows[i].s.New > rows[j].s.Logical-rows[j].s.New
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "largest savings by path:")
	for _, x := range rows[:min(10, len(rows))] {
		fmt.Fprintf(w, "  %-40s %3d versions, %10s logical, %10s new (saved %s)\n", x.path, x.s.Versions, human(x.s.Logical), human(x.s.New), human(x.s.Logical-x.s.New))
	}
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	if c == "" {
		return "(none)"
	}
	return c
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
