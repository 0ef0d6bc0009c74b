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
	for pos := 0; pos < len(b); pos = info.RecordsLen {
		rest := b[pos:]
		if isFooterPrefix(rest) {
			break
		}
		if len(info.Chunks) == MaxChunks {
			return nil, errTooManyChunks
		}
		var h RecordHeader
		var n int
		var err error
		raw, scratch, h, n, err = d.recordRaw(scratch, rest) // uncompressed payloads are hashed in place
		if err != nil {
			if o.AllowTrailing && errors.Is(err, ErrTruncated) {
				break
			}
			return nil, chunkError(len(info.Chunks), pos, err)
		}
		if err := info.add(hasher, raw, h, n, o.OnRaw); err != nil {
			return nil, err
		}
	}
	rest := b[info.RecordsLen:]
	if o.AllowTrailing && !isFooterPrefix(rest) {
		rest = nil // ignored trailing bytes of a cut-off object
	}
	if err := info.end(rest); err != nil {
		return nil, err
	}
	return info, nil
}

var (
	errTooManyChunks = fmt.Errorf("xorb: more than %d chunks", MaxChunks)
	errClosed        = errors.New("xorb: stream index closed")
)

// chunkError wraps the error of the record of chunk i at offset pos.
func chunkError(i, pos int, err error) error {
	return fmt.Errorf("xorb: chunk %d at offset %d: %w", i, pos, err)
}

// add appends the chunk of a decoded record of n bytes (raw its bytes, h its header) to the records
// so far, within the limits, handing raw to onRaw first (when set).
func (info *Info) add(hasher *hash.ChunkHasher, raw []byte, h RecordHeader, n int, onRaw func([]byte)) error {
	if len(info.Chunks) == MaxChunks {
		return errTooManyChunks
	}
	if !WithinLimits(info.RawBytes+uint64(len(raw)), info.RecordsLen+n) {
		return fmt.Errorf("xorb: chunk %d takes the xorb over %d raw bytes and %d serialized bytes", len(info.Chunks), MaxBytes, MaxSerializedBytes)
	}
	if onRaw != nil {
		onRaw(raw)
	}
	info.Chunks = append(info.Chunks, ChunkInfo{
		Hash:     hasher.Sum(raw),
		RawLen:   h.RawLen,
		Scheme:   h.Scheme,
		Start:    uint32(info.RecordsLen),
		End:      uint32(info.RecordsLen + n),
		RawStart: info.RawBytes,
	})
	info.RawBytes += uint64(len(raw))
	info.RecordsLen += n
	return nil
}

// end completes the info from the bytes after the records: nothing, a footer (which must agree with
// the records), or a cut-off footer of fewer than 7 bytes.
func (info *Info) end(rest []byte) error {
	info.Hash = hash.Merkle(chunkEntries(info.Chunks))
	switch {
	case len(rest) == 0:
		return nil
	case len(rest) < len(footerMagic) && isFooterPrefix(rest):
		return nil
	case !isFooterPrefix(rest):
		return fmt.Errorf("xorb: %d bytes after the records are neither a record nor a footer", len(rest))
	}
	f, start, err := parseFooterAt(rest, info.RecordsLen)
	if err != nil {
		return err
	}
	if start != info.RecordsLen {
		return fmt.Errorf("xorb: footer found at offset %d starts at %d per its length", info.RecordsLen, start)
	}
	if err := f.check(info); err != nil {
		return err
	}
	info.Footer = f
	return nil
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
