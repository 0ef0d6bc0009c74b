package upload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/scratch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// entryRecord is the size of one chunk in an EntryLog: its hash and raw length.
const entryRecord = 32 + 4

// entryFlushBytes is how much of an EntryLog is held in memory before it goes to its temp file
// (455 chunks: files under about 28 MiB never make one).
var entryFlushBytes = 455 * entryRecord // a variable for tests

// EntryLog is a file's chunks in file order (Config.KeepEntries): each one's hash and raw length.
// It is written to a temp file as it grows, so that what an upload holds per chunk does not grow
// with the file (a 16 GiB file has about 260,000 chunks: 10 MB, and more while a slice of them
// grew, held until the push's end, when its memory peaks). When no temp file can be made, it stays
// in memory (logged): the upload works, only its memory is no longer bounded.
//
// It is valid until Close or the Close of the session that made it. Concurrency: one goroutine at a
// time.
type EntryLog struct {
	dir    string
	log    zerolog.Logger
	f      *scratch.File // nil until the first flush, or when none could be made
	noFile bool
	buf    []byte // records not yet written; all of them when noFile
	n      int
	err    error // the first write error: reads fail with it
	rbuf   []byte
	closed bool
}

func newEntryLog(dir string, log zerolog.Logger) *EntryLog {
	return &EntryLog{dir: dir, log: log}
}

// add appends the file's next chunk.
func (l *EntryLog) add(e hash.Entry) {
	if l.err != nil {
		return
	}
	if e.Size > math.MaxUint32 {
		l.err = fmt.Errorf("upload: chunk %d of %d bytes cannot be logged", l.n, e.Size)
		return
	}
	if l.buf == nil && !l.noFile {
		l.buf = make([]byte, 0, entryFlushBytes)
	}
	l.buf = append(l.buf, e.Hash[:]...)
	l.buf = binary.LittleEndian.AppendUint32(l.buf, uint32(e.Size))
	l.n++
	if len(l.buf) >= entryFlushBytes {
		l.flush()
	}
}

// flush writes the buffered records to the temp file (made on first use).
func (l *EntryLog) flush() {
	if len(l.buf) == 0 || l.noFile || l.err != nil {
		return
	}
	if l.f == nil {
		f, err := scratch.Create(l.dir, "xet-upload-*.entries")
		if err != nil {
			l.noFile = true
			l.log.Warn().Err(err).Msg("upload: no temp file for a file's chunk list; keeping it in memory")
			return
		}
		l.f = f
	}
	if _, err := l.f.Append(l.buf); err != nil {
		l.err = fmt.Errorf("upload: writing a file's chunk list to its temp file: %w", err)
		return
	}
	l.buf = l.buf[:0]
}

// Len returns how many chunks the file has.
func (l *EntryLog) Len() int { return l.n }

// Read fills dst with the chunks from chunk i on (i+len(dst) ≤ Len).
func (l *EntryLog) Read(dst []hash.Entry, i int) error {
	if l.closed {
		return errors.New("upload: chunk list read after its Close")
	}
	if l.err != nil {
		return l.err
	}
	if i < 0 || i+len(dst) > l.n {
		return fmt.Errorf("upload: chunks %d to %d read from a list of %d", i, i+len(dst), l.n)
	}
	inFile := 0
	if l.f != nil {
		inFile = int(l.f.Size() / entryRecord)
	}
	for k := 0; k < len(dst); {
		j := i + k
		var b []byte
		if j < inFile {
			n := min(len(dst)-k, inFile-j)
			if cap(l.rbuf) < n*entryRecord {
				l.rbuf = make([]byte, n*entryRecord)
			}
			b = l.rbuf[:n*entryRecord]
			if err := l.f.ReadAt(b, int64(j)*entryRecord); err != nil {
				return fmt.Errorf("upload: reading back a file's chunk list: %w", err)
			}
		} else {
			off := (j - inFile) * entryRecord
			b = l.buf[off : off+(len(dst)-k)*entryRecord]
		}
		for ; len(b) > 0; b = b[entryRecord:] {
			copy(dst[k].Hash[:], b[:32])
			dst[k].Size = uint64(binary.LittleEndian.Uint32(b[32:]))
			k++
		}
	}
	return nil
}

// Close releases the temp file. Reads fail after it.
func (l *EntryLog) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.buf, l.rbuf = nil, nil
	if l.f != nil {
		return l.f.Close()
	}
	return nil
}
