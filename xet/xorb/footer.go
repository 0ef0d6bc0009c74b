package xorb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Footer is the XETBLOB metadata that may follow the chunk records of a stored xorb (xet-core's
// XorbObjectInfoV1; version 0 is read too). BoundaryEnds[i] is the end offset of record i in the
// chunk region (headers included); RawEnds[i] the cumulative end of chunk i's raw bytes. A version-0
// footer has no raw ends: RawEnds is nil after ParseFooter.
type Footer struct {
	Version      uint8
	Hash         hash.Hash
	ChunkHashes  []hash.Hash
	BoundaryEnds []uint32
	RawEnds      []uint32
}

// ErrNoFooter is returned (wrapped) by ParseFooter when the object does not end with a footer.
var ErrNoFooter = errors.New("xorb: no XETBLOB footer")

const (
	footerTrailer = 4 // u32 info_length after the footer
	footerV1Fixed = 92
	footerV0Fixed = 60
)

var (
	hashesMagic     = []byte("XBLBHSH")
	boundariesMagic = []byte("XBLBBND")
)

// Size returns the number of bytes AppendTo writes.
func (f *Footer) Size() int {
	n := len(f.ChunkHashes)
	if f.Version == 0 {
		return footerV0Fixed + 36*n + footerTrailer
	}
	return footerV1Fixed + 40*n + footerTrailer
}

// AppendTo appends the footer, with its trailing u32 length, to dst: the version-1 layout (as
// xet-core writes it), or the version-0 layout when f.Version is 0. BoundaryEnds (and for version 1
// RawEnds) must have one entry per chunk hash; a Footer that breaks this is a programming error and
// panics.
func (f *Footer) AppendTo(dst []byte) []byte {
	n := len(f.ChunkHashes)
	if len(f.BoundaryEnds) != n || (f.Version != 0 && len(f.RawEnds) != n) {
		panic(fmt.Sprintf("xorb: Footer with %d hashes, %d boundaries, %d raw ends", n, len(f.BoundaryEnds), len(f.RawEnds)))
	}
	le := binary.LittleEndian
	dst = append(dst, footerMagic...)
	if f.Version == 0 {
		dst = append(dst, 0)
		dst = append(dst, f.Hash[:]...)
		dst = le.AppendUint32(dst, uint32(n))
		for _, b := range f.BoundaryEnds {
			dst = le.AppendUint32(dst, b)
		}
		for _, h := range f.ChunkHashes {
			dst = append(dst, h[:]...)
		}
		dst = append(dst, make([]byte, 16)...)
		return le.AppendUint32(dst, uint32(footerV0Fixed+36*n))
	}
	dst = append(dst, 1)
	dst = append(dst, f.Hash[:]...)
	dst = append(dst, hashesMagic...)
	dst = append(dst, 0)
	dst = le.AppendUint32(dst, uint32(n))
	for _, h := range f.ChunkHashes {
		dst = append(dst, h[:]...)
	}
	dst = append(dst, boundariesMagic...)
	dst = append(dst, 1)
	dst = le.AppendUint32(dst, uint32(n))
	for _, b := range f.BoundaryEnds {
		dst = le.AppendUint32(dst, b)
	}
	for _, r := range f.RawEnds {
		dst = le.AppendUint32(dst, r)
	}
	dst = le.AppendUint32(dst, uint32(n))
	dst = le.AppendUint32(dst, uint32(52+40*n)) // hashes section, from the end of the reserved field
	dst = le.AppendUint32(dst, uint32(40+8*n))  // boundaries section, likewise
	dst = append(dst, make([]byte, 16)...)
	return le.AppendUint32(dst, uint32(footerV1Fixed+40*n))
}

// ParseFooter finds and parses the footer at the end of a whole xorb object (chunk records, footer,
// u32 footer length). recordsLen is the offset where the footer starts, i.e. the length of the chunk
// region. Every length, magic, version, the copies of the chunk count and the section offsets are
// checked against each other and against obj, and the boundary offsets must rise strictly and end at
// recordsLen; the raw ends must not decrease. It does not decode records (Index does).
func ParseFooter(obj []byte) (f *Footer, recordsLen int, err error) { return parseFooterAt(obj, 0) }

// parseFooterAt is ParseFooter for the tail of an object that starts at offset base of it.
func parseFooterAt(obj []byte, base int) (f *Footer, recordsLen int, err error) {
	if len(obj) < footerTrailer+footerV0Fixed {
		return nil, 0, fmt.Errorf("%w: object of %d bytes is too short", ErrNoFooter, base+len(obj))
	}
	le := binary.LittleEndian
	infoLen := uint64(le.Uint32(obj[len(obj)-footerTrailer:]))
	if infoLen > uint64(len(obj)-footerTrailer) || infoLen < footerV0Fixed {
		return nil, 0, fmt.Errorf("%w: footer length %d does not fit the object of %d bytes", ErrNoFooter, infoLen, base+len(obj))
	}
	start := len(obj) - footerTrailer - int(infoLen)
	f, err = parseFooter(obj[start:])
	if err != nil {
		return nil, 0, err
	}
	if err := f.checkOffsets(base + start); err != nil {
		return nil, 0, fmt.Errorf("xorb footer: %w", err)
	}
	return f, base + start, nil
}

// MaxFooterSize is the largest footer (with its u32 length) of a xorb of MaxChunks chunks.
const MaxFooterSize = footerV1Fixed + 40*MaxChunks + footerTrailer

// ReadFooter reads and parses the footer at the end of a stored xorb object of size bytes through
// r, reading only the footer (at most MaxFooterSize bytes), with the checks of ParseFooter.
// recordsLen is where the footer starts. Errors for a malformed footer wrap ErrNoFooter or say
// "xorb footer"; read errors are returned wrapped as they are.
func ReadFooter(r io.ReaderAt, size int64) (f *Footer, recordsLen int64, err error) {
	if size < footerTrailer+footerV0Fixed {
		return nil, 0, fmt.Errorf("%w: object of %d bytes is too short", ErrNoFooter, size)
	}
	var trailer [footerTrailer]byte
	if _, err := r.ReadAt(trailer[:], size-footerTrailer); err != nil {
		return nil, 0, fmt.Errorf("xorb footer: reading its length: %w", err)
	}
	infoLen := int64(binary.LittleEndian.Uint32(trailer[:]))
	if infoLen < footerV0Fixed || infoLen > size-footerTrailer || infoLen+footerTrailer > MaxFooterSize {
		return nil, 0, fmt.Errorf("%w: footer length %d does not fit the object of %d bytes", ErrNoFooter, infoLen, size)
	}
	tail := make([]byte, infoLen+footerTrailer)
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil {
		return nil, 0, fmt.Errorf("xorb footer: reading %d bytes: %w", len(tail), err)
	}
	f, err = parseFooter(tail)
	if err != nil {
		return nil, 0, err
	}
	start := size - int64(len(tail))
	if err := f.checkOffsets(int(start)); err != nil {
		return nil, 0, fmt.Errorf("xorb footer: %w", err)
	}
	return f, start, nil
}

// parseFooter parses fb, a footer followed by its u32 length and nothing else.
func parseFooter(fb []byte) (*Footer, error) {
	fb = fb[:len(fb)-footerTrailer]
	if !bytes.Equal(fb[:7], footerMagic) {
		return nil, fmt.Errorf("%w: no XETBLOB magic %d bytes before the end", ErrNoFooter, len(fb)+footerTrailer)
	}
	var f *Footer
	var err error
	switch fb[7] {
	case 0:
		f, err = parseFooterV0(fb)
	case 1:
		f, err = parseFooterV1(fb)
	default:
		return nil, fmt.Errorf("xorb footer: unsupported version %d", fb[7])
	}
	if err != nil {
		return nil, fmt.Errorf("xorb footer: %w", err)
	}
	return f, nil
}

func parseFooterV0(fb []byte) (*Footer, error) {
	le := binary.LittleEndian
	n := uint64(le.Uint32(fb[40:]))
	if uint64(len(fb)) != footerV0Fixed+36*n {
		return nil, fmt.Errorf("v0 footer of %d bytes cannot hold %d chunks", len(fb), n)
	}
	f := &Footer{Version: 0, Hash: hash.Hash(fb[8:40])}
	f.BoundaryEnds = make([]uint32, n)
	p := 44
	for i := range f.BoundaryEnds {
		f.BoundaryEnds[i] = le.Uint32(fb[p:])
		p += 4
	}
	f.ChunkHashes = make([]hash.Hash, n)
	for i := range f.ChunkHashes {
		f.ChunkHashes[i] = hash.Hash(fb[p : p+32])
		p += 32
	}
	return f, nil
}

func parseFooterV1(fb []byte) (*Footer, error) {
	le := binary.LittleEndian
	if len(fb) < footerV1Fixed {
		return nil, fmt.Errorf("v1 footer of %d bytes is too short", len(fb))
	}
	if !bytes.Equal(fb[40:47], hashesMagic) {
		return nil, fmt.Errorf("missing XBLBHSH section magic")
	}
	if fb[47] != 0 {
		return nil, fmt.Errorf("unsupported hashes section version %d", fb[47])
	}
	n := uint64(le.Uint32(fb[48:]))
	if uint64(len(fb)) != footerV1Fixed+40*n {
		return nil, fmt.Errorf("v1 footer of %d bytes cannot hold %d chunks", len(fb), n)
	}
	f := &Footer{Version: 1, Hash: hash.Hash(fb[8:40])}
	f.ChunkHashes = make([]hash.Hash, n)
	p := 52
	for i := range f.ChunkHashes {
		f.ChunkHashes[i] = hash.Hash(fb[p : p+32])
		p += 32
	}
	if !bytes.Equal(fb[p:p+7], boundariesMagic) {
		return nil, fmt.Errorf("missing XBLBBND section magic")
	}
	if fb[p+7] != 1 {
		return nil, fmt.Errorf("unsupported boundaries section version %d", fb[p+7])
	}
	if n2 := uint64(le.Uint32(fb[p+8:])); n2 != n {
		return nil, fmt.Errorf("boundaries section counts %d chunks, hashes section %d", n2, n)
	}
	p += 12
	f.BoundaryEnds = make([]uint32, n)
	for i := range f.BoundaryEnds {
		f.BoundaryEnds[i] = le.Uint32(fb[p:])
		p += 4
	}
	f.RawEnds = make([]uint32, n)
	for i := range f.RawEnds {
		f.RawEnds[i] = le.Uint32(fb[p:])
		p += 4
	}
	if n3 := uint64(le.Uint32(fb[p:])); n3 != n {
		return nil, fmt.Errorf("trailer counts %d chunks, hashes section %d", n3, n)
	}
	if off := uint64(le.Uint32(fb[p+4:])); off != 52+40*n {
		return nil, fmt.Errorf("hashes section offset %d, want %d", off, 52+40*n)
	}
	if off := uint64(le.Uint32(fb[p+8:])); off != 40+8*n {
		return nil, fmt.Errorf("boundaries section offset %d, want %d", off, 40+8*n)
	}
	return f, nil
}

// checkOffsets checks that the boundary ends rise strictly by at least a record header and end at
// recordsLen, and that the raw ends do not decrease.
func (f *Footer) checkOffsets(recordsLen int) error {
	prev := uint64(0)
	for i, b := range f.BoundaryEnds {
		if uint64(b) < prev+RecordHeaderSize {
			return fmt.Errorf("chunk %d ends at offset %d, before its start %d plus a header", i, b, prev)
		}
		prev = uint64(b)
	}
	if prev != uint64(recordsLen) {
		return fmt.Errorf("chunk records end at %d but the footer starts at %d", prev, recordsLen)
	}
	var prevRaw uint32
	for i, r := range f.RawEnds {
		if r < prevRaw {
			return fmt.Errorf("chunk %d raw end %d is below the previous %d", i, r, prevRaw)
		}
		prevRaw = r
	}
	return nil
}

// ErrFooterUnverifiable: a footer that cannot be checked against its xorb hash (version 0 keeps no
// raw chunk lengths, and the hash is computed over them).
var ErrFooterUnverifiable = errors.New("xorb footer: version 0 has no chunk lengths to check against the xorb hash")

// Verify checks that f describes xorb x: it names x, and its chunk hashes with their raw lengths
// (RawEnds) aggregate to x, as a xorb hash is computed. A footer read from a CAS is untrusted until
// then; after it, a chunk whose bytes hash to ChunkHashes[i] is chunk i of x. It returns each
// chunk's (hash, raw length) entry.
func (f *Footer) Verify(x hash.Hash) ([]hash.Entry, error) {
	ents, err := f.Entries(x)
	if err != nil {
		return nil, err
	}
	if got := hash.Merkle(ents); got != x {
		return nil, fmt.Errorf("xorb %s: the footer's chunks aggregate to %s, not to the xorb hash", x, got)
	}
	return ents, nil
}

// Entries is each chunk's (hash, raw length) entry of a footer that names x and whose raw ends
// do not go back, without Verify's aggregation: for a footer that cannot aggregate to x because
// its server withheld the hashes of chunks the reader may not see (zero), whose remaining hashes
// the reader must tie to something else (a file hash).
func (f *Footer) Entries(x hash.Hash) ([]hash.Entry, error) {
	if f.Version == 0 || len(f.RawEnds) != len(f.ChunkHashes) {
		return nil, fmt.Errorf("xorb %s: %w", x, ErrFooterUnverifiable)
	}
	if f.Hash != x {
		return nil, fmt.Errorf("xorb %s: the footer names xorb %s", x, f.Hash)
	}
	ents := make([]hash.Entry, len(f.ChunkHashes))
	var prev uint32
	for i, h := range f.ChunkHashes {
		if f.RawEnds[i] < prev {
			return nil, fmt.Errorf("xorb %s: footer chunk %d raw end %d is below the previous %d", x, i, f.RawEnds[i], prev)
		}
		ents[i] = hash.Entry{Hash: h, Size: uint64(f.RawEnds[i] - prev)}
		prev = f.RawEnds[i]
	}
	return ents, nil
}
