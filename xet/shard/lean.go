package shard

import "github.com/git-xet-transfer/git-xet-transfer/xet/hash"

// This file is the lean reader of a shard file with footer, for readers that need only the xorb
// section's chunk keys (the local shard cache, which opens millions of chunks at start-up): the
// header and footer give the sections (ReadLayout), an XorbScanner walks the xorb section without
// allocating, and ParseXorbBlock decodes one xorb block read back later. Parse is the full,
// validating reader of a shard about to be stored.

// MinSizeWithFooter is the size of the smallest shard with footer: header, file bookend, xorb
// bookend, footer.
const MinSizeWithFooter = HeaderSize + 2*EntrySize + FooterSize

// Layout is what the header and footer of a shard file with footer say: its timestamps, its
// chunk-hash key, and where its xorb section is.
type Layout struct {
	Created uint64    // Unix seconds
	Expires uint64    // Unix seconds; 0: already expired
	Key     hash.Hash // chunk_hash_hmac_key; zero: not keyed
	// XorbOff and XorbEnd bound the xorb section, its bookend included.
	XorbOff, XorbEnd int64
}

// MaxChunks is an upper bound of the chunk entries in the xorb section.
func (l Layout) MaxChunks() int { return int((l.XorbEnd-l.XorbOff)/EntrySize) - 1 }

// ReadLayout checks the header (the first HeaderSize bytes of the file) and the footer (the last
// FooterSize bytes) of a shard file of size bytes, and returns its layout. The sections must follow
// each other as Parse requires (files at HeaderSize, xorbs on an entry boundary after them, the
// three lookup tables back to back, then the footer); nothing between them is read. Errors match
// ErrInvalid.
func ReadLayout(head, foot []byte, size int64) (Layout, error) {
	if size < MinSizeWithFooter {
		return Layout{}, errf("%d bytes, shorter than the smallest shard with footer (%d)", size, MinSizeWithFooter)
	}
	if len(head) < HeaderSize || len(foot) < FooterSize {
		return Layout{}, errf("short header or footer")
	}
	if [32]byte(head[:32]) != Tag {
		return Layout{}, errf("no shard tag")
	}
	if v := le.Uint64(head[32:]); v != HeaderVersion {
		return Layout{}, errf("header version %d, want %d", v, HeaderVersion)
	}
	if fs := le.Uint64(head[40:]); fs != FooterSize {
		return Layout{}, errf("footer_size %d, want %d (a shard file with footer)", fs, FooterSize)
	}
	f := parseFooter(foot[:FooterSize])
	if f.Version != FooterVersion {
		return Layout{}, errf("footer version %d, want %d", f.Version, FooterVersion)
	}
	footerAt := uint64(size) - FooterSize
	if f.FooterOffset != footerAt {
		return Layout{}, errf("footer_offset %d, but the footer starts at %d (truncated or extended file)", f.FooterOffset, footerAt)
	}
	if f.FileInfoOffset != HeaderSize {
		return Layout{}, errf("file_info_offset %d, want %d", f.FileInfoOffset, HeaderSize)
	}
	xo := f.XorbInfoOffset
	if xo < f.FileInfoOffset+EntrySize || (xo-f.FileInfoOffset)%EntrySize != 0 {
		return Layout{}, errf("xorb_info_offset %d not an entry boundary after the file section", xo)
	}
	// Counts are bounded by the size before multiplying, so nothing overflows.
	if f.FileLookupNum > footerAt || f.XorbLookupNum > footerAt || f.ChunkLookupNum > footerAt {
		return Layout{}, errf("lookup counts %d/%d/%d exceed the file", f.FileLookupNum, f.XorbLookupNum, f.ChunkLookupNum)
	}
	fl, xl, cl := f.FileLookupOffset, f.XorbLookupOffset, f.ChunkLookupOffset
	if fl < xo+EntrySize || (fl-xo)%EntrySize != 0 || fl+lookupSize*f.FileLookupNum != xl ||
		xl+lookupSize*f.XorbLookupNum != cl || cl+chunkLookupSize*f.ChunkLookupNum != footerAt {
		return Layout{}, errf("section offsets xorb=%d lookups=%d/%d/%d footer=%d are inconsistent", xo, fl, xl, cl, footerAt)
	}
	return Layout{Created: f.CreatedAt, Expires: f.ExpiresAt, Key: f.HMACKey, XorbOff: int64(xo), XorbEnd: int64(fl)}, nil
}

// XorbBlock is one xorb of a xorb section: its header's hash and chunk count, and its chunk entries,
// undecoded (a slice of the section).
type XorbBlock struct {
	Hash    hash.Hash
	Off     int // offset of its header in the section
	N       uint32
	entries []byte
}

// ChunkKey returns the truncated hash of chunk i (the first 8 bytes of its hash, little-endian), as
// the lookup tables hold it.
func (b XorbBlock) ChunkKey(i int) uint64 { return le.Uint64(b.entries[i*EntrySize:]) }

// Chunks decodes the chunk entries.
func (b XorbBlock) Chunks() []XorbChunk {
	out := make([]XorbChunk, b.N)
	for i := range out {
		out[i] = decodeXorbChunk(b.entries[i*EntrySize:])
	}
	return out
}

func decodeXorbChunk(e []byte) XorbChunk {
	return XorbChunk{
		Hash:     hash.Hash(e[:32]),
		RawStart: le.Uint32(e[32:]),
		RawLen:   le.Uint32(e[36:]),
		Flags:    le.Uint32(e[40:]),
		Unused:   le.Uint32(e[44:]),
	}
}

// XorbScanner walks a xorb section (bookend included) block by block without allocating. Use:
//
//	for s := shard.NewXorbScanner(sec); s.Next(); { b := s.Block() ... }
//	if err := s.Err(); err != nil { ... }
type XorbScanner struct {
	sec []byte
	pos int
	cur XorbBlock
	err error
}

// NewXorbScanner returns a scanner of sec, a whole xorb section ending with its bookend.
func NewXorbScanner(sec []byte) *XorbScanner {
	s := &XorbScanner{sec: sec}
	if len(sec) < EntrySize || len(sec)%EntrySize != 0 {
		s.err = errf("xorb section of %d bytes is not whole entries", len(sec))
	}
	return s
}

// Next advances to the next xorb block; false at the bookend or on an error (see Err).
func (s *XorbScanner) Next() bool {
	if s.err != nil || s.pos < 0 {
		return false
	}
	sec, pos := s.sec, s.pos
	if len(sec)-pos < EntrySize {
		s.err = errf("xorb section has no bookend")
		return false
	}
	h := hash.Hash(sec[pos : pos+32])
	if h == hash.Marker {
		if pos+EntrySize != len(sec) {
			s.err = errf("xorb bookend at %d is not the end of the section", pos)
		}
		s.pos = -1
		return false
	}
	n := le.Uint32(sec[pos+36:])
	body := pos + EntrySize
	if rem := len(sec) - body - EntrySize; rem < 0 || uint64(n) > uint64(rem)/EntrySize {
		s.err = errf("xorb %s at %d claims %d chunks, more than the section holds", h, pos, n)
		return false
	}
	end := body + int(n)*EntrySize
	s.cur = XorbBlock{Hash: h, Off: pos, N: n, entries: sec[body:end]}
	s.pos = end
	return true
}

// Block returns the block Next moved to.
func (s *XorbScanner) Block() XorbBlock { return s.cur }

// Err returns the error that stopped the scan, or nil at the bookend.
func (s *XorbScanner) Err() error { return s.err }

// XorbBlockSize is the size of the block of a xorb of n chunks: its header and n entries.
func XorbBlockSize(n uint32) int { return (int(n) + 1) * EntrySize }

// ParseXorbBlock reads one xorb block (a header and the entries it counts, nothing more), as read
// back from a shard file at an offset an XorbScanner gave.
func ParseXorbBlock(b []byte) (XorbBlock, error) {
	if len(b) < EntrySize {
		return XorbBlock{}, errf("xorb block of %d bytes", len(b))
	}
	n := le.Uint32(b[36:])
	if len(b) != XorbBlockSize(n) {
		return XorbBlock{}, errf("xorb block of %d bytes, its header counts %d chunks (%d bytes)", len(b), n, XorbBlockSize(n))
	}
	return XorbBlock{Hash: hash.Hash(b[:32]), N: n, entries: b[EntrySize:]}, nil
}
