package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// The index entries are small binary blobs: a 4-byte magic, the payload, and a CRC-32C of both, so a
// damaged entry is reported as corrupt instead of being served.

var crcTable = crc32.MakeTable(crc32.Castagnoli)

const (
	magicFile   = "XSF1"
	magicSHA    = "XSS1"
	magicDedupe = "XSD1"
	// magicVerified: a file's content was hashed to this SHA-256 (verifiedName).
	magicVerified = "XSV1"

	fileRecordFixed = 4 + 8 + 32 + 4 // magic, size, sha256, term count
	fileTermSize    = 32 + 4 + 4 + 4 // xorb, unpacked bytes, chunk start, chunk end

	// maxRecordBytes bounds what is read of one index entry (a file of ~1.5M terms).
	maxRecordBytes = 64 << 20
)

// fileTerm is one term of a registered file.
type fileTerm struct {
	Xorb          hash.Hash
	UnpackedBytes uint32
	Start, End    uint32
}

// fileRecord is a registered file: its terms in order, its size and SHA-256 (FromSHA256 form).
type fileRecord struct {
	Size   uint64
	SHA256 hash.Hash
	Terms  []fileTerm
}

func sealRecord(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// openRecord checks the magic and checksum of an entry and returns its payload.
func openRecord(name string, b []byte, magic string) ([]byte, error) {
	if len(b) < len(magic)+4 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("store: corrupt entry %s: bad magic", name)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("store: corrupt entry %s: checksum mismatch", name)
	}
	return body[len(magic):], nil
}

func (r *fileRecord) marshal() []byte {
	b := make([]byte, 0, fileRecordFixed+fileTermSize*len(r.Terms)+4)
	b = append(b, magicFile...)
	b = binary.LittleEndian.AppendUint64(b, r.Size)
	b = append(b, r.SHA256[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Terms)))
	for _, t := range r.Terms {
		b = append(b, t.Xorb[:]...)
		b = binary.LittleEndian.AppendUint32(b, t.UnpackedBytes)
		b = binary.LittleEndian.AppendUint32(b, t.Start)
		b = binary.LittleEndian.AppendUint32(b, t.End)
	}
	return sealRecord(b)
}

func parseFileRecord(name string, b []byte) (*fileRecord, error) {
	p, err := openRecord(name, b, magicFile)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if len(p) < fileRecordFixed-4 {
		return nil, fmt.Errorf("store: corrupt entry %s: short", name)
	}
	r := &fileRecord{Size: le.Uint64(p)}
	copy(r.SHA256[:], p[8:40])
	n := int(le.Uint32(p[40:]))
	p = p[44:]
	if len(p) != n*fileTermSize {
		return nil, fmt.Errorf("store: corrupt entry %s: %d terms in %d bytes", name, n, len(p))
	}
	r.Terms = make([]fileTerm, n)
	var sum uint64
	for i := range r.Terms {
		q := p[i*fileTermSize:]
		t := &r.Terms[i]
		copy(t.Xorb[:], q[:32])
		t.UnpackedBytes, t.Start, t.End = le.Uint32(q[32:]), le.Uint32(q[36:]), le.Uint32(q[40:])
		if t.End <= t.Start {
			return nil, fmt.Errorf("store: corrupt entry %s: term %d range", name, i)
		}
		sum += uint64(t.UnpackedBytes)
	}
	if sum != r.Size {
		return nil, fmt.Errorf("store: corrupt entry %s: size %d but terms sum to %d", name, r.Size, sum)
	}
	return r, nil
}

// marshalSHA is a SHA-256 mapping's record: the file hash and size.
func marshalSHA(file hash.Hash, size uint64) []byte {
	b := append([]byte(magicSHA), file[:]...)
	return sealRecord(binary.LittleEndian.AppendUint64(b, size))
}

func parseSHA(name string, b []byte) (hash.Hash, uint64, error) {
	p, err := openRecord(name, b, magicSHA)
	if err != nil {
		return hash.Zero, 0, err
	}
	if len(p) != 40 {
		return hash.Zero, 0, fmt.Errorf("store: corrupt entry %s: length", name)
	}
	return hash.Hash(p[:32]), binary.LittleEndian.Uint64(p[32:]), nil
}

// verified marker: the SHA-256 a file's content was hashed to.
func marshalVerified(sha hash.Hash) []byte {
	return sealRecord(append([]byte(magicVerified), sha[:]...))
}

func parseVerified(name string, b []byte) (hash.Hash, error) {
	p, err := openRecord(name, b, magicVerified)
	if err != nil {
		return hash.Zero, err
	}
	if len(p) != 32 {
		return hash.Zero, fmt.Errorf("store: corrupt entry %s: length", name)
	}
	return hash.Hash(p), nil
}

// verifiedSHA256 is the SHA-256 file's content was once hashed to (in any repository), or
// ErrNotFound.
func (s *Store) verifiedSHA256(ctx context.Context, file hash.Hash) (hash.Hash, error) {
	name := verifiedName(file)
	b, err := s.readEntry(ctx, name)
	if err != nil {
		return hash.Zero, err
	}
	return parseVerified(name, b)
}

// dedupe entry: chunk -> xorb hash.
func marshalDedupe(x hash.Hash) []byte { return sealRecord(append([]byte(magicDedupe), x[:]...)) }

func parseDedupe(name string, b []byte) (hash.Hash, error) {
	p, err := openRecord(name, b, magicDedupe)
	if err != nil {
		return hash.Zero, err
	}
	if len(p) != 32 {
		return hash.Zero, fmt.Errorf("store: corrupt entry %s: length", name)
	}
	return hash.Hash(p), nil
}

// readEntry reads a whole small blob (ErrNotFound when missing).
// Entries of the indexes (file records, SHA-256 mappings, dedupe entries) are immutable and never
// removed, so what was read is kept in the entry cache (object stores only); a miss is never
// cached, so a write through another instance is found at once. Callers do not modify the bytes.
func (s *Store) readEntry(ctx context.Context, name string) ([]byte, error) {
	cacheable := s.entries != nil && (strings.HasPrefix(name, "files/") || strings.HasPrefix(name, "ns/") ||
		strings.HasPrefix(name, "dedupe/") || strings.HasPrefix(name, "verified/"))
	if cacheable {
		if b, ok := s.entries.get(name); ok {
			return b, nil
		}
	}
	b, err := s.readBlob(ctx, name)
	if err == nil && cacheable {
		s.entries.put(name, b)
	}
	return b, err
}

// readBlob reads a whole small blob (ErrNotFound when missing).
func (s *Store) readBlob(ctx context.Context, name string) ([]byte, error) {
	b, err := s.be.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	size := b.Size()
	if size > maxRecordBytes {
		return nil, fmt.Errorf("store: corrupt entry %s: %d bytes", name, size)
	}
	buf := make([]byte, size)
	if _, err := b.ReadAt(ctx, buf, 0); err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", name, err)
	}
	return buf, nil
}

func (s *Store) fileRecord(ctx context.Context, file hash.Hash) (*fileRecord, error) {
	name := fileName(file)
	b, err := s.readEntry(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", file, err)
	}
	return parseFileRecord(name, b)
}

// FileSize returns the size of a registered file (ErrNotFound when it is not registered).
func (s *Store) FileSize(ctx context.Context, file hash.Hash) (uint64, error) {
	return s.FileSizeIn(ctx, "", file)
}

// FileSizeIn is FileSize for a reader of repository repo: a file not registered there is
// ErrNotFound (access.go).
func (s *Store) FileSizeIn(ctx context.Context, repo string, file hash.Hash) (uint64, error) {
	if err := s.inRepo(ctx, repo, file); err != nil {
		return 0, err
	}
	r, err := s.fileRecord(ctx, file)
	if err != nil {
		return 0, err
	}
	return r.Size, nil
}

// LookupSHA256 returns the Xet file hash and size registered for a SHA-256 (hash.FromSHA256 form) in
// namespace ns: the verified mapping, else an unverified one an older store wrote (a download checks
// the SHA-256 of what it gets anyway), or ErrNotFound.
func (s *Store) LookupSHA256(ctx context.Context, ns string, sha hash.Hash) (hash.Hash, uint64, error) {
	file, size, err := s.LookupVerifiedSHA256(ctx, ns, sha)
	if !errors.Is(err, ErrNotFound) {
		return file, size, err
	}
	name := sha256Name(ns, sha)
	b, err := s.readEntry(ctx, name)
	if err != nil {
		return hash.Zero, 0, fmt.Errorf("sha256 %s: %w", sha, err)
	}
	return parseSHA(name, b)
}

// LookupVerifiedSHA256 is LookupSHA256 for verified mappings only: what may be answered as "already
// stored" to an uploader, since a wrong mapping would otherwise never be repaired.
func (s *Store) LookupVerifiedSHA256(ctx context.Context, ns string, sha hash.Hash) (hash.Hash, uint64, error) {
	name := sha256VerifiedName(ns, sha)
	b, err := s.readEntry(ctx, name)
	if err != nil {
		return hash.Zero, 0, fmt.Errorf("sha256 %s: %w", sha, err)
	}
	return parseSHA(name, b)
}
