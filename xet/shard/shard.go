// Package shard holds the MDB shard codec of the Xet protocol: the file reconstructions a client
// registers (file info section), the xorbs it created with their chunks (xorb info section), the
// lookup tables of local/cache shards, and the 200-byte footer.
//
// Byte layout (all integers little-endian, every entry 48 bytes): a header (tag, version 2,
// footer_size 200 or 0); file blocks (FileDataSequenceHeader, one FileDataSequenceEntry per term,
// optional verification entries, optional metadata ext) ended by a bookend (32×FF, 16×00); xorb blocks
// (XorbChunkSequenceHeader, one entry per chunk) ended by a bookend; then, in shards with a footer,
// the file, xorb and chunk lookup tables and the footer.
//
// Three forms exist: the upload form (AppendUpload: no lookups, no footer, footer_size 0), the
// local/cache form (AppendLocal: lookups and footer), and the global-dedupe answer (footer with a
// non-zero HMAC key, no files, chunk hashes keyed). Parse reads all three and Marshal writes back
// what Parse read.
//
// A *Shard is a plain value: it is not safe for concurrent mutation, but any number of goroutines
// may read (FindChunk, FindFile, Marshal, Append*) one that nobody modifies.
package shard

import (
	"errors"
	"fmt"
	"sort"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Sizes of the fixed parts.
const (
	HeaderSize = 48  // tag, version, footer_size
	EntrySize  = 48  // every entry of the file and xorb sections
	FooterSize = 200 // the footer, when present

	// HeaderVersion is the only header version written and accepted.
	HeaderVersion = 2
	// FooterVersion is the only footer version written and accepted.
	FooterVersion = 1

	lookupSize      = 12 // u64 key + u32 index
	chunkLookupSize = 16 // u64 key + u32 xorb entry index + u32 chunk offset
)

// Tag is the magic at the start of every shard: "HFRepoMetaData", 0, then 17 fixed bytes.
var Tag = [32]byte{
	'H', 'F', 'R', 'e', 'p', 'o', 'M', 'e', 't', 'a', 'D', 'a', 't', 'a', 0,
	0x55, 0x69, 0x67, 0x45, 0x6a, 0x7b, 0x81, 0x57, 0x83, 0xa5, 0xbd, 0xd9, 0x5c, 0xcd, 0xd1, 0x4a, 0xa9,
}

// File flags (FileDataSequenceHeader.file_flags).
const (
	FlagVerification uint32 = 1 << 31 // one verification entry per term follows the terms
	FlagMetadataExt  uint32 = 1 << 30 // one metadata ext entry (SHA-256) ends the file block
)

// ChunkFlagGlobalDedupe marks a chunk eligible for global dedupe (set by the server on file-start
// chunks; client shards leave it 0).
const ChunkFlagGlobalDedupe uint32 = 1 << 31

// ErrInvalid is matched (errors.Is) by every error Parse returns for malformed input.
var ErrInvalid = errors.New("invalid shard")

// FormatError describes what is wrong with a malformed shard. errors.Is(err, ErrInvalid) holds.
type FormatError struct{ Msg string }

func (e *FormatError) Error() string        { return "shard: " + e.Msg }
func (e *FormatError) Is(target error) bool { return target == ErrInvalid }

func errf(format string, args ...any) error { return &FormatError{Msg: fmt.Sprintf(format, args...)} }

// Term is one FileDataSequenceEntry: chunks [ChunkStart, ChunkEnd) of xorb Xorb, UnpackedBytes long.
type Term struct {
	Xorb          hash.Hash
	Flags         uint32 // xorb_flags, 0 in every known writer
	UnpackedBytes uint32
	ChunkStart    uint32
	ChunkEnd      uint32 // exclusive
}

// File is one file block: the file hash, its terms, and the optional verification and metadata ext
// entries.
//
// When writing, the verification flag is set exactly when Verification is non-nil and the metadata
// ext flag exactly when HasSHA256 is true; the other bits of Flags are written as they are. Parse sets
// the fields the same way, so a parsed File writes back unchanged.
type File struct {
	Hash         hash.Hash
	Flags        uint32
	Unused       uint64 // the header's _unused word, kept so Marshal reproduces it
	Terms        []Term
	Verification []hash.Hash // nil, or one range hash per term
	SHA256       hash.Hash   // metadata ext: the SHA-256 in hash.FromSHA256 form (String() = hex digest)
	HasSHA256    bool
}

// Size returns the file's length: the sum of its terms' unpacked bytes.
func (f *File) Size() uint64 {
	var n uint64
	for _, t := range f.Terms {
		n += uint64(t.UnpackedBytes)
	}
	return n
}

// entries returns how many 48-byte entries the file block takes, header included.
func (f *File) entries() int {
	n := 1 + len(f.Terms)
	if f.Verification != nil {
		n += len(f.Terms)
	}
	if f.HasSHA256 {
		n++
	}
	return n
}

// flags returns the flags written for f (see File).
func (f *File) flags() uint32 {
	fl := f.Flags &^ (FlagVerification | FlagMetadataExt)
	if f.Verification != nil {
		fl |= FlagVerification
	}
	if f.HasSHA256 {
		fl |= FlagMetadataExt
	}
	return fl
}

// XorbChunk is one XorbChunkSequenceEntry. In a keyed shard Hash is the keyed chunk hash.
type XorbChunk struct {
	Hash     hash.Hash
	RawStart uint32 // cumulative raw offset of the chunk in the xorb
	RawLen   uint32
	Flags    uint32 // ChunkFlagGlobalDedupe or 0
	Unused   uint32
}

// Xorb is one xorb block: XorbChunkSequenceHeader and its chunks.
type Xorb struct {
	Hash        hash.Hash
	Flags       uint32
	BytesInXorb uint32 // sum of raw chunk lengths
	BytesOnDisk uint32 // 0 in every xet-core shard
	Chunks      []XorbChunk
}

// Footer is the 200-byte MDBShardFileFooter. Offsets are from the start of the shard.
type Footer struct {
	Version           uint64
	FileInfoOffset    uint64
	XorbInfoOffset    uint64
	FileLookupOffset  uint64
	FileLookupNum     uint64
	XorbLookupOffset  uint64
	XorbLookupNum     uint64
	ChunkLookupOffset uint64
	ChunkLookupNum    uint64
	HMACKey           hash.Hash // zero: chunk hashes are not keyed
	CreatedAt         uint64    // Unix seconds
	ExpiresAt         uint64    // Unix seconds
	Reserved          [6]uint64
	StoredBytesOnDisk uint64 // Σ BytesOnDisk
	MaterializedBytes uint64 // Σ term bytes of the files
	StoredBytes       uint64 // Σ BytesInXorb
	FooterOffset      uint64
}

// LookupEntry is a file or xorb lookup entry: the truncated hash, and the 48-byte entry index (from
// the start of its section) of the file's or xorb's header.
type LookupEntry struct {
	Key   uint64
	Index uint32
}

// ChunkLookupEntry is a chunk lookup entry: the truncated (in keyed shards: keyed) chunk hash, the
// entry index of its xorb's header in the xorb section (as in the xorb lookup, not the xorb's
// ordinal), and the chunk's index within that xorb.
type ChunkLookupEntry struct {
	Key        uint64
	XorbIndex  uint32
	ChunkIndex uint32
}

// Shard is a whole shard. Footer is nil when the shard has none (footer_size 0, the upload form).
// Version is the header version; 0 (a Shard built in memory) is written as HeaderVersion.
type Shard struct {
	Version     uint64
	Files       []File
	Xorbs       []Xorb
	FileLookup  []LookupEntry
	XorbLookup  []LookupEntry
	ChunkLookup []ChunkLookupEntry
	Footer      *Footer
}

// Keyed reports whether the chunk hashes of the xorb section are keyed (footer with a non-zero
// HMAC key, as in global-dedupe answers).
func (s *Shard) Keyed() bool { return s.Footer != nil && !s.Footer.HMACKey.IsZero() }

// ChunkKey returns the form in which chunk h is stored in this shard: h, or hash.Keyed(key, h) when
// the shard is keyed.
func (s *Shard) ChunkKey(h hash.Hash) hash.Hash {
	if s.Keyed() {
		return hash.Keyed(s.Footer.HMACKey, h)
	}
	return h
}

// FindChunk finds the (unkeyed) chunk hash h among the xorbs' chunks, keying it first when the shard
// is keyed. It returns the ordinal of the xorb in s.Xorbs and of the chunk in its Chunks. It uses
// the chunk lookup table when there is one and scans otherwise; the first match wins.
func (s *Shard) FindChunk(h hash.Hash) (xorbIdx, chunkIdx int, ok bool) {
	k := s.ChunkKey(h)
	if len(s.ChunkLookup) > 0 {
		starts := s.xorbStarts()
		key := k.Truncate()
		i := sort.Search(len(s.ChunkLookup), func(i int) bool { return s.ChunkLookup[i].Key >= key })
		for ; i < len(s.ChunkLookup) && s.ChunkLookup[i].Key == key; i++ {
			e := s.ChunkLookup[i]
			x, found := ordinalOf(starts, e.XorbIndex)
			if found && int(e.ChunkIndex) < len(s.Xorbs[x].Chunks) && s.Xorbs[x].Chunks[e.ChunkIndex].Hash == k {
				return x, int(e.ChunkIndex), true
			}
		}
		return 0, 0, false
	}
	for x := range s.Xorbs {
		for c := range s.Xorbs[x].Chunks {
			if s.Xorbs[x].Chunks[c].Hash == k {
				return x, c, true
			}
		}
	}
	return 0, 0, false
}

// FindFile returns the ordinal in s.Files of the file with hash h.
func (s *Shard) FindFile(h hash.Hash) (int, bool) {
	for i := range s.Files {
		if s.Files[i].Hash == h {
			return i, true
		}
	}
	return 0, false
}

// FindXorb returns the ordinal in s.Xorbs of the xorb with hash h.
func (s *Shard) FindXorb(h hash.Hash) (int, bool) {
	for i := range s.Xorbs {
		if s.Xorbs[i].Hash == h {
			return i, true
		}
	}
	return 0, false
}

// FileEntryIndex returns the 48-byte entry index of file i's header from the start of the file
// section (what the file lookup stores).
func (s *Shard) FileEntryIndex(i int) uint32 {
	n := 0
	for j := 0; j < i; j++ {
		n += s.Files[j].entries()
	}
	return uint32(n)
}

// XorbEntryIndex returns the 48-byte entry index of xorb i's header from the start of the xorb
// section (what the xorb and chunk lookups store).
func (s *Shard) XorbEntryIndex(i int) uint32 {
	n := 0
	for j := 0; j < i; j++ {
		n += 1 + len(s.Xorbs[j].Chunks)
	}
	return uint32(n)
}

// xorbStarts returns the entry index of each xorb header, ascending.
func (s *Shard) xorbStarts() []uint32 {
	out := make([]uint32, len(s.Xorbs))
	n := 0
	for i := range s.Xorbs {
		out[i] = uint32(n)
		n += 1 + len(s.Xorbs[i].Chunks)
	}
	return out
}

// fileStarts returns the entry index of each file header, ascending.
func (s *Shard) fileStarts() []uint32 {
	out := make([]uint32, len(s.Files))
	n := 0
	for i := range s.Files {
		out[i] = uint32(n)
		n += s.Files[i].entries()
	}
	return out
}

// ordinalOf maps an entry index to the ordinal whose header sits there.
func ordinalOf(starts []uint32, idx uint32) (int, bool) {
	i := sort.Search(len(starts), func(i int) bool { return starts[i] >= idx })
	return i, i < len(starts) && starts[i] == idx
}

// Match is where a chunk lives, as a shard lists it: chunk Index of xorb Xorb, whose chunks are
// Chunks. When Key is non-zero the match came from a keyed (global-dedupe) shard and Chunks hold
// keyed hashes (hash.Keyed(Key, chunk hash)); compare hash.Keyed(Key, next chunk) to extend the
// match. The local shard cache answers lookups with it, and an upload session extends it.
//
// Chunks may be shared with the cache and with other matches of the same xorb: read it, never
// modify it.
type Match struct {
	Xorb   hash.Hash
	Index  uint32
	Chunks []XorbChunk
	Key    hash.Hash
}
