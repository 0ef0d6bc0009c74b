package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// streamMin: xorb bodies at least this long are checked as they arrive and written as they pass
// (putXorbStream) when the backend writes blobs as it reads them; shorter ones are read whole.
const streamMin = 8 << 20

// streamBufs recycles the read buffers of streamed xorb uploads (a buffer per upload in progress,
// the body itself never held).
var streamBufs = sync.Pool{New: func() any { b := make([]byte, streamBuf); return &b }}

// streamBuf holds the largest chunk record several times over.
const streamBuf = 1 << 20

// putXorbStream stores the xorb h from body, n bytes, without holding it: the backend reads the
// records as xorb.StreamIndex checks them (decoded, hashed, within the limits) and then the store's
// own footer, which it gets only once the whole body has proved to be the xorb h; a body that
// fails makes the backend's read fail, so nothing is made visible. onRaw is as for validateXorb.
// The result is PutXorb's, with what the body held once it was read whole.
func (s *Store) putXorbStream(ctx context.Context, h hash.Hash, body io.Reader, n int, onRaw func([]byte), proved func(raw uint64) error) (created bool, info *xorb.Info, err error) {
	buf := streamBufs.Get().(*[]byte)
	defer streamBufs.Put(buf)
	rb := &bodyReader{r: body}
	x := xorb.NewStreamIndex(rb, int64(n), *buf, xorb.IndexOptions{OnRaw: onRaw})
	defer x.Close()
	st := &xorbStream{h: h, x: x, body: rb, atLeast: int64(n - xorb.MaxFooterSize), proved: proved}
	created, err = s.be.Create(ctx, xorbName(h), st)
	if st.err != nil && st.err != io.EOF {
		return false, nil, st.err // the body's own failure, not the backend's
	}
	if err != nil {
		return false, nil, fmt.Errorf("storing xorb %s: %w", h, err)
	}
	if st.info == nil {
		// Another writer stored the same name first and the backend stopped reading: the rest of
		// the body is still checked, so that a bad upload is refused whether or not it raced.
		if _, err := io.Copy(io.Discard, st); err != nil {
			return false, nil, err
		}
	}
	if created {
		s.log.Debug().Str("xorb", h.String()).Int("chunks", len(st.info.Chunks)).Uint64("raw", st.info.RawBytes).
			Int("bytes", st.info.RecordsLen).Bool("streamed", true).Msg("xorb stored")
	}
	return created, st.info, nil
}

// xorbStream is the blob a streamed upload gives the backend: the body's records as they pass the
// checks, then the store's v1 footer once the body is found whole and right, then io.EOF. Any
// failure is returned by Read (and kept in err): a *InvalidError for a malformed body or another
// xorb, the read's error otherwise.
type xorbStream struct {
	h    hash.Hash
	x    *xorb.StreamIndex
	body *bodyReader
	pend []byte     // bytes handed out next
	info *xorb.Info // set once the whole body is checked
	err  error      // sticky; io.EOF once the footer was handed out
	// atLeast bounds the blob's length from below whenever it is read to the end: the body's
	// length less the largest footer (which the records then fill).
	atLeast int64
	// proved, when set, is called once the body is found whole and right, before the footer (which
	// makes the blob visible) is handed out; its failure fails the blob.
	proved func(raw uint64) error
}

// SizeAtLeast tells the backend the blob is large (no small-blob pack) before it reads any of it.
func (st *xorbStream) SizeAtLeast() int64 { return st.atLeast }

func (st *xorbStream) Read(p []byte) (int, error) {
	for len(st.pend) == 0 {
		if st.err != nil {
			return 0, st.err
		}
		if st.info != nil {
			st.err = io.EOF
			return 0, io.EOF
		}
		rec, err := st.x.Next()
		switch {
		case err == nil:
			st.pend = rec
		case err == io.EOF:
			info := st.x.Info()
			if err := checkXorbInfo(st.h, info); err != nil {
				st.err = err
				return 0, err
			}
			if st.proved != nil {
				if err := st.proved(info.RawBytes); err != nil {
					st.err = err
					return 0, err
				}
			}
			st.info = info
			st.pend = footerOf(st.h, info).AppendTo(nil)
		case st.body.err != nil || errors.Is(err, xorb.ErrStreamShort):
			st.err = fmt.Errorf("reading body: %w", err)
		default:
			st.err = invalid("xorb %s: %v", st.h, err)
		}
	}
	k := copy(p, st.pend)
	st.pend = st.pend[k:]
	return k, nil
}

// bodyReader remembers a failed read of the body, to tell it from a malformed one.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	k, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return k, err
}
