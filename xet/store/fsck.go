package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Problem is one inconsistency Check found: the entry and what is wrong with it.
type Problem struct {
	Entry string
	What  string
}

// CheckReport is what Check saw.
type CheckReport struct {
	Xorbs, Files, Mappings, Dedupe int
	Temp                           int // files under tmp/ (an interrupted writer's; CleanTemp removes old ones)
	Problems                       []Problem
}

// Check walks every entry of the store and reports what does not hold together:
//   - a xorb whose footer does not parse or does not match its name;
//   - a file record that does not parse, or names a missing xorb or chunks past a xorb's end;
//   - a SHA-256 mapping that does not parse, names a missing file record, disagrees with its size,
//     or (verified mappings) with the SHA-256 the file record holds;
//   - a dedupe entry naming a missing xorb;
//   - any other file under those directories outside tmp/ (a half-written or foreign file).
//
// It reads every footer and record, not the chunk data. The error is for failing to read the store
// at all.
func (m *Maint) Check(ctx context.Context) (*CheckReport, error) {
	r := &CheckReport{}
	if c, ok := m.s.raw.(blob.Checker); ok {
		bad, temp, err := c.Check(ctx)
		if err != nil {
			return nil, err
		}
		for name, what := range bad {
			r.add(name, what)
		}
		r.Temp = temp
	}
	var names []string
	for _, prefix := range []string{"xorbs/", "files/", "ns/", "dedupe/", "verified/", "users/"} {
		n, err := m.s.be.List(ctx, prefix)
		if err != nil {
			return nil, err
		}
		names = append(names, n...)
	}
	e := m.checkEntries(ctx, r, names)
	recs := map[hash.Hash]*fileRecord{}
	for _, name := range e.files {
		r.Files++
		if rec := m.checkFile(ctx, r, name, e.xorbs); rec != nil {
			_, h, _ := classify(name)
			recs[h] = rec
		}
	}
	for _, name := range e.mappings {
		r.Mappings++
		m.checkMapping(ctx, r, name, recs)
	}
	for _, name := range e.members {
		if _, h, _ := classify(name); recs[h] == nil {
			r.add(name, "names file "+h.String()+", whose record is missing or unreadable")
		}
	}
	m.checkDedupe(ctx, r, e.dedupes, e.xorbs)
	return r, nil
}

// checkedEntries are the store's entries by kind, for the checks that need all xorbs, or all file
// records, read first.
type checkedEntries struct {
	xorbs                             map[hash.Hash]int // chunk counts of the xorbs whose footer parsed
	files, mappings, dedupes, members []string
}

// checkEntries sorts names by kind, and checks on the way what stands on its own: a name outside
// the layout, a xorb's footer, a history or upload record.
func (m *Maint) checkEntries(ctx context.Context, r *CheckReport, names []string) *checkedEntries {
	e := &checkedEntries{xorbs: map[hash.Hash]int{}}
	for _, name := range names {
		kind, h, ok := classify(name)
		switch {
		case !ok:
			r.add(name, "not an entry of the store layout (a half-written or foreign file)")
		case kind == "xorbs":
			r.Xorbs++
			xm, err := m.s.xorbMeta(ctx, h)
			if err != nil {
				r.add(name, "xorb footer: "+err.Error())
				continue
			}
			e.xorbs[h] = xm.n()
		case kind == "files":
			e.files = append(e.files, name)
		case kind == "sha256" || kind == "sha256v":
			e.mappings = append(e.mappings, name)
		case kind == "dedupe":
			e.dedupes = append(e.dedupes, name)
		case kind == "member" || kind == "verified":
			e.members = append(e.members, name) // grants of xorbs ("shown", "user-up") name xorbs gc may remove
		case kind == "history":
			m.checkHistory(ctx, r, name)
			e.members = append(e.members, name)
		case kind == "upload": // its xorb may be gone: gc removes xorbs no file names
			if b, err := m.s.readEntry(ctx, name); err != nil {
				r.add(name, err.Error())
			} else if _, err := parseUpload(name, b); err != nil {
				r.add(name, err.Error())
			}
		}
	}
	return e
}

// checkDedupe checks that each dedupe entry parses and names a xorb whose footer parsed.
func (m *Maint) checkDedupe(ctx context.Context, r *CheckReport, dedupes []string, xorbs map[hash.Hash]int) {
	for _, name := range dedupes {
		r.Dedupe++
		b, err := m.s.readEntry(ctx, name)
		if err != nil {
			r.add(name, err.Error())
			continue
		}
		x, err := parseDedupe(name, b)
		if err != nil {
			r.add(name, err.Error())
		} else if _, ok := xorbs[x]; !ok {
			r.add(name, "names xorb "+x.String()+", which is missing or unreadable")
		}
	}
}

func (r *CheckReport) add(entry, what string) { r.Problems = append(r.Problems, Problem{entry, what}) }

func (m *Maint) checkFile(ctx context.Context, r *CheckReport, name string, xorbs map[hash.Hash]int) *fileRecord {
	b, err := m.s.readEntry(ctx, name)
	if err != nil {
		r.add(name, err.Error())
		return nil
	}
	rec, err := parseFileRecord(name, b)
	if err != nil {
		r.add(name, err.Error())
		return nil
	}
	for i, t := range rec.Terms {
		n, ok := xorbs[t.Xorb]
		switch {
		case !ok:
			r.add(name, fmt.Sprintf("term %d names xorb %s, which is missing or unreadable", i, t.Xorb))
		case int(t.End) > n:
			r.add(name, fmt.Sprintf("term %d names chunks [%d,%d) of xorb %s, which has %d", i, t.Start, t.End, t.Xorb, n))
		}
	}
	return rec
}

func (m *Maint) checkMapping(ctx context.Context, r *CheckReport, name string, recs map[hash.Hash]*fileRecord) {
	b, err := m.s.readEntry(ctx, name)
	if err != nil {
		r.add(name, err.Error())
		return
	}
	file, size, err := parseSHA(name, b)
	if err != nil {
		r.add(name, err.Error())
		return
	}
	rec, ok := recs[file]
	switch {
	case !ok:
		r.add(name, "names file "+file.String()+", whose record is missing or unreadable")
	case rec.Size != size:
		r.add(name, fmt.Sprintf("says %d bytes, the file record %d", size, rec.Size))
	case strings.Contains(name, "/sha256v/") && !rec.SHA256.IsZero() && shaHex(rec.SHA256) != path.Base(name):
		r.add(name, "a verified mapping to file "+file.String()+", whose SHA-256 is "+shaHex(rec.SHA256))
	}
}

func shaHex(h hash.Hash) string {
	d := h.SHA256()
	return hex.EncodeToString(d[:])
}

// classify reads an entry name of the layout: its kind and hash (the SHA-256 for mappings).
func classify(name string) (kind string, h hash.Hash, ok bool) {
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 3 && (parts[0] == "xorbs" || parts[0] == "files" || parts[0] == "dedupe" || parts[0] == "verified"):
		h, err := hash.Parse(parts[2])
		if err != nil || !strings.HasPrefix(parts[2], parts[1]) || len(parts[1]) != 2 {
			return parts[0], h, false
		}
		return parts[0], h, true
	case len(parts) == 4 && parts[0] == "ns" && (parts[2] == "sha256" || parts[2] == "sha256v"):
		d, err := hex.DecodeString(parts[3])
		if err != nil || len(d) != 32 {
			return parts[2], h, false
		}
		return parts[2], hash.FromSHA256([32]byte(d)), true
	case len(parts) == 4 && parts[0] == "ns" && parts[2] == historyDir:
		h, ok := historyFile(parts[3])
		return "history", h, ok
	case len(parts) == 4 && (parts[0] == "ns" && (parts[2] == "files" || parts[2] == "up" || parts[2] == "shown") ||
		parts[0] == "users" && parts[2] == "up"):
		h, err := hash.Parse(parts[3])
		kind = map[string]string{"files": "member", "up": "upload", "shown": "shown"}[parts[2]]
		if parts[0] == "users" {
			kind = "user-up"
		}
		return kind, h, err == nil
	}
	return "", h, false
}

// String is the report for people: one line of counts, then one line per problem.
func (r *CheckReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d xorbs, %d file records, %d SHA-256 mappings, %d dedupe entries, %d temp files: ",
		r.Xorbs, r.Files, r.Mappings, r.Dedupe, r.Temp)
	if len(r.Problems) == 0 {
		b.WriteString("no problems\n")
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  %s: %s\n", p.Entry, p.What)
	}
	return b.String()
}

// FsckOptions: what Fsck does besides Check.
type FsckOptions struct {
	CleanTemp  bool // remove temp files older than an hour that killed writers left
	VerifyData bool // read every xorb whole and check its chunks (VerifyXorb), not only footers
	Repair     bool // with VerifyData: move damaged xorbs aside (quarantine/), so that pushing the files that use them stores them again
}

// Fsck checks the store at dir (Check, and what opts asks for). ok is false when problems were
// found. Run Repair with the server stopped (a running one keeps the footers it read in memory).
func Fsck(ctx context.Context, dir string, opts FsckOptions) (report string, ok bool, err error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", false, fmt.Errorf("no Xet store at %s", dir)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		return "", false, err
	}
	defer s.Close()
	return NewMaint(s).Fsck(ctx, dir, opts)
}

// Fsck is the package's Fsck on an open store (any backend); label names it in the report.
func (m *Maint) Fsck(ctx context.Context, label string, opts FsckOptions) (report string, ok bool, err error) {
	var b strings.Builder
	if opts.CleanTemp {
		n, err := m.s.be.CleanTemp(ctx, time.Hour)
		if err != nil {
			return "", false, err
		}
		fmt.Fprintf(&b, "removed %d temp files older than an hour\n", n)
	}
	r, err := m.Check(ctx)
	if err != nil {
		return "", false, err
	}
	if opts.VerifyData {
		if err := m.verifyData(ctx, r, opts.Repair); err != nil {
			return "", false, err
		}
	}
	b.WriteString(label + ": " + r.String())
	return b.String(), len(r.Problems) == 0, nil
}

// verifyData checks every stored xorb whole (VerifyXorb) and reports the damaged ones; with repair
// it moves them aside.
func (m *Maint) verifyData(ctx context.Context, r *CheckReport, repair bool) error {
	names, err := m.s.be.List(ctx, "xorbs/")
	if err != nil {
		return err
	}
	for _, name := range names {
		kind, h, ok := classify(name)
		if !ok || kind != "xorbs" {
			continue
		}
		verr := m.VerifyXorb(ctx, h)
		if verr == nil {
			continue
		}
		what := "data: " + verr.Error()
		if !errors.Is(verr, ErrDamaged) {
			r.add(name, "not read (not moved aside): "+verr.Error())
			continue
		}
		if repair {
			if qerr := m.s.be.Quarantine(ctx, name); qerr != nil {
				what += "; not moved aside: " + qerr.Error()
			} else {
				m.s.meta.drop(h)
				what += "; moved aside to quarantine/: push the files that use it again to store it again"
			}
		}
		r.add(name, what)
	}
	return nil
}
