package store

import (
	"context"
	"errors"
	"fmt"
	gohash "hash"
	"io"
	"math"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// checkSHA256s checks each planned file's SHA-256, within the registration's budget when budgeted
// (budget.go): a file verified before (its marker, or a verified mapping in ns) is not hashed; one
// whose content fits the budget is read and hashed, and the shard is refused when it does not hash
// to the SHA-256 it claims; the others stay unverified (plan.verified false). cost counts what it
// hashed.
func (s *Store) checkSHA256s(ctx context.Context, ns string, plans []filePlan, budgeted bool, cost *regCost) error {
	b := hashBudget{left: FreeHashBytes}
	if !budgeted {
		b.left = math.MaxInt64
	}
	taken := false
	defer func() {
		if taken {
			s.credits.add(ns, b.unspentCredit(), s.now())
		}
	}()
	for i := range plans {
		p := &plans[i]
		ok, err := s.knownSHA256(ctx, ns, p)
		if err != nil || ok {
			p.verified = ok
			if err != nil {
				return err
			}
			continue
		}
		h, done := s.chainPrefix(p.rec) // the first terms, hashed as their xorbs arrived (chain.go)
		var need int64
		for _, t := range p.rec.Terms[done:] {
			need += int64(t.UnpackedBytes)
		}
		if need > b.left && !taken && budgeted {
			b.credit, taken = s.credits.take(ns, s.now()), true
			b.left += b.credit
		}
		if !b.pay(need) {
			cost.unverified++
			continue
		}
		cost.hashed += need
		got, err := s.hashRest(ctx, h, p.rec.Terms[done:])
		if err != nil {
			return fmt.Errorf("hashing file %s: %w", p.file, err)
		}
		if got != p.rec.SHA256.SHA256() {
			return errWrongSHA256(p.file, p.rec.SHA256)
		}
		p.verified = true
	}
	return nil
}

// markerMinBytes is the size from which a file's verified marker is looked up before it is hashed.
const markerMinBytes = 1 << 20

// errWrongSHA256 refuses a file whose content does not hash to the SHA-256 its shard names. It
// does not say what the content hashes to: the client sent the SHA-256, not the content.
func errWrongSHA256(file, claimed hash.Hash) error {
	d := claimed.SHA256()
	return invalid("file %s: its content does not hash to %x, the SHA-256 the shard names (the LFS oid): not registered", file, d)
}

// knownSHA256 reports whether p's file was hashed to its SHA-256 before: a verified marker (any
// repository; looked up for files of markerMinBytes or more) naming it, or a verified mapping in ns
// to the file. A marker naming another SHA-256 refuses the shard at once.
func (s *Store) knownSHA256(ctx context.Context, ns string, p *filePlan) (bool, error) {
	if p.rec.Size >= markerMinBytes { // a small file costs less to hash than a lookup more
		sha, err := s.verifiedSHA256(ctx, p.file)
		switch {
		case err == nil && sha == p.rec.SHA256:
			return true, nil
		case err == nil:
			return false, errWrongSHA256(p.file, p.rec.SHA256)
		case !errors.Is(err, ErrNotFound):
			return false, err
		}
	}
	if f, _, err := s.LookupVerifiedSHA256(ctx, ns, p.rec.SHA256); err == nil && f == p.file {
		return true, nil
	}
	return false, nil
}

// hashRest hashes the content of terms onto h and returns the sum.
func (s *Store) hashRest(ctx context.Context, h gohash.Hash, terms []fileTerm) ([32]byte, error) {
	s.log.Debug().Int("terms", len(terms)).Msg("sha256 check of a new file")
	var buf []byte
	for _, t := range terms {
		var err error
		if buf, err = s.hashTerm(ctx, h, t, buf); err != nil {
			return [32]byte{}, err
		}
	}
	return [32]byte(h.Sum(nil)), nil
}

// hashTerm writes the content of one term to h; buf is a record buffer to reuse (returned grown).
func (s *Store) hashTerm(ctx context.Context, h io.Writer, t fileTerm, buf []byte) ([]byte, error) {
	m, err := s.xorbMeta(ctx, t.Xorb)
	if err != nil {
		return buf, err
	}
	f, err := s.openXorbBlob(ctx, t.Xorb)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	start, end := int64(m.recordStart(int(t.Start))), int64(m.recordStart(int(t.End)))
	src, err := f.Section(ctx, start, end-start) // one streamed read of the term
	if err != nil {
		return buf, fmt.Errorf("xorb %s: %w", t.Xorb, err)
	}
	defer src.Close()
	// The records are scanned in a buffer sized to the term (a small file's is a few KB: a fixed
	// 1 MiB per term was most of what a server allocated for a push of small files), and an
	// uncompressed payload, most of a large file, is hashed where it lies (xorb.RecordRaw).
	var scan []byte
	if n := end - start; n < scanBufSize {
		scan = make([]byte, n)
	} else {
		sb := scanBufs.Get().(*[]byte)
		defer scanBufs.Put(sb)
		scan = *sb
	}
	rs := xorb.NewRecordScanner(src, scan, end-start)
	for {
		rec, _, err := rs.Next()
		if err == io.EOF {
			return buf, nil
		}
		var raw []byte
		if err == nil {
			raw, buf, _, _, err = xorb.RecordRaw(buf, rec)
		}
		if err != nil {
			return buf, fmt.Errorf("xorb %s: %w", t.Xorb, err)
		}
		s.hashed.Add(int64(len(raw)))
		h.Write(raw)
	}
}

// scanBufs recycles the 1 MiB buffers the SHA-256 check scans long terms through (it holds any
// record: header and at most MaxChunkCompressed bytes).
var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanBufSize); return &b }}

const scanBufSize = 1 << 20
