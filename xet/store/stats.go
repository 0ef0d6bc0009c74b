package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// Usage is what the files of a repository (or of the whole store) take.
//
// Its files are those it serves: its members (access.go), whatever its SHA-256 mappings name (the
// whole store's, which has no members, are those its mappings name). Logical is the sum of the
// files' sizes. Stored is what the repository costs the store, raw
// (uncompressed): every xorb it uploaded (its upload records, uploads.go), whole, for as long as
// the store keeps it, whether its files name it or not; and the bytes of
// the distinct chunk ranges its files reference in other xorbs (what dedupe against other
// repositories' data lets it use), each counted once however many of its files name it. A chunk
// range that another repository's files also reference counts in full in each of them (a
// repository's usage does not shrink because another one holds the same data, and does not grow
// when another one stops holding it).
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

// usageCounter adds uploads and files to a Usage, each xorb uploaded once and each chunk range of
// another xorb once. Uploads are added before the files whose terms they hold.
type usageCounter struct {
	u       Usage
	seen    map[hash.Hash]bool
	terms   map[termKey]bool
	uploads map[hash.Hash]bool // counted whole
}

func newUsageCounter() *usageCounter {
	return &usageCounter{seen: map[hash.Hash]bool{}, terms: map[termKey]bool{}, uploads: map[hash.Hash]bool{}}
}

func (c *usageCounter) addUpload(x hash.Hash, raw uint64) {
	c.uploads[x] = true
	c.u.Stored += raw
}

func (c *usageCounter) add(file hash.Hash, r *fileRecord) {
	if c.seen[file] {
		return
	}
	c.seen[file] = true
	c.u.Files++
	c.u.Logical += r.Size
	for _, t := range r.Terms {
		c.addTerm(t.Xorb, t.Start, t.End, t.UnpackedBytes)
	}
}

// addTerm counts a chunk range, unless its xorb counts whole or the range counted already; it
// returns the bytes it added.
func (c *usageCounter) addTerm(x hash.Hash, start, end, unpacked uint32) uint64 {
	k := termKey{x, start, end}
	if c.uploads[x] || c.terms[k] {
		return 0
	}
	c.terms[k] = true
	c.u.Stored += uint64(unpacked)
	return uint64(unpacked)
}

// RepoUsage is what namespace ns takes (see Usage). It reads every entry of the namespace, and
// asks the backend whether each xorb it uploaded is still kept.
func (s *Store) RepoUsage(ctx context.Context, ns string) (Usage, error) {
	names, err := s.namespaceEntries(ctx, nsDir(ns))
	if err != nil {
		return Usage{}, err
	}
	return s.usageOf(ctx, names)
}

// RepoUsageOf is RepoUsage of the entries o was listed with (RepoObjects): one listing serves a
// page's history and its usage (on the filesystem backend a listing reads every pack index), and
// the usage is that of exactly o.Entries entries.
func (s *Store) RepoUsageOf(ctx context.Context, o *RepoObjects) (Usage, error) {
	return s.usageOf(ctx, o.names)
}

// usageOf is the usage of a namespace's entries names.
func (s *Store) usageOf(ctx context.Context, names []string) (Usage, error) {
	c := newUsageCounter()
	if err := s.countUploads(ctx, names, c); err != nil {
		return Usage{}, err
	}
	if err := s.countFiles(ctx, names, c); err != nil {
		return Usage{}, err
	}
	return c.u, nil
}

// namespaceEntries lists the entries of a namespace directory.
func (s *Store) namespaceEntries(ctx context.Context, dir string) ([]string, error) {
	names, err := s.be.List(ctx, "ns/"+dir+"/")
	if err != nil {
		return nil, fmt.Errorf("usage of %s: %w", namespaceOf(dir), err)
	}
	return names, nil
}

// countFiles adds the files among names (a namespace's entries) the namespace serves: those its
// membership entries name (access.go), each the file a reader of the repository may reconstruct by
// its hash. A registration writes a file's membership with its SHA-256 mapping, but the first
// mapping of an oid stands (sha256Name): a file registered on the shard's word for an oid another
// file of the repository holds is a member its mappings do not name, and is counted all the same.
// The whole store (namespace "") keeps no membership: its files are those its mappings name.
func (s *Store) countFiles(ctx context.Context, names []string, c *usageCounter) error {
	whole := "ns/" + nsDir("") + "/"
	for _, name := range names {
		kind, file, ok := classify(name)
		switch {
		case !ok:
			continue
		case kind == "member":
		case (kind == "sha256" || kind == "sha256v") && strings.HasPrefix(name, whole):
			b, err := s.readEntry(ctx, name)
			if err != nil {
				return fmt.Errorf("usage: %w", err)
			}
			if file, _, err = parseSHA(name, b); err != nil {
				return fmt.Errorf("usage: %w", err)
			}
		default:
			continue
		}
		if c.seen[file] {
			continue
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

// ShardAdds is what registering an upload shard as a would add to a's repository's usage at most:
// the distinct chunk ranges its files name in xorbs the repository did not upload (those it
// uploaded count whole already). A file that is a member of the repository already adds nothing
// (its ranges are in the usage), so that a registration retried after its answer was lost is not
// refused for what it registered; the ranges of its other files are counted even where the
// repository's files reference them already (the bound errs on the side of the quota). The term
// sizes are the shard's own claims, which registration checks. largest is what the shard's largest
// file would add alone: a quota refuses that one file as too large for it, and the shard's total
// as over it, since a shard names a batch of files.
//
// A shard registration would refuse is refused first, with registration's error and at its cost:
// one over the caps (checkCaps) before any lookup, one naming a xorb a may not name (CanReference)
// at that xorb. Each xorb is looked up once, through the cache of access entries, so the count
// costs what registration's own checks of the same xorbs cost, never a lookup per name a client
// made up.
func (s *Store) ShardAdds(ctx context.Context, a Access, body []byte) (adds, largest uint64, err error) {
	sh, err := parseUploadShard(body)
	if err != nil {
		return 0, 0, err
	}
	if err := checkCaps(sh); err != nil {
		return 0, 0, err
	}
	c := newUsageCounter()
	asked := map[hash.Hash]bool{}
	own := map[termKey]bool{} // the ranges of one file, counted once for it
	for _, f := range sh.Files {
		clear(own)
		var alone uint64
		registered, err := s.countedFile(ctx, a, &f)
		if err != nil {
			return 0, 0, fmt.Errorf("usage: %w", err)
		}
		for _, t := range f.Terms {
			if !asked[t.Xorb] {
				asked[t.Xorb] = true
				uploaded, allowed, err := s.reference(ctx, a, t.Xorb)
				if err != nil {
					return 0, 0, fmt.Errorf("usage: %w", err)
				}
				if !allowed {
					return 0, 0, fmt.Errorf("file %s: %w", f.Hash, errNotYours(t.Xorb))
				}
				if uploaded {
					c.uploads[t.Xorb] = true
				}
			}
			if registered {
				continue // checked as registration checks it; counted in the usage already
			}
			adds += c.addTerm(t.Xorb, t.ChunkStart, t.ChunkEnd, t.UnpackedBytes)
			if k := (termKey{t.Xorb, t.ChunkStart, t.ChunkEnd}); !c.uploads[t.Xorb] && !own[k] {
				own[k] = true
				alone += uint64(t.UnpackedBytes)
			}
		}
		largest = max(largest, alone)
	}
	return adds, largest, nil
}

// countedFile reports whether a's repository's usage counts file f already: f is a member of the
// repository (countFiles counts its members).
func (s *Store) countedFile(ctx context.Context, a Access, f *shard.File) (bool, error) {
	if a.whole() {
		return false, nil
	}
	return s.HasFile(ctx, a.Repo, f.Hash)
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
func (m *Maint) Stats(ctx context.Context) (*Stats, error) {
	st := &Stats{Format: m.s.Format(), Repos: map[string]Usage{}}
	xorbs, err := m.s.be.ListInfo(ctx, "xorbs/")
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
	files, err := m.s.be.List(ctx, "files/")
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	for _, name := range files {
		kind, h, ok := classify(name)
		if !ok || kind != "files" {
			continue
		}
		r, err := m.s.fileRecord(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("stats: %w", err)
		}
		all.add(h, r)
	}
	st.Usage = all.u
	if err := m.repoStats(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// repoStats fills st.Repos, one Usage per namespace directory.
func (m *Maint) repoStats(ctx context.Context, st *Stats) error {
	names, err := m.s.be.List(ctx, "ns/")
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
		names, err := m.s.namespaceEntries(ctx, d)
		if err != nil {
			return err
		}
		if err := m.s.countUploads(ctx, names, c); err != nil {
			return err
		}
		if err := m.s.countFiles(ctx, names, c); err != nil {
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

// Owner is who a repository belongs to, as the Hub names repositories: OWNER of OWNER/NAME (a
// model), datasets/OWNER/NAME and spaces/OWNER/NAME; "" for a name of one segment (the embedded
// store's, or a server's repository without an owner).
func Owner(ns string) string {
	segs := strings.Split(ns, "/")
	switch {
	case len(segs) >= 3 && (segs[0] == "datasets" || segs[0] == "spaces"):
		return segs[1]
	case len(segs) >= 2:
		return segs[0]
	}
	return ""
}

// NameKept reports whether the store keeps namespace ns under its name, which is how its owner's
// total finds it (OwnerStoredBytes); a name too long for a file name (over 150 bytes) is kept as
// a digest, which names no owner.
func NameKept(ns string) bool { return strings.HasPrefix(nsDir(ns), "n") || ns == "" }

// OwnerStoredBytes is what the repositories of owner (see Owner: models, datasets and spaces)
// take together: each xorb any of them uploaded once, whole, and the distinct chunk ranges of
// other xorbs their files reference, each counted once across them. It lists every repository's
// namespace; one whose name the store keeps only as a digest (NameKept) is not counted.
func (s *Store) OwnerStoredBytes(ctx context.Context, owner string) (uint64, error) {
	names, err := s.be.List(ctx, "ns/")
	if err != nil {
		return 0, fmt.Errorf("usage of %s/: %w", owner, err)
	}
	mine := map[string][]string{} // the entries of each of owner's namespace directories
	for _, n := range names {
		if parts := strings.Split(n, "/"); len(parts) == 4 && Owner(namespaceOf(parts[1])) == owner && strings.HasPrefix(parts[1], "n") {
			mine[parts[1]] = append(mine[parts[1]], n)
		}
	}
	c := newUsageCounter()
	for _, entries := range mine { // every upload before any file: a xorb uploaded counts whole
		if err := s.countUploads(ctx, entries, c); err != nil {
			return 0, err
		}
	}
	for _, entries := range mine {
		if err := s.countFiles(ctx, entries, c); err != nil {
			return 0, err
		}
	}
	return c.u.Stored, nil
}
