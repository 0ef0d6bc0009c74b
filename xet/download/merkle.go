package download

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/internal/scratch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// merkleStream computes the file hash of a whole-file download from the chunk hashes of its terms,
// which jobs finish in any order (one job may serve terms far apart in the file). A term finished
// at the frontier (the next term in file order) is fed to a hash.MerkleBuilder at once, with the
// terms finished before it that it unblocks; one finished beyond the frontier waits. Waiting
// entries are held in memory up to budget bytes; past that they are all written to a spill file
// (unlinked at once where the platform allows) and read back when the frontier reaches them. So
// memory does not grow with the file: jobs run in file order and the frontier is rarely far behind.
//
// Concurrency: done and sum may be called from any goroutine; a mutex serialises them.
type merkleStream struct {
	mu      sync.Mutex
	b       hash.MerkleBuilder
	terms   int // terms of the file
	next    int // the frontier: terms [0, next) are fed
	waiting map[int]*waitingTerm
	held    int64 // bytes of entries held by waiting terms
	budget  int64
	dir     string
	spill   *scratch.File
	err     error
}

// waitingTerm is a finished term beyond the frontier: its entries, or where they were spilled.
type waitingTerm struct {
	ents []hash.Entry
	off  int64
	n    int
}

const entryRecord = 32 + 8 // a spilled hash.Entry

// defaultWaitBudget: 4 MiB of waiting entries (about 100,000 chunks, 6 GiB of file).
const defaultWaitBudget = 4 << 20

func newMerkleStream(terms int, dir string, budget int64) *merkleStream {
	return &merkleStream{terms: terms, waiting: make(map[int]*waitingTerm), budget: budget, dir: dir}
}

// done records the chunk entries of term ti, finished. ents is the caller's to drop (kept when the
// term waits).
func (m *merkleStream) done(ti int, ents []hash.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if ti < m.next || m.waiting[ti] != nil || ti >= m.terms {
		return fmt.Errorf("internal error: term %d finished twice or out of bounds (frontier %d of %d)", ti, m.next, m.terms)
	}
	if ti > m.next {
		m.waiting[ti] = &waitingTerm{ents: ents, n: len(ents)}
		m.held += int64(len(ents)) * entryRecord
		if m.held > m.budget {
			m.err = m.spillAll()
		}
		return m.err
	}
	m.feed(ents)
	for {
		w := m.waiting[m.next]
		if w == nil {
			return nil
		}
		delete(m.waiting, m.next)
		ents := w.ents
		if ents == nil {
			var err error
			if ents, err = m.readBack(w); err != nil {
				m.err = err
				return err
			}
		} else {
			m.held -= int64(len(ents)) * entryRecord
		}
		m.feed(ents)
	}
}

func (m *merkleStream) feed(ents []hash.Entry) {
	for _, e := range ents {
		m.b.Add(e)
	}
	m.next++
}

// spillAll writes every waiting term held in memory to the spill file.
func (m *merkleStream) spillAll() error {
	if m.spill == nil {
		f, err := scratch.Create(m.dir, ".xet-download-*.chunks")
		if err != nil {
			return fmt.Errorf("spilling chunk hashes of terms finished out of order: %w", err)
		}
		m.spill = f
	}
	var buf []byte
	for _, w := range m.waiting {
		if w.ents == nil {
			continue
		}
		buf = buf[:0]
		for _, e := range w.ents {
			buf = append(buf, e.Hash[:]...)
			buf = binary.LittleEndian.AppendUint64(buf, e.Size)
		}
		off, err := m.spill.Append(buf)
		if err != nil {
			return fmt.Errorf("spilling chunk hashes of terms finished out of order: %w", err)
		}
		w.off, w.ents = off, nil
	}
	m.held = 0
	return nil
}

func (m *merkleStream) readBack(w *waitingTerm) ([]hash.Entry, error) {
	buf := make([]byte, w.n*entryRecord)
	if err := m.spill.ReadAt(buf, w.off); err != nil {
		return nil, fmt.Errorf("reading back spilled chunk hashes: %w", err)
	}
	ents := make([]hash.Entry, w.n)
	for i := range ents {
		r := buf[i*entryRecord:]
		copy(ents[i].Hash[:], r[:32])
		ents[i].Size = binary.LittleEndian.Uint64(r[32:])
	}
	return ents, nil
}

// sum returns the file hash once every term is done.
func (m *merkleStream) sum() (hash.Hash, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return hash.Hash{}, m.err
	}
	if m.next != m.terms {
		return hash.Hash{}, fmt.Errorf("internal error: chunk hashes of %d of %d terms", m.next, m.terms)
	}
	return m.b.FileSum(), nil
}

// close releases the spill file.
func (m *merkleStream) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spill != nil {
		m.spill.Close()
		m.spill = nil
	}
}
