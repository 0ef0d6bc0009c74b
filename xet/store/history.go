package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// The registration history of a repository: one record per file a registration names there,
//
//	ns/<namespace>/reg/<time>-<file hash>-<oid>-<size>-<new bytes>
//
// time the registration's (unix nanoseconds, plus the file's index in its shard, so that the files
// of one shard keep their order), every field fixed-width hex. The name carries all a reader needs:
// a repository's history is one listing, in registration order, with no blob opened (on S3 one
// LIST per 1000 records and no GET; on the filesystem the pack indexes). The blob holds the same
// fields sealed, which fsck checks against the name.
//
// A record is written in its registration's own batch, after the file's mapping and membership
// (register): no extra round trip or fsync, one small blob per file. A registration repeated (a
// retry, a push of the same file again) writes another record; readers keep the first of each file.
// Nothing is recorded for the whole store (namespace ""), and nothing for registrations made before
// records were kept: RepoObjects lists those files' oids apart (Earlier).
//
// New bytes are the file's bytes in xorbs its shard lists (the xorbs its upload session brought),
// each chunk counted once per shard, for the first file naming it: what this push stored for the
// file. The rest was stored before (in this repository or another) or by an earlier file of the
// same push.

const (
	magicHistory   = "XSR1"
	historyDir     = "reg"
	historyNameLen = 16 + 1 + 64 + 1 + 64 + 1 + 16 + 1 + 16
	historyPayload = 8 + 32 + 32 + 8 + 8
)

// Registration is one record of a repository's history.
type Registration struct {
	Time time.Time
	File hash.Hash
	OID  hash.Hash // hash.FromSHA256 form: its String is the LFS oid
	Size uint64
	New  uint64 // bytes the registration stored for the file (see above)
}

// Deduplicated is the share of the file's bytes that were stored before: 1 - New/Size (0 for an
// empty file).
func (r Registration) Deduplicated() float64 {
	if r.Size == 0 || r.New >= r.Size {
		return 0
	}
	return 1 - float64(r.New)/float64(r.Size)
}

func (r Registration) stamp() uint64 { return uint64(r.Time.UnixNano()) }

func historyName(ns string, r Registration) string {
	return fmt.Sprintf("ns/%s/%s/%016x-%s-%s-%016x-%016x", nsDir(ns), historyDir, r.stamp(), r.File, r.OID, r.Size, r.New)
}

func marshalHistory(r Registration) []byte {
	b := binary.LittleEndian.AppendUint64([]byte(magicHistory), r.stamp())
	b = append(b, r.File[:]...)
	b = append(b, r.OID[:]...)
	b = binary.LittleEndian.AppendUint64(b, r.Size)
	return sealRecord(binary.LittleEndian.AppendUint64(b, r.New))
}

// parseHistoryName reads a record's name (its last element).
func parseHistoryName(base string) (Registration, error) {
	var r Registration
	f := strings.Split(base, "-")
	if len(base) != historyNameLen || len(f) != 5 {
		return r, fmt.Errorf("history record %q: not TIME-FILE-OID-SIZE-NEW", base)
	}
	var nums [3]uint64
	for i, s := range []string{f[0], f[3], f[4]} {
		n, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			return r, fmt.Errorf("history record %q: %w", base, err)
		}
		nums[i] = n
	}
	file, err := hash.Parse(f[1])
	if err != nil {
		return r, fmt.Errorf("history record %q: %w", base, err)
	}
	oid, err := hash.ParseSHA256(f[2])
	if err != nil {
		return r, fmt.Errorf("history record %q: %w", base, err)
	}
	return Registration{Time: time.Unix(0, int64(nums[0])).UTC(), File: file, OID: oid, Size: nums[1], New: nums[2]}, nil
}

// parseHistory reads a record's blob.
func parseHistory(name string, b []byte) (Registration, error) {
	p, err := openRecord(name, b, magicHistory)
	if err != nil {
		return Registration{}, err
	}
	if len(p) != historyPayload {
		return Registration{}, fmt.Errorf("store: corrupt entry %s: length", name)
	}
	le := binary.LittleEndian
	return Registration{Time: time.Unix(0, int64(le.Uint64(p))).UTC(), File: hash.Hash(p[8:40]), OID: hash.Hash(p[40:72]),
		Size: le.Uint64(p[72:]), New: le.Uint64(p[80:])}, nil
}

// noteHistory gives each plan its history record (nothing for the whole store), for register to
// write after the plan's mapping and membership.
func (s *Store) noteHistory(ns string, sh *shard.Shard, plans []filePlan) {
	if ns == "" {
		return
	}
	fresh := newBytes(sh, plans)
	at := s.now().UnixNano()
	for i := range plans {
		p := &plans[i]
		r := Registration{Time: time.Unix(0, at+int64(i)), File: p.file, OID: p.rec.SHA256, Size: p.rec.Size, New: fresh[i]}
		p.history = blob.NewBlob{Name: historyName(ns, r), Data: marshalHistory(r)}
	}
}

// newBytes is, per plan, the raw bytes of its chunks in the xorbs sh lists, each chunk counted
// for the first plan naming it. The chunk sizes are the shard's, which validation checked against
// the stored xorbs; the loop is bounded by the shard's chunk references (MaxShardChunkRefs).
func newBytes(sh *shard.Shard, plans []filePlan) []uint64 {
	own := make(map[hash.Hash]int, len(sh.Xorbs))
	counted := make([][]bool, len(sh.Xorbs))
	for i := range sh.Xorbs {
		own[sh.Xorbs[i].Hash] = i
		counted[i] = make([]bool, len(sh.Xorbs[i].Chunks))
	}
	out := make([]uint64, len(plans))
	for i, p := range plans {
		for _, t := range p.rec.Terms {
			x, ok := own[t.Xorb]
			if !ok {
				continue
			}
			chunks := sh.Xorbs[x].Chunks
			for c := int(t.Start); c < int(t.End) && c < len(chunks); c++ {
				if !counted[x][c] {
					counted[x][c] = true
					out[i] += uint64(chunks[c].RawLen)
				}
			}
		}
	}
	return out
}

// RepoObjects is what a repository's entries say of its objects.
type RepoObjects struct {
	// History: the registrations, oldest first, each file once (its first record).
	History []Registration
	// Earlier: the oids (hash.FromSHA256 form) the repository maps without a history record (files
	// registered before records were kept), sorted. LookupSHA256 gives their file and size.
	Earlier []hash.Hash
	// Entries is how many entries the repository's namespace holds. Entries are only ever added, so
	// a count that changed means the repository did.
	Entries int

	names []string // the listing, for RepoUsageOf
}

// RepoObjects lists namespace ns once (names only: no blob is opened) and returns its history and
// the oids it maps without one. A record whose name does not parse is skipped (fsck reports it).
func (s *Store) RepoObjects(ctx context.Context, ns string) (*RepoObjects, error) {
	names, err := s.namespaceEntries(ctx, nsDir(ns))
	if err != nil {
		return nil, err
	}
	o := &RepoObjects{Entries: len(names), names: names}
	files := map[hash.Hash]bool{}
	oids := map[hash.Hash]bool{}
	var mapped []hash.Hash
	for _, name := range names { // sorted: the records in time order
		if dir, base := path.Split(name); strings.HasSuffix(dir, "/"+historyDir+"/") {
			r, err := parseHistoryName(base)
			if err != nil || files[r.File] {
				continue
			}
			files[r.File], oids[r.OID] = true, true
			o.History = append(o.History, r)
		} else if kind, oid, ok := classify(name); ok && (kind == "sha256" || kind == "sha256v") {
			mapped = append(mapped, oid)
		}
	}
	earlier := map[string]hash.Hash{} // by oid string, the order shown
	for _, oid := range mapped {
		if !oids[oid] {
			earlier[oid.String()] = oid
		}
	}
	for _, k := range slices.Sorted(maps.Keys(earlier)) {
		o.Earlier = append(o.Earlier, earlier[k])
	}
	return o, nil
}

// Repository is a namespace of the store and the number of its entries.
type Repository struct {
	Name    string
	Entries int
}

// Repositories lists the repositories of the store (one listing of ns/), sorted by name, each with
// its number of entries (see RepoObjects.Entries). The whole store's namespace "" and names kept
// only as a digest (NameKept) are not listed: neither has a name to show or to check access by.
func (s *Store) Repositories(ctx context.Context) ([]Repository, error) {
	names, err := s.be.List(ctx, "ns/")
	if err != nil {
		return nil, fmt.Errorf("listing repositories: %w", err)
	}
	count := map[string]int{}
	for _, n := range names {
		if parts := strings.Split(n, "/"); len(parts) == 4 && strings.HasPrefix(parts[1], "n") {
			count[parts[1]]++
		}
	}
	out := make([]Repository, 0, len(count))
	for dir, n := range count {
		if name := namespaceOf(dir); name != dir {
			out = append(out, Repository{Name: name, Entries: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// checkHistory is fsck's check of a history record: its blob parses and says what its name says.
func (m *Maint) checkHistory(ctx context.Context, r *CheckReport, name string) {
	b, err := m.s.readEntry(ctx, name)
	if err != nil {
		r.add(name, err.Error())
		return
	}
	got, err := parseHistory(name, b)
	if err != nil {
		r.add(name, err.Error())
		return
	}
	want, err := parseHistoryName(path.Base(name))
	if err != nil {
		r.add(name, err.Error())
	} else if !got.Time.Equal(want.Time) || got.File != want.File || got.OID != want.OID || got.Size != want.Size || got.New != want.New {
		r.add(name, "the record does not say what its name says")
	}
}

// historyFile is the file a history record's name names (for classify).
func historyFile(base string) (hash.Hash, bool) {
	r, err := parseHistoryName(base)
	return r.File, err == nil
}
