package fs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/regfile"
)

// A pack's sorted index lets a process find a packed blob on disk, by binary search, instead of
// reading the pack's whole index into memory (which costs every process time and memory in
// proportion to the store). It covers a prefix of the pack's .idx; the rest, the tail, is read into
// memory, and once that tail is large the sorted index is written again to cover it (sortIfLarge).
//
//	packs/<id>.sidx  "XETSIDX1", the .idx bytes it covers (u64), the end of the last record it
//	                 names (u64), the number of entries (u32), a fan-out table of 256 u32 (entries
//	                 whose key's top byte is at most i, as git's pack .idx has), the crc32c of
//	                 the header so far (checked at every open: recovery trusts its ends), then the entries
//	                 sorted by key: key (u64), offset of the data in the pack (u32: a pack takes
//	                 no record past 1 GiB), data length (u32); then the crc32c of everything
//	                 before it
//
// All integers are little-endian. The key is a 64-bit hash of the blob's name (nameKey); the name
// itself is in the pack, just before the data, and a lookup reads it back and compares it, so that
// a key shared by two names, or a damaged entry, never answers for another blob. The file is
// derived from the .idx: written to tmp/, synced and renamed into place; any process may write it
// (the same entries, whoever writes them), readers keep the file they opened, a file that does not
// check is ignored (and written again), and gc removes it with its pack.
const (
	sortedExt    = ".sidx"
	sortedMagic  = "XETSIDX1"
	sortedHeader = len(sortedMagic) + 8 + 8 + 4 + 256*4 + 4
	sortedEntry  = 8 + 4 + 4
)

// sortMinTail: a pack's tail (the .idx entries its sorted index does not cover) is sorted once it
// holds this many entries, or a 32nd of what the sorted index holds if that is more: the tail a
// process reads stays small (reading 4096 entries costs about what opening the files does), the
// sorted index is rewritten a bounded number of times per entry, and a push of a few thousand small
// files rewrites it a few times, not once per batch.
const sortMinTail = 4096

// nameKey is the sort key of a blob name: FNV-1a, then a finalizer that spreads it over all 64 bits
// (the fan-out takes the top byte).
func nameKey(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// sortedIndex is an open .sidx file.
type sortedIndex struct {
	f       *os.File
	idxEnd  int64 // of the pack's .idx, covered
	dataEnd int64 // of the pack's records named
	count   int
	fan     [256]uint32

	// probed holds the keys of the entries binary searches read (by entry number). A search of
	// a bucket probes the same entries every time, so once warm a lookup reads only its window.
	// It holds about two entries for every sortedWindow of the index (some 80,000, 2 MB, at 10^7
	// entries), filled as buckets are searched, never loaded whole.
	probeMu sync.Mutex
	probed  map[int32]uint64
}

// sortedReads counts the reads lookups make in sorted indexes (tests assert what a lookup costs).
var sortedReads atomic.Int64

// sortedKey is one entry of a sorted index.
type sortedKey struct {
	key uint64
	off int64
	n   int64
}

// openSortedIndex opens path; nil when there is none, it cannot be opened, or it is not a whole
// sorted index: the pack's .idx is read instead, and the sorted index written again.
func openSortedIndex(path string) *sortedIndex {
	f, err := regfile.Open(path, os.O_RDONLY)
	if err != nil {
		return nil
	}
	s, ok := readSortedHeader(f)
	if !ok {
		f.Close()
		return nil
	}
	return s
}

// readSortedHeader reads and checks the header and fan-out table of f.
func readSortedHeader(f *os.File) (*sortedIndex, bool) {
	var h [sortedHeader]byte
	if _, err := f.ReadAt(h[:], 0); err != nil || string(h[:len(sortedMagic)]) != sortedMagic ||
		crc32.Checksum(h[:sortedHeader-4], crcTable) != binary.LittleEndian.Uint32(h[sortedHeader-4:]) {
		return nil, false
	}
	p := h[len(sortedMagic):]
	s := &sortedIndex{f: f, idxEnd: int64(binary.LittleEndian.Uint64(p)), dataEnd: int64(binary.LittleEndian.Uint64(p[8:])),
		count: int(binary.LittleEndian.Uint32(p[16:]))}
	var prev uint32
	for i := range s.fan {
		s.fan[i] = binary.LittleEndian.Uint32(p[20+4*i:])
		if s.fan[i] < prev {
			return nil, false
		}
		prev = s.fan[i]
	}
	st, err := f.Stat()
	if err != nil || int(prev) != s.count || st.Size() != int64(sortedHeader+s.count*sortedEntry+4) ||
		s.idxEnd < int64(len(idxMagic)) || s.dataEnd < int64(len(packMagic)) {
		return nil, false
	}
	return s, true
}

// entry reads entry i.
func (s *sortedIndex) entry(i int) (sortedKey, error) {
	var b [sortedEntry]byte
	sortedReads.Add(1)
	if _, err := s.f.ReadAt(b[:], int64(sortedHeader+i*sortedEntry)); err != nil {
		return sortedKey{}, fmt.Errorf("store: reading %s: %w", filepath.Base(s.f.Name()), err)
	}
	return decodeSorted(b[:]), nil
}

func decodeSorted(b []byte) sortedKey {
	return sortedKey{key: binary.LittleEndian.Uint64(b), off: int64(binary.LittleEndian.Uint32(b[8:])),
		n: int64(binary.LittleEndian.Uint32(b[12:]))}
}

// sortedWindow: a lookup probes entries one read at a time only while more than this many
// remain, then reads the rest of its range in one read (4 KiB: a read of a page costs about what a
// read of one entry does, and a fan-out bucket of a store of 60,000 entries fits). With the data
// of a small blob read with its name (recordNamed), opening a small packed blob and reading it
// costs two reads instead of a dozen.
var sortedWindow = 256

// probeKey returns the key of entry i, read once and then remembered (probed).
func (s *sortedIndex) probeKey(i int) (uint64, error) {
	s.probeMu.Lock()
	k, ok := s.probed[int32(i)]
	s.probeMu.Unlock()
	if ok {
		return k, nil
	}
	e, err := s.entry(i)
	if err != nil {
		return 0, err
	}
	s.probeMu.Lock()
	if s.probed == nil {
		s.probed = map[int32]uint64{}
	}
	s.probed[int32(i)] = e.key
	s.probeMu.Unlock()
	return e.key, nil
}

// windowBufs holds the buffers lookups read their windows into (at most sortedWindow entries,
// 4 KiB): one a lookup was 29 % of the lookups' CPU in a push of 50,000 files.
var windowBufs = sync.Pool{New: func() any { return new([]byte) }}

// find looks name (whose nameKey is key) up: a binary search among the entries of its key's
// fan-out bucket (on disk down to a window, then in memory), then the name read back from the
// pack (before the data) for each entry of that key. data is the blob's bytes when it is small
// (smallRecord), read with the name; nil otherwise.
func (s *sortedIndex) find(pack *os.File, name string, key uint64) (e packEntry, data []byte, ok bool, err error) {
	top := key >> 56
	lo, hi := 0, int(s.fan[top])
	if top > 0 {
		lo = int(s.fan[top-1])
	}
	for hi-lo > sortedWindow { // the first entry whose key is >= key is in [lo, hi]
		mid := int(uint(lo+hi) >> 1)
		k, err := s.probeKey(mid)
		if err != nil {
			return packEntry{}, nil, false, err
		}
		if k < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	bp := windowBufs.Get().(*[]byte)
	defer windowBufs.Put(bp)
	if cap(*bp) < (hi-lo)*sortedEntry {
		*bp = make([]byte, max((hi-lo)*sortedEntry, sortedWindow*sortedEntry))
	}
	win := (*bp)[:(hi-lo)*sortedEntry]
	if len(win) > 0 {
		sortedReads.Add(1)
	}
	if _, err := s.f.ReadAt(win, int64(sortedHeader+lo*sortedEntry)); err != nil {
		return packEntry{}, nil, false, fmt.Errorf("store: reading %s: %w", filepath.Base(s.f.Name()), err)
	}
	bucketEnd := int(s.fan[top])
	at := func(i int) (sortedKey, error) { // entry i, from the window when it holds it
		if i < hi {
			return decodeSorted(win[(i-lo)*sortedEntry:]), nil
		}
		// Past the window: the search probed entry hi (its key is remembered), and a key's
		// entries never go past its bucket, so most misses read nothing more.
		if k, err := s.probeKey(i); err != nil || k != key {
			return sortedKey{key: k}, err
		}
		return s.entry(i)
	}
	i := lo + sort.Search(hi-lo, func(j int) bool { return binary.LittleEndian.Uint64(win[j*sortedEntry:]) >= key })
	for ; i < bucketEnd; i++ {
		k, err := at(i)
		if err != nil {
			return packEntry{}, nil, false, err
		}
		if k.key != key {
			break
		}
		data, ok, err := recordNamed(pack, k, name)
		if err != nil {
			return packEntry{}, nil, false, err
		}
		if ok {
			return packEntry{name: name, off: k.off, n: k.n}, data, true, nil
		}
	}
	return packEntry{}, nil, false, nil
}

// smallRecord: a blob of at most this many bytes is read with its record's name (one read instead
// of two: the records a store looks up one by one, mappings and file records, are this small).
const smallRecord = 2048

// recordNamed reports whether the record whose data e points at is named name, with e's length;
// data is its bytes when e is at most smallRecord long.
func recordNamed(pack *os.File, e sortedKey, name string) (data []byte, ok bool, err error) {
	start := e.off - int64(recHeader+len(name))
	if start < int64(len(packMagic)) || len(name) > 0xffff {
		return nil, false, nil
	}
	head := recHeader + len(name)
	size := head
	if e.n <= smallRecord {
		size += int(e.n)
	}
	b := make([]byte, size)
	if _, err := pack.ReadAt(b, start); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("store: reading %s: %w", filepath.Base(pack.Name()), err)
	}
	ok = string(b[:4]) == recMagic && int(binary.LittleEndian.Uint16(b[8:])) == len(name) &&
		int64(binary.LittleEndian.Uint32(b[10:])) == e.n && string(b[recHeader:head]) == name
	if ok && size > head {
		data = b[head:]
	}
	return data, ok, nil
}

// writeSortedIndex writes the sorted index of pack id in dir covering idxEnd bytes of its .idx,
// idx: the entries of old (which covers a prefix of those) merged with tail (the entries after
// it), through a temp file in tmpDir. idx is synced first, so that what a durable sorted index
// covers is durable in the .idx too (recovery reads the .idx from where the sorted index ends). It
// returns the new index, open.
func writeSortedIndex(dir, tmpDir, id string, idx *os.File, old *sortedIndex, tail []sortedKey, idxEnd, dataEnd int64) (*sortedIndex, error) {
	fail := func(err error) (*sortedIndex, error) {
		return nil, fmt.Errorf("store: writing the sorted index of pack %s: %w", id, err)
	}
	if err := idx.Sync(); err != nil {
		return fail(err)
	}
	keys, err := sortedKeys(tail)
	if err != nil {
		return fail(err)
	}
	count := len(keys)
	var olds *bufio.Reader
	if old != nil {
		count += old.count
		olds = bufio.NewReaderSize(io.NewSectionReader(old.f, int64(sortedHeader), int64(old.count*sortedEntry)), 1<<20)
	}
	tmp, err := os.CreateTemp(tmpDir, "sidx-*")
	if err != nil {
		return fail(err)
	}
	defer fsretry.Remove(tmp.Name()) // a no-op once renamed
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
	_, err = bw.Write(sortedHead(fanCounts(old, keys), idxEnd, dataEnd, count))
	if err == nil {
		err = mergeSorted(bw, olds, old, keys)
	}
	if err == nil {
		err = bw.Flush() // the crc has seen every byte before it
	}
	if err == nil {
		_, err = tmp.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	}
	if err == nil {
		err = tmp.Chmod(0o644) // as the pack's other files: readable by whoever reads the store
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = fsretry.Rename(tmp.Name(), filepath.Join(dir, id+sortedExt))
	}
	if err != nil {
		tmp.Close()
		return fail(err)
	}
	s, ok := readSortedHeader(tmp)
	if !ok {
		tmp.Close()
		return fail(errors.New("it does not read back"))
	}
	return s, nil
}

// sortedKeys sorts keys (in place) and returns them.
func sortedKeys(keys []sortedKey) ([]sortedKey, error) {
	for _, k := range keys {
		if k.off+k.n > math.MaxUint32 {
			return nil, fmt.Errorf("the entry at %d lies past 4 GiB", k.off)
		}
	}
	slices.SortFunc(keys, func(a, b sortedKey) int { return cmpKey(a.key, b.key) })
	return keys, nil
}

// fanCounts is how many keys of old (its cumulative fan-out table) and of keys start with each
// byte.
func fanCounts(old *sortedIndex, keys []sortedKey) [256]uint32 {
	var fan [256]uint32
	if old != nil {
		prev := uint32(0)
		for i, c := range old.fan {
			fan[i], prev = c-prev, c
		}
	}
	for _, k := range keys {
		fan[k.key>>56]++
	}
	return fan
}

func cmpKey(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortedHead is the header of a sorted index whose fan-out counts (per top byte, not summed) are
// fan.
func sortedHead(fan [256]uint32, idxEnd, dataEnd int64, count int) []byte {
	h := make([]byte, 0, sortedHeader)
	h = append(h, sortedMagic...)
	h = binary.LittleEndian.AppendUint64(h, uint64(idxEnd))
	h = binary.LittleEndian.AppendUint64(h, uint64(dataEnd))
	h = binary.LittleEndian.AppendUint32(h, uint32(count))
	var sum uint32
	for _, c := range fan {
		sum += c
		h = binary.LittleEndian.AppendUint32(h, sum)
	}
	return binary.LittleEndian.AppendUint32(h, crc32.Checksum(h, crcTable))
}

// mergeSorted writes the entries of old (read through olds) and keys in key order.
func mergeSorted(w *bufio.Writer, olds *bufio.Reader, old *sortedIndex, keys []sortedKey) error {
	var rec [sortedEntry]byte
	put := func(e sortedKey) error {
		binary.LittleEndian.PutUint64(rec[:], e.key)
		binary.LittleEndian.PutUint32(rec[8:], uint32(e.off))
		binary.LittleEndian.PutUint32(rec[12:], uint32(e.n))
		_, err := w.Write(rec[:])
		return err
	}
	left := 0
	if old != nil {
		left = old.count
	}
	var cur sortedKey
	have := false
	for {
		if !have && left > 0 {
			var b [sortedEntry]byte
			if _, err := io.ReadFull(olds, b[:]); err != nil {
				return fmt.Errorf("reading the previous sorted index: %w", err)
			}
			cur, have, left = decodeSorted(b[:]), true, left-1
		}
		switch {
		case have && (len(keys) == 0 || cur.key <= keys[0].key):
			have = false
			if err := put(cur); err != nil {
				return err
			}
		case len(keys) > 0:
			if err := put(keys[0]); err != nil {
				return err
			}
			keys = keys[1:]
		default:
			return nil
		}
	}
}

// checkSorted reads the whole of s and says what is wrong with it: its checksum, a fan-out count
// or an entry out of order (fsck).
func checkSorted(s *sortedIndex) error {
	b, err := io.ReadAll(io.NewSectionReader(s.f, 0, 1<<40))
	if err != nil {
		return err
	}
	body := len(b) - 4
	if body < sortedHeader || crc32.Checksum(b[:body], crcTable) != binary.LittleEndian.Uint32(b[body:]) {
		return errors.New("its checksum does not match")
	}
	var fan [256]uint32
	var prev uint64
	for i := 0; i < s.count; i++ {
		e := decodeSorted(b[sortedHeader+i*sortedEntry:])
		if e.key < prev {
			return fmt.Errorf("entry %d is out of order", i)
		}
		prev = e.key
		fan[e.key>>56]++
	}
	if !bytes.Equal(sortedHead(fan, s.idxEnd, s.dataEnd, s.count), b[:sortedHeader]) {
		return errors.New("its fan-out table does not match its entries")
	}
	return nil
}
