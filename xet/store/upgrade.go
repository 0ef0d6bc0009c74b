package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// upgrade brings a store of an older format to FormatVersion and returns the version it then has.
// Format 3 added the upload records (uploads.go) and the access records (access.go): a store of
// format 1 or 2 gets, for each file a repository's mapping names, the file's membership of the
// repository and a "shown" grant of each xorb the file names (registrations made before the
// records still count for their repository), and for each verified mapping the file's verified
// marker. No upload record is written: which repository sent a xorb was not kept, so a xorb of
// an older store counts in a repository's usage by the chunk ranges its files name. Every entry is created once, so an
// interrupted upgrade is run again whole at the next Open. Storage that takes no writes keeps its
// version (this process then sees no access records: files of repositories are not found).
func (m *Maint) upgrade(where string, from int) (int, error) {
	ctx := context.Background()
	n, err := m.recordLegacyAccess(ctx)
	var werr writeError
	switch {
	case errors.As(err, &werr):
		m.s.log.Warn().Err(err).Str("store", where).Msg("store not upgraded (storage that takes no writes?)")
		return from, nil
	case err != nil:
		return from, fmt.Errorf("store %s: upgrading from format %d: %w", where, from, err)
	}
	if err := m.setFormat(ctx, from, FormatVersion); err != nil {
		m.s.log.Warn().Err(err).Str("store", where).Msg("store format version not recorded (storage that takes no writes?)")
		return from, nil
	}
	if n > 0 {
		m.s.log.Info().Str("store", where).Int("from", from).Int("to", FormatVersion).Int("files", n).
			Msg("store upgraded: access records written for the files registered before")
	}
	return FormatVersion, nil
}

// writeError is a failed write of the upgrade (the storage may be read-only).
type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

func formatBlob(v int) []byte { return []byte(formatPrefix + strconv.Itoa(v) + "\n") }

// setFormat records format version v, replacing the format blob of version from (>1) first.
func (m *Maint) setFormat(ctx context.Context, from, v int) error {
	if from > 1 {
		err := m.s.be.Delete(ctx, formatName)
		if errors.Is(err, blob.ErrPacked) {
			sw, ok := m.s.raw.(blob.PackSweeper)
			if !ok {
				return err
			}
			var done []blob.PackChange
			if done, err = sw.SweepPacked(ctx, []blob.PackChange{{Name: formatName}}); err == nil && len(done) == 0 {
				err = errors.New("the format blob's pack is held by another writer")
			}
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("replacing the format blob: %w", err)
		}
	}
	if _, err := m.s.be.Create(ctx, formatName, bytes.NewReader(formatBlob(v))); err != nil {
		return err
	}
	b, err := readFormat(ctx, m.s.be)
	if err != nil {
		return err
	}
	if got, err := parseFormat(b); err != nil || got < v {
		return fmt.Errorf("the format blob reads %q after the upgrade", b)
	}
	return nil
}

// recordLegacyAccess writes the access records of every file a repository's SHA-256 mapping names
// (see upgrade) and returns how many mappings it went through.
func (m *Maint) recordLegacyAccess(ctx context.Context) (int, error) {
	names, err := m.s.be.List(ctx, "ns/")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		kind, sha, ok := classify(name)
		dir := strings.Split(name, "/")[1]
		if !ok || (kind != "sha256" && kind != "sha256v") || dir == nsDir("") {
			continue
		}
		blobs, err := m.legacyAccess(ctx, name, dir, sha, kind == "sha256v")
		if err != nil {
			return n, err
		}
		if _, err := m.s.be.CreateBatch(ctx, blobs); err != nil {
			return n, writeError{err}
		}
		if n++; n%10000 == 0 {
			m.s.log.Info().Int("files", n).Msg("store upgrade: access records")
		}
	}
	return n, nil
}

// legacyAccess is the access records of the mapping name (of namespace directory dir, for oid sha).
func (m *Maint) legacyAccess(ctx context.Context, name, dir string, sha hash.Hash, verified bool) ([]blob.NewBlob, error) {
	b, err := m.s.readEntry(ctx, name)
	if err != nil {
		return nil, err
	}
	file, _, err := parseSHA(name, b)
	if err != nil {
		return nil, err
	}
	rec, err := m.s.fileRecord(ctx, file)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // a dangling mapping: fsck reports it
	}
	if err != nil {
		return nil, err
	}
	blobs := []blob.NewBlob{{Name: "ns/" + dir + "/files/" + file.String(), Data: marshalGrant(file)}}
	seen := map[hash.Hash]bool{}
	for _, t := range rec.Terms {
		if !seen[t.Xorb] {
			seen[t.Xorb] = true
			blobs = append(blobs, blob.NewBlob{Name: "ns/" + dir + "/shown/" + t.Xorb.String(), Data: marshalGrant(t.Xorb)})
		}
	}
	if verified && rec.SHA256 == sha {
		blobs = append(blobs, blob.NewBlob{Name: verifiedName(file), Data: marshalVerified(sha)})
	}
	return blobs, nil
}
