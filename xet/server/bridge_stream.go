package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// writePlan writes the bytes a reconstruction plan describes to w: every term's chunks decoded from
// the store's xorbs, the first OffsetIntoFirstRange bytes skipped, at most limit bytes written. It
// checks every term's decoded length against the plan. Terms are read one after another, each from
// a buffered section of its xorb file, so memory stays at one record plus buffers.
func writePlan(ctx context.Context, st Store, w io.Writer, p *casapi.ReconstructionV2, limit uint64) error {
	pw := &planWriter{w: w, skip: p.OffsetIntoFirstRange, limit: limit}
	for ti, t := range p.Terms {
		if pw.limit == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		xr, ok := findRange(p.Xorbs[t.Hash], t.Range)
		if !ok {
			return fmt.Errorf("term %d: plan has no fetch range of xorb %s covering chunks [%d,%d)", ti, t.Hash, t.Range.Start, t.Range.End)
		}
		if err := pw.term(ctx, st, t, xr); err != nil {
			return fmt.Errorf("term %d: %w", ti, err)
		}
	}
	if pw.limit > 0 && pw.limit != ^uint64(0) {
		return fmt.Errorf("plan ended %d bytes short: %w", pw.limit, io.ErrUnexpectedEOF)
	}
	return nil
}

// planWriter writes a plan's terms to w: the first skip bytes left out, at most limit written.
type planWriter struct {
	w           io.Writer
	skip, limit uint64
	raw         []byte        // the chunk decoded last
	br          *bufio.Reader // over the section of the term's xorb, reused
}

// term writes term t, read from fetch range xr of its xorb, until the limit; an error when the
// xorb's chunks do not decode to the term's length.
func (pw *planWriter) term(ctx context.Context, st Store, t casapi.Term, xr casapi.XorbRange) error {
	f, recordsLen, err := st.OpenXorb(ctx, t.Hash)
	if err != nil {
		return fmt.Errorf("open xorb %s: %w", t.Hash, err)
	}
	defer f.Close()
	if xr.Bytes.End >= uint64(recordsLen) {
		return fmt.Errorf("fetch range %d-%d past the %d record bytes of xorb %s", xr.Bytes.Start, xr.Bytes.End, recordsLen, t.Hash)
	}
	sec := io.NewSectionReader(f, int64(xr.Bytes.Start), int64(xr.Bytes.Len()))
	if pw.br == nil {
		pw.br = bufio.NewReaderSize(sec, 256<<10)
	} else {
		pw.br.Reset(sec)
	}
	rr := xorb.NewRecordReader(pw.br)
	var got uint64
	for c := xr.Chunks.Start; c < t.Range.End; c++ {
		pw.raw, _, err = rr.Next(pw.raw[:0])
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("xorb %s chunk %d: %w", t.Hash, c, err)
		}
		if c < t.Range.Start {
			continue
		}
		got += uint64(len(pw.raw))
		if err := pw.write(pw.raw); err != nil || pw.limit == 0 {
			return err
		}
	}
	if got != uint64(t.UnpackedLength) {
		return fmt.Errorf("xorb %s chunks [%d,%d) decode to %d bytes, plan says %d", t.Hash, t.Range.Start, t.Range.End, got, t.UnpackedLength)
	}
	return nil
}

// write writes what of a chunk's bytes is past the skip and within the limit.
func (pw *planWriter) write(out []byte) error {
	if pw.skip > 0 {
		n := min(pw.skip, uint64(len(out)))
		out, pw.skip = out[n:], pw.skip-n
	}
	if uint64(len(out)) > pw.limit {
		out = out[:pw.limit]
	}
	if len(out) == 0 {
		return nil
	}
	if _, err := pw.w.Write(out); err != nil {
		return err
	}
	pw.limit -= uint64(len(out))
	return nil
}

// findRange returns the fetch range of a xorb whose chunks cover c.
func findRange(fetches []casapi.XorbFetch, c casapi.ChunkRange) (casapi.XorbRange, bool) {
	for _, f := range fetches {
		for _, r := range f.Ranges {
			if r.Chunks.Start <= c.Start && c.End <= r.Chunks.End {
				return r, true
			}
		}
	}
	return casapi.XorbRange{}, false
}

// lookupObject resolves an LFS oid in namespace ns to its Xet file hash and size.
func lookupObject(ctx context.Context, st Store, ns, oid string) (hash.Hash, uint64, error) {
	sha, err := hash.ParseSHA256(oid)
	if err != nil {
		return hash.Hash{}, 0, &store.InvalidError{Reason: "oid: " + err.Error()}
	}
	return st.LookupSHA256(ctx, ns, sha)
}
