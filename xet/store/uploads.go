package store

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// An upload record (ns/<namespace>/xorbs/<xorb hash>) says that a repository uploaded a xorb, and
// how many raw bytes it holds: the xorb counts whole against the repository's quota for as long as
// the store keeps it (stats.go), whether or not a file of the repository names it, so xorbs that
// no shard registers count too (gc removes them only a grace period later). The server writes one
// for each xorb it accepts while quotas are on.

const magicUpload = "XSU1"

func uploadName(ns string, h hash.Hash) string { return "ns/" + nsDir(ns) + "/xorbs/" + h.String() }

func marshalUpload(raw uint64) []byte {
	return sealRecord(binary.LittleEndian.AppendUint64([]byte(magicUpload), raw))
}

func parseUpload(name string, b []byte) (uint64, error) {
	p, err := openRecord(name, b, magicUpload)
	if err != nil {
		return 0, err
	}
	if len(p) != 8 {
		return 0, fmt.Errorf("store: corrupt entry %s: length", name)
	}
	return binary.LittleEndian.Uint64(p), nil
}

// RecordUpload records that repository ns uploaded xorb h of raw bytes (see above); created is
// false when it was recorded before. The caller vouches for raw (the xorb's footer, or the xorb it
// built).
func (s *Store) RecordUpload(ctx context.Context, ns string, h hash.Hash, raw uint64) (bool, error) {
	created, err := s.be.Create(ctx, uploadName(ns, h), blob.NewBytesBlob(marshalUpload(raw)))
	if err != nil {
		return false, fmt.Errorf("recording the upload of xorb %s: %w", h, err)
	}
	return created, nil
}

// countUploads adds to c the xorbs the upload records among names (a namespace's entries) name,
// those the store still keeps (or holds in its trash): each counts whole, once.
func (s *Store) countUploads(ctx context.Context, names []string, c *usageCounter) error {
	for _, name := range names {
		kind, h, ok := classify(name)
		if !ok || kind != "upload" || c.uploads[h] {
			continue
		}
		b, err := s.readEntry(ctx, name)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		raw, err := parseUpload(name, b)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		kept, err := s.keepsXorb(ctx, h)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		if kept {
			c.addUpload(h, raw)
		}
	}
	return nil
}

// keepsXorb reports whether xorb h takes space in the store: stored, or in gc's trash.
func (s *Store) keepsXorb(ctx context.Context, h hash.Hash) (bool, error) {
	if ok, err := s.be.Exists(ctx, xorbName(h)); ok || err != nil {
		return ok, err
	}
	return s.be.Exists(ctx, trashPrefix+xorbName(h))
}
