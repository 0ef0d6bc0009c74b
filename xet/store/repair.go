package store

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// ErrDamaged: a stored xorb's bytes, read whole, are not the xorb (they fail the checks an upload
// passes). A failure to read them is not damage: it is returned as it is, and nothing is moved.
var ErrDamaged = errors.New("stored xorb damaged")

// VerifyXorb reads the stored xorb h whole and checks it as an upload is checked (ValidateXorb):
// every chunk decoded and hashed, and the xorb hash recomputed. It is what Check does not do (it
// reads footers only): a flipped byte in chunk data shows here. An error matching ErrDamaged says
// the bytes read are wrong; any other is a failure to read them (transient, or a missing xorb).
func (m *Maint) VerifyXorb(ctx context.Context, h hash.Hash) error { return m.s.verifyXorb(ctx, h) }

// verifyXorb is VerifyXorb, also run by an upload of a xorb already stored (replaceDamaged).
func (s *Store) verifyXorb(ctx context.Context, h hash.Hash) error {
	b, err := s.be.Open(ctx, xorbName(h))
	if err != nil {
		return fmt.Errorf("xorb %s: %w", h, err)
	}
	defer b.Close()
	rd := &readErrs{r: blob.ReaderAt(ctx, b)}
	m, err := parseStoredFooter(h, rd, b.Size())
	if rd.err != nil {
		return fmt.Errorf("xorb %s: reading its footer: %w", h, rd.err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	data := make([]byte, m.recordsLen())
	if _, err := b.ReadAt(ctx, data, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("xorb %s: %w", h, err)
	}
	if _, err = ValidateXorb(h, data); err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return nil
}

// readErrs is a reader that keeps its first failure, to tell a read that failed from bytes that
// parse wrong.
type readErrs struct {
	r   io.ReaderAt
	err error
}

func (r *readErrs) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) && r.err == nil {
		r.err = err
	}
	return n, err
}

// replaceDamaged moves the stored copy of xorb h aside when it is damaged (verifyXorb, ErrDamaged),
// so that the name can be written again. replaced is false when the stored copy is sound, or could
// not be read now: a read failure is not damage, and the copy stays (the next upload checks it
// again).
func (s *Store) replaceDamaged(ctx context.Context, h hash.Hash) (replaced bool, err error) {
	verr := s.verifyXorb(ctx, h)
	switch {
	case verr == nil || errors.Is(verr, ErrNotFound):
		return false, nil
	case !errors.Is(verr, ErrDamaged):
		s.log.Warn().Str("xorb", h.String()).AnErr("read", verr).Msg("stored xorb not checked (read failed): kept")
		return false, nil
	}
	if err := s.be.Quarantine(ctx, xorbName(h)); err != nil && !errors.Is(err, ErrNotFound) {
		return false, fmt.Errorf("xorb %s: the stored copy is damaged (%v) and cannot be moved aside: %w", h, verr, err)
	}
	s.meta.drop(h)
	s.log.Warn().Str("xorb", h.String()).AnErr("damage", verr).Msg("stored xorb damaged: moved aside, replaced by the upload")
	return true, nil
}

// FileComplete reports whether every xorb the file's record names is stored: what an upload may be
// told "already stored" on (a file whose xorb was moved aside as damaged must be sent again).
func (s *Store) FileComplete(ctx context.Context, file hash.Hash) (bool, error) {
	rec, err := s.fileRecord(ctx, file)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	seen := make(map[hash.Hash]bool, len(rec.Terms))
	for _, t := range rec.Terms {
		if seen[t.Xorb] {
			continue
		}
		seen[t.Xorb] = true
		ok, err := s.HasXorb(ctx, t.Xorb)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}
