package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Usage is what the files of a repository (or of the whole store) take.
//
// Logical is the sum of the files' sizes. Stored is the bytes of the distinct chunk ranges the
// files reference, uncompressed, counted once however many of the files name them: the bytes the
// files cost after dedupe. A chunk range that another repository's files also reference counts in
// full in each of them (a repository's usage does not shrink because another one holds the same
// data, and does not grow when another one stops holding it).
type Usage struct {
	Files   int    `json:"files"`
	Logical uint64 `json:"logical_bytes"`
	Stored  uint64 `json:"stored_bytes"`
}

// Ratio is Logical over Stored (1 when nothing is stored).
func (u Usage) Ratio() float64 {
	if u.Stored == 0 {
		return 1
	}
	return float64(u.Logical) / float64(u.Stored)
}

// termKey names one chunk range of a xorb.
type termKey struct {
	xorb       hash.Hash
	start, end uint32
}

// usageCounter adds files to a Usage, each chunk range once.
type usageCounter struct {
	u     Usage
	seen  map[hash.Hash]bool
	terms map[termKey]bool
}

func newUsageCounter() *usageCounter {
	return &usageCounter{seen: map[hash.Hash]bool{}, terms: map[termKey]bool{}}
}

func (c *usageCounter) add(file hash.Hash, r *fileRecord) {
	if c.seen[file] {
		return
	}
	c.seen[file] = true
	c.u.Files++
	c.u.Logical += r.Size
	for _, t := range r.Terms {
		k := termKey{t.Xorb, t.Start, t.End}
		if !c.terms[k] {
			c.terms[k] = true
			c.u.Stored += uint64(t.UnpackedBytes)
		}
	}
}

// RepoUsage is what the files registered in namespace ns take (see Usage). It reads every
// mapping and file record of the namespace.
func (s *Store) RepoUsage(ctx context.Context, ns string) (Usage, error) {
	c := newUsageCounter()
	if err := s.countNamespace(ctx, "ns/"+nsDir(ns)+"/", c); err != nil {
		return Usage{}, err
	}
	return c.u, nil
}

// countNamespace adds the files of the namespace directory prefix (verified and older mappings).
func (s *Store) countNamespace(ctx context.Context, prefix string, c *usageCounter) error {
	names, err := s.be.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("usage of %s: %w", prefix, err)
	}
	for _, name := range names {
		if kind, _, ok := classify(name); !ok || (kind != "sha256" && kind != "sha256v") {
			continue
		}
		b, err := s.readEntry(ctx, name)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		file, _, err := parseSHA(name, b)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		r, err := s.fileRecord(ctx, file)
		if errors.Is(err, ErrNotFound) {
			continue // fsck reports it
		}
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		c.add(file, r)
	}
	return nil
}

// Stats is what a store holds: the whole of it, and each repository's part.
type Stats struct {
	Format int `json:"format"`
	// Files and Logical: every registered file; Stored: the chunk ranges they reference.
	Usage
	// Xorbs and XorbBytes: the xorbs kept, and their size on storage (compressed, with footers).
	Xorbs     int              `json:"xorbs"`
	XorbBytes int64            `json:"xorb_bytes"`
	Repos     map[string]Usage `json:"repositories"`
}

// Stats reads every xorb's size, file record and mapping of the store.
func (s *Store) Stats(ctx context.Context) (*Stats, error) {
	st := &Stats{Format: s.Format(), Repos: map[string]Usage{}}
	xorbs, err := s.be.ListInfo(ctx, "xorbs/")
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	for _, x := range xorbs {
		if kind, _, ok := classify(x.Name); ok && kind == "xorbs" {
			st.Xorbs++
			st.XorbBytes += x.Size
		}
	}
	all := newUsageCounter()
	files, err := s.be.List(ctx, "files/")
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	for _, name := range files {
		kind, h, ok := classify(name)
		if !ok || kind != "files" {
			continue
		}
		r, err := s.fileRecord(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("stats: %w", err)
		}
		all.add(h, r)
	}
	st.Usage = all.u
	if err := s.repoStats(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// repoStats fills st.Repos, one Usage per namespace directory.
func (s *Store) repoStats(ctx context.Context, st *Stats) error {
	names, err := s.be.List(ctx, "ns/")
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	dirs := map[string]bool{}
	for _, n := range names {
		if parts := strings.Split(n, "/"); len(parts) == 4 {
			dirs[parts[1]] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		c := newUsageCounter()
		if err := s.countNamespace(ctx, "ns/"+d+"/", c); err != nil {
			return err
		}
		st.Repos[namespaceOf(d)] = c.u
	}
	return nil
}

// namespaceOf is the repository name nsDir encoded, or the directory itself when it holds only a
// digest of the name ("-" is the embedded store's namespace "").
func namespaceOf(dir string) string {
	if strings.HasPrefix(dir, "n") {
		if b, err := base64.RawURLEncoding.DecodeString(dir[1:]); err == nil {
			return string(b)
		}
	}
	return dir
}

// RepoStoredBytes is RepoUsage's Stored: what counts against a repository's quota.
func (s *Store) RepoStoredBytes(ctx context.Context, ns string) (uint64, error) {
	u, err := s.RepoUsage(ctx, ns)
	return u.Stored, err
}

// Ping asks the storage one question (whether the format blob exists): nil when it answers.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.be.Exists(ctx, formatName)
	return err
}

// OwnerStoredBytes is what the repositories under owner/ (a user's or an organization's own) take
// together: their distinct chunk ranges, each counted once across them. It lists every
// repository's namespace; one whose name is too long to be recorded (stored by a digest) is not
// counted.
func (s *Store) OwnerStoredBytes(ctx context.Context, owner string) (uint64, error) {
	names, err := s.be.List(ctx, "ns/")
	if err != nil {
		return 0, fmt.Errorf("usage of %s/: %w", owner, err)
	}
	dirs := map[string]bool{}
	for _, n := range names {
		if parts := strings.Split(n, "/"); len(parts) == 4 && strings.HasPrefix(namespaceOf(parts[1]), owner+"/") {
			dirs[parts[1]] = true
		}
	}
	c := newUsageCounter()
	for d := range dirs {
		if err := s.countNamespace(ctx, "ns/"+d+"/", c); err != nil {
			return 0, err
		}
	}
	return c.u.Stored, nil
}
