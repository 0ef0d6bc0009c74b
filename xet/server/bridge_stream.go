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
	skip := p.OffsetIntoFirstRange
	var raw []byte
	var br *bufio.Reader
	for ti, t := range p.Terms {
		if limit == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		xr, ok := findRange(p.Xorbs[t.Hash], t.Range)
		if !ok {
			return fmt.Errorf("term %d: plan has no fetch range of xorb %s covering chunks [%d,%d)", ti, t.Hash, t.Range.Start, t.Range.End)
		}
		f, recordsLen, err := st.OpenXorb(ctx, t.Hash)
		if err != nil {
			return fmt.Errorf("term %d: open xorb %s: %w", ti, t.Hash, err)
		}
		if xr.Bytes.End >= uint64(recordsLen) {
			f.Close()
			return fmt.Errorf("term %d: fetch range %d-%d past the %d record bytes of xorb %s", ti, xr.Bytes.Start, xr.Bytes.End, recordsLen, t.Hash)
		}
		sec := io.NewSectionReader(f, int64(xr.Bytes.Start), int64(xr.Bytes.Len()))
		if br == nil {
			br = bufio.NewReaderSize(sec, 256<<10)
		} else {
			br.Reset(sec)
		}
		rr := xorb.NewRecordReader(br)
		var got uint64
		for c := xr.Chunks.Start; c < t.Range.End; c++ {
			raw, _, err = rr.Next(raw[:0])
			if err != nil {
				f.Close()
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("term %d: xorb %s chunk %d: %w", ti, t.Hash, c, err)
			}
			if c < t.Range.Start {
				continue
			}
			got += uint64(len(raw))
			out := raw
			if skip > 0 {
				n := min(skip, uint64(len(out)))
				out, skip = out[n:], skip-n
			}
			if uint64(len(out)) > limit {
				out = out[:limit]
			}
			if len(out) > 0 {
				if _, err := w.Write(out); err != nil {
					f.Close()
					return err
				}
				limit -= uint64(len(out))
			}
			if limit == 0 {
				f.Close()
				return nil
			}
		}
		f.Close()
		if got != uint64(t.UnpackedLength) {
			return fmt.Errorf("term %d: xorb %s chunks [%d,%d) decode to %d bytes, plan says %d", ti, t.Hash, t.Range.Start, t.Range.End, got, t.UnpackedLength)
		}
	}
	if limit > 0 && limit != ^uint64(0) {
		return fmt.Errorf("plan ended %d bytes short: %w", limit, io.ErrUnexpectedEOF)
	}
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
