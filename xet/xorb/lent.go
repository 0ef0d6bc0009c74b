package xorb

import (
	"fmt"
	"io"
	"sync"
)

// Lent is the payload of a record stored uncompressed that the body does not hold: its N bytes are
// read from the xorb's Src at Off when the body is sent. At is where they go in the serialized body
// (right after the record's header).
//
// A Builder lends payloads (see Builder.Lend) so that the raw bytes of incompressible chunks, most
// of a large upload, are not copied into a 64 MiB body buffer per xorb: on a VM whose host takes
// back freed memory, filling fresh memory costs about a second of CPU per GiB, more than chunking
// and hashing it.
type Lent struct {
	At  int
	Off int64
	N   int
}

// Size returns the length of the serialized body: Body and the lent payloads.
func (x *Xorb) Size() int {
	n := len(x.Body)
	for _, l := range x.Lent {
		n += l.N
	}
	return n
}

// Reader returns a reader of the serialized body (the records in order, lent payloads read from
// Src). Each call returns a new reader; readers may run concurrently (Src is read with ReadAt).
func (x *Xorb) Reader() io.Reader {
	return &bodyReader{x: x}
}

// Serialized returns the whole serialized body: Body itself when nothing is lent, else a new
// buffer with the lent payloads read in.
func (x *Xorb) Serialized() ([]byte, error) {
	if len(x.Lent) == 0 {
		return x.Body, nil
	}
	out := make([]byte, 0, x.Size())
	w := sliceWriter{&out}
	if _, err := x.Reader().(io.WriterTo).WriteTo(w); err != nil {
		return nil, err
	}
	return out, nil
}

type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// bodyReader reads a xorb's serialized body: pos is the serialized offset, next the first lent
// payload not wholly read yet.
type bodyReader struct {
	x    *Xorb
	pos  int
	next int
	lent int // bytes of lent payloads before pos
}

// Read fills p from the inline body, or reads a lent payload from Src straight into p.
func (r *bodyReader) Read(p []byte) (int, error) {
	x := r.x
	if len(p) == 0 {
		return 0, nil
	}
	if r.next < len(x.Lent) {
		l := x.Lent[r.next]
		if r.pos >= l.At { // inside lent payload r.next
			in := r.pos - l.At
			n := min(len(p), l.N-in)
			m, err := x.Src.ReadAt(p[:n], l.Off+int64(in))
			if m < n {
				if err == nil || err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return m, fmt.Errorf("xorb %s: reading a chunk's bytes back from the file at %d: %w", x.Hash, l.Off+int64(in), err)
			}
			r.pos += n
			r.lent += n
			if in+n == l.N {
				r.next++
			}
			return n, nil
		}
		p = p[:min(len(p), l.At-r.pos)] // inline bytes up to the payload
	}
	i := r.pos - r.lent
	if i >= len(x.Body) {
		return 0, io.EOF
	}
	n := copy(p, x.Body[i:])
	r.pos += n
	return n, nil
}

// WriteTo writes the rest of the body to w, reading lent payloads through a pooled 1 MiB buffer
// (fewer, larger reads than the HTTP transport's copy buffer would make).
func (r *bodyReader) WriteTo(w io.Writer) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// Lend makes the Builder lend the payloads of records stored uncompressed from src (see Lent)
// instead of copying them, for chunks added with AddFrom. src must hold the same bytes at those
// offsets until the xorb is sent (a file not written meanwhile); the CAS then checks every chunk's
// hash, so a file changed anyway makes the upload fail, never stores other bytes under the hash.
// Call it while the Builder is empty; nil stops lending.
func (b *Builder) Lend(src io.ReaderAt) {
	if len(b.chunks) == 0 {
		b.src = src
	}
}

// Own reads the lent payloads into the body, so the Builder no longer needs its source (a file
// about to be closed) and can be absorbed into another. It needs room for them in the body's
// buffer (a BodyCap buffer always has it) and grows it otherwise.
func (b *Builder) Own() error {
	if len(b.lent) == 0 {
		b.src = nil
		return nil
	}
	extra := 0
	for _, l := range b.lent {
		extra += l.N
	}
	b.reserve(extra)
	inline := len(b.body)
	b.body = b.body[:inline+extra]
	// From the last payload back: move the inline bytes after it to their place, then read it in.
	end, shift := inline+extra, extra
	for k := len(b.lent) - 1; k >= 0; k-- {
		l := b.lent[k]
		shift -= l.N
		from := l.At - shift // where the inline bytes after payload k start in the old body
		n := end - (l.At + l.N)
		copy(b.body[l.At+l.N:end], b.body[from:from+n])
		if m, err := b.src.ReadAt(b.body[l.At:l.At+l.N], l.Off); m < l.N {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			b.body = b.body[:inline] // unchanged lengths; the Builder is not usable after an error
			return fmt.Errorf("xorb: reading a chunk's bytes back from the file at %d: %w", l.Off, err)
		}
		end = l.At
	}
	b.lent, b.src = nil, nil
	return nil
}
