package xorb

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Info describes a xorb object as Index found it.
type Info struct {
	Hash       hash.Hash   // merkle hash computed from the decoded chunks
	Chunks     []ChunkInfo // hashes computed from the decoded chunks
	RecordsLen int         // length of the chunk record region
	RawBytes   uint64
	Footer     *Footer // the object's footer, nil when it has none
}

// IndexOptions adjusts Index.
type IndexOptions struct {
	// AllowTrailing accepts bytes after the last complete record that are neither a record nor a
	// footer (a cut-off object); they are ignored. Without it they are an error.
	AllowTrailing bool
	// OnRaw, when set, is called with the raw bytes of each chunk in order (valid only during the
	// call).
	OnRaw func(raw []byte)
}

// Index walks the chunk records of b (a xorb object with or without footer), decodes and hashes
// every chunk, and returns the chunk infos and the xorb hash computed from them. The records end at a
// footer ("XETBLOB"), which must then be a valid footer agreeing with the records (hashes, offsets,
// xorb hash), or at the end of b. A fragment of fewer than 7 bytes at the end that begins "XETBLOB"
// (a cut-off footer, as the reference dataset's xorb has) also ends the records. Any other trailing
// bytes, a malformed record, more than MaxChunks chunks, or a xorb over both MaxBytes raw and
// MaxSerializedBytes serialized (WithinLimits), are errors; memory use
// is bounded by the size of b.
func Index(b []byte) (*Info, error) { return IndexWith(b, IndexOptions{}) }

// IndexWith is Index with options.
func IndexWith(b []byte, o IndexOptions) (*Info, error) {
	info := &Info{}
	d := getDecoder()
	defer putDecoder(d)
	hasher := hash.NewChunkHasher()
	var raw, scratch []byte
	pos := 0
	for pos < len(b) {
		rest := b[pos:]
		if isFooterPrefix(rest) {
			break
		}
		if len(info.Chunks) == MaxChunks {
			return nil, fmt.Errorf("xorb: more than %d chunks", MaxChunks)
		}
		var h RecordHeader
		var n int
		var err error
		raw, scratch, h, n, err = d.recordRaw(scratch, rest) // uncompressed payloads are hashed in place
		if err != nil {
			if o.AllowTrailing && errors.Is(err, ErrTruncated) {
				break
			}
			return nil, fmt.Errorf("xorb: chunk %d at offset %d: %w", len(info.Chunks), pos, err)
		}
		if !WithinLimits(info.RawBytes+uint64(len(raw)), pos+n) {
			return nil, fmt.Errorf("xorb: chunk %d takes the xorb over %d raw bytes and %d serialized bytes", len(info.Chunks), MaxBytes, MaxSerializedBytes)
		}
		if o.OnRaw != nil {
			o.OnRaw(raw)
		}
		info.Chunks = append(info.Chunks, ChunkInfo{
			Hash:     hasher.Sum(raw),
			RawLen:   h.RawLen,
			Scheme:   h.Scheme,
			Start:    uint32(pos),
			End:      uint32(pos + n),
			RawStart: info.RawBytes,
		})
		info.RawBytes += uint64(len(raw))
		pos += n
	}
	info.RecordsLen = pos
	info.Hash = hash.Merkle(chunkEntries(info.Chunks))
	if pos+len(footerMagic) <= len(b) && bytes.Equal(b[pos:pos+len(footerMagic)], footerMagic) {
		f, start, err := ParseFooter(b)
		if err != nil {
			return nil, err
		}
		if start != pos {
			return nil, fmt.Errorf("xorb: footer found at offset %d starts at %d per its length", pos, start)
		}
		if err := f.check(info); err != nil {
			return nil, err
		}
		info.Footer = f
	}
	return info, nil
}

// isFooterPrefix reports whether b starts with "XETBLOB", or is a shorter prefix of it.
func isFooterPrefix(b []byte) bool {
	if len(b) >= len(footerMagic) {
		return bytes.Equal(b[:len(footerMagic)], footerMagic)
	}
	return bytes.HasPrefix(footerMagic, b)
}

// check compares a footer with what the records gave.
func (f *Footer) check(info *Info) error {
	if len(f.ChunkHashes) != len(info.Chunks) {
		return fmt.Errorf("xorb footer lists %d chunks, the records hold %d", len(f.ChunkHashes), len(info.Chunks))
	}
	for i, c := range info.Chunks {
		if f.ChunkHashes[i] != c.Hash {
			return fmt.Errorf("xorb footer: chunk %d hash %s, the data hashes to %s", i, f.ChunkHashes[i], c.Hash)
		}
		if f.BoundaryEnds[i] != c.End {
			return fmt.Errorf("xorb footer: chunk %d ends at %d, the record at %d", i, f.BoundaryEnds[i], c.End)
		}
		if f.RawEnds != nil && uint64(f.RawEnds[i]) != c.RawStart+uint64(c.RawLen) {
			return fmt.Errorf("xorb footer: chunk %d raw end %d, the data gives %d", i, f.RawEnds[i], c.RawStart+uint64(c.RawLen))
		}
	}
	if f.Hash != info.Hash {
		return fmt.Errorf("xorb footer: hash %s, the chunks give %s", f.Hash, info.Hash)
	}
	return nil
}
