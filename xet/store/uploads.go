package store

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// An upload record (ns/<namespace>/up/<xorb hash>) says that a repository uploaded a xorb, and
// how many raw bytes it holds. The store writes it whenever it accepts a xorb's body for a
// repository, whether or not quotas are on: a client's upload once its body proved to be the
// xorb, new or stored before (PutXorbAs), and the xorbs an in-process session built from the
// repository's data (PutBuiltXorb, PutPendingXorbs, and those a PutShardTrusted or
// PutShardWithXorbs shard lists). Nothing is recorded for the whole store (namespace ""). Two rules
// read it, and nothing else says the same:
//
//   - access (access.go): the repository holds every chunk of the xorb, so its shards may name
//     them (CanReference) and its readers may be handed the whole xorb (UploadedBy);
//   - usage (stats.go): the xorb counts whole against the repository's quota for as long as the
//     store keeps it, whether or not a file of the repository names it, so xorbs that no shard
//     registers count too (gc removes them only a grace period later).
//
// The writer learns whether its write created the record (XorbUpload.Recorded), or stored again a
// xorb its record named after gc deleted it (XorbUpload.Counted: either), which is how the server
// adds a xorb's bytes to its cached usage once.

const magicUpload = "XSU1"

func uploadName(ns string, x hash.Hash) string { return "ns/" + nsDir(ns) + "/up/" + x.String() }

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

// recordUpload records that a uploaded xorb x of raw bytes (the caller checked it: its body hashed
// to x here, or this process built it): the repository's upload record, and the user's grant
// (access.go). created reports whether this call wrote the repository's record. The writes are
// not cancelled with ctx: the xorb is stored, and a client gone meanwhile must not leave it
// unrecorded (uncounted).
func (s *Store) recordUpload(ctx context.Context, a Access, x hash.Hash, raw uint64) (created bool, err error) {
	var entries []blob.NewBlob
	if !a.whole() {
		entries = append(entries, blob.NewBlob{Name: uploadName(a.Repo, x), Data: marshalUpload(raw)})
	}
	if a.User != "" {
		entries = append(entries, blob.NewBlob{Name: userUpName(a.User, x), Data: marshalGrant(x)})
	}
	made, err := s.writeAccess(context.WithoutCancel(ctx), entries...)
	if err != nil {
		return false, fmt.Errorf("recording the upload of xorb %s: %w", x, err)
	}
	return !a.whole() && made[0], nil
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

// CountsXorb reports whether repository repo's usage counts xorb h whole already, so that sending
// it again adds nothing: repo uploaded h (its upload record) and the store keeps h, stored or in
// gc's trash, as countUploads counts it (the xorb route asks it before the body arrives;
// PutXorbAdmitted asks the same again once the body proved to be h). The whole store ("") keeps no
// records: a xorb it keeps adds nothing to it.
func (s *Store) CountsXorb(ctx context.Context, repo string, h hash.Hash) (bool, error) {
	if up, err := s.UploadedBy(ctx, repo, h); err != nil || !up {
		return false, err
	}
	kept, err := s.keepsXorb(ctx, h)
	if err != nil {
		return false, fmt.Errorf("xorb %s: %w", h, err)
	}
	return kept, nil
}

// keepsXorb reports whether xorb h takes space in the store: stored, or in gc's trash.
func (s *Store) keepsXorb(ctx context.Context, h hash.Hash) (bool, error) {
	if ok, err := s.be.Exists(ctx, xorbName(h)); ok || err != nil {
		return ok, err
	}
	return s.be.Exists(ctx, trashPrefix+xorbName(h))
}
