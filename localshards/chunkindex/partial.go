package chunkindex

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// ErrBusy: another process is downloading into the same partial file.
var ErrBusy = errors.New("another process holds this partial download")

// Partial records the verified part of a download in progress at path, in path+".xetmap": each
// term, once written and verified, is appended (no fsync: after a crash of the machine a kept
// span whose bytes were lost fails its hash check and is fetched again). The next attempt at the
// same file reads it back (Spans) and keeps those bytes. An exclusive lock on the record keeps two
// processes out of one partial file. Add may be called from several goroutines at once (a
// download's ranges: download.Request.OnPart).
type Partial struct {
	path  string
	f     *os.File
	spans []span.Span
	mu    sync.Mutex // Add's record buffer and write
	buf   []byte
}

// OpenPartial opens (or starts) the record of the download of file (size bytes) at path. A record
// of another file, or none, starts empty.
func OpenPartial(path string, file hash.Hash, size int64) (*Partial, error) {
	f, err := lockRecord(path + ".xetmap")
	if err != nil {
		return nil, err
	}
	p := &Partial{path: path, f: f}
	if err := p.load(file, size); err != nil {
		f.Close()
		return nil, err
	}
	return p, nil
}

// lockRecord opens the record at name and locks it, as long as name still leads to the file it
// locked: a holder that finished removed the record before it let the lock go, and a lock on the
// removed file would not keep out the next process, which creates the record again and locks that.
// The record is then opened again; a second such race in a row is taken as busy.
func lockRecord(name string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("partial download record: %w", err)
		}
		partialOpened()
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, err
		}
		same, err := namesFile(name, f)
		if same {
			return f, nil
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("partial download record: %w", err)
		}
		if attempt == 1 {
			return nil, ErrBusy
		}
	}
}

// namesFile says whether name leads to the open file f; a name that leads nowhere is no error.
func namesFile(name string, f *os.File) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil && os.SameFile(held, named), err
}

// partialOpened runs between a record's open and its lock: a variable so that a test can finish
// the record's holder there.
var partialOpened = func() {}

// load reads the record's spans when it is of this file, else starts it again.
func (p *Partial) load(file hash.Hash, size int64) error {
	fi, err := p.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= headerSize && fi.Size() <= 1<<30 {
		b := make([]byte, fi.Size())
		if _, err := p.f.ReadAt(b, 0); err == nil {
			if h, err := parseHeader(b); err == nil && h.file == file && h.size == size {
				spans, good := parseRecords(b[headerSize:], size)
				if _, err := p.f.Seek(int64(headerSize+good), 0); err != nil {
					return err
				}
				if err := p.f.Truncate(int64(headerSize + good)); err != nil {
					return err
				}
				for i := range spans {
					spans[i].Path = p.path
				}
				p.spans = spans
				return nil
			}
		}
	}
	if err := p.f.Truncate(0); err != nil {
		return err
	}
	if _, err := p.f.Seek(0, 0); err != nil {
		return err
	}
	_, err = p.f.Write(header{size: size, file: file}.append(nil))
	return err
}

// Spans returns the verified spans of an earlier attempt (span.Local), with Path the partial
// file.
func (p *Partial) Spans([]hash.Hash) []span.Span { return p.spans }

// Add appends a verified span of the output.
func (p *Partial) Add(sp span.Span) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = appendRecord(p.buf[:0], sp)
	_, err := p.f.Write(p.buf)
	return err
}

// Close releases the record; done removes it (the download is complete or abandoned).
func (p *Partial) Close(done bool) error {
	if done {
		fsretry.Remove(p.f.Name())
	}
	return p.f.Close()
}
