package fs

import "os"

// packTail is the part of a pack's .idx that its sorted index does not cover yet, held in memory
// the way the sorted index keeps entries on disk: by the key of the name (nameKey) with where the
// record lies, and without the name. A lookup reads the name back from the candidate's record
// (recordNamed, which brings a small blob's bytes in the same read), as a lookup in the sorted
// index does. Names made the tail cost about 300 bytes an entry (the string, the map's slot, the
// copy parseIndex made), and a tail may hold a 32nd of a pack's entries (sortMinTail): at 10^7
// entries that was about 100 MB of xet-server's heap. A key and a place cost about 30.
//
// Entries whose names share a key (two names, rare with 64-bit keys, or one name written twice)
// are all kept, in .idx order; a lookup takes the first whose record has the name, as the map of
// names kept the first entry of a name.
//
// Not safe for concurrent use: packSet.mu guards it.
type packTail struct {
	first map[uint64]tailPlace
	more  map[uint64][]tailPlace // the later entries of a key, in .idx order
	n     int
}

// tailPlace is where a tail entry's data lies in the pack.
type tailPlace struct{ off, n int64 }

// newPackTail returns an empty tail with room for size entries.
func newPackTail(size int) packTail {
	return packTail{first: make(map[uint64]tailPlace, size)}
}

// add appends e (an entry read from the .idx, or written by this process) to the tail.
func (t *packTail) add(e packEntry) { t.addKey(nameKey(e.name), tailPlace{e.off, e.n}) }

// addKey appends an entry of key at p.
func (t *packTail) addKey(key uint64, p tailPlace) {
	if t.first == nil {
		t.first = map[uint64]tailPlace{}
	}
	if _, ok := t.first[key]; !ok {
		t.first[key] = p
	} else {
		if t.more == nil {
			t.more = map[uint64][]tailPlace{}
		}
		t.more[key] = append(t.more[key], p)
	}
	t.n++
}

// len is the number of entries held.
func (t *packTail) len() int { return t.n }

// find looks name (whose nameKey is key) up in the tail, reading candidates' records from pack: the
// entry, and the blob's bytes when it is small (smallRecord).
func (t *packTail) find(pack *os.File, name string, key uint64) (e packEntry, data []byte, ok bool, err error) {
	p, hit := t.first[key]
	if !hit {
		return packEntry{}, nil, false, nil
	}
	for i := -1; i < len(t.more[key]); i++ {
		if i >= 0 {
			p = t.more[key][i]
		}
		data, ok, err := recordNamed(pack, sortedKey{key: key, off: p.off, n: p.n}, name)
		if err != nil || ok {
			return packEntry{name: name, off: p.off, n: p.n}, data, ok, err
		}
	}
	return packEntry{}, nil, false, nil
}

// keys returns every entry held, unsorted: what a sorted index covering the tail is written from.
func (t *packTail) keys() []sortedKey {
	out := make([]sortedKey, 0, t.n)
	for k, p := range t.first {
		out = append(out, sortedKey{key: k, off: p.off, n: p.n})
		for _, q := range t.more[k] {
			out = append(out, sortedKey{key: k, off: q.off, n: q.n})
		}
	}
	return out
}
