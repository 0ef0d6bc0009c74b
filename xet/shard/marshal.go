package shard

import (
	"slices"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Sort puts files and xorbs in xet-core's order (hash.Compare: little-endian words from word 0) and
// collapses entries with the same hash, keeping the first. Call it before AppendUpload/AppendLocal
// for a shard built in memory. Lookup tables are left alone (Append* rebuilds them).
func (s *Shard) Sort() {
	slices.SortStableFunc(s.Files, func(a, b File) int { return a.Hash.Compare(b.Hash) })
	s.Files = slices.CompactFunc(s.Files, func(a, b File) bool { return a.Hash == b.Hash })
	slices.SortStableFunc(s.Xorbs, func(a, b Xorb) int { return a.Hash.Compare(b.Hash) })
	s.Xorbs = slices.CompactFunc(s.Xorbs, func(a, b Xorb) bool { return a.Hash == b.Hash })
}

// Marshal serialises the shard as it stands: header, sections, and when Footer is set the lookup
// tables held in s and the footer. The footer's offsets and lookup counts are computed from the
// layout; its other fields are written as they are. A parsed shard comes back byte for byte
// (except non-zero padding in bookend, verification and ext entries, which is written as zeros).
func (s *Shard) Marshal() []byte {
	size := s.sectionsSize()
	if s.Footer != nil {
		size += len(s.FileLookup)*lookupSize + len(s.XorbLookup)*lookupSize +
			len(s.ChunkLookup)*chunkLookupSize + FooterSize
	}
	dst := make([]byte, 0, size)
	if s.Footer == nil {
		return s.appendSections(dst, 0)
	}
	return s.appendWithFooter(dst, *s.Footer, s.FileLookup, s.XorbLookup, s.ChunkLookup)
}

// AppendUpload appends the upload form (POST /v1/shards) to dst: header with footer_size 0, file
// section, xorb section, no lookups and no footer. Call Sort first.
func (s *Shard) AppendUpload(dst []byte) []byte {
	dst = slices.Grow(dst, s.sectionsSize())
	return s.appendSections(dst, 0)
}

// AppendLocal appends the local/cache form to dst: the sections, the three lookup tables built
// from them (file and xorb lookups ascending by truncated hash, chunk lookup sorted by key; indices
// as xet-core writes them) and a footer with the given creation and expiry times (Unix seconds), a
// zero key, and the byte totals. Call Sort first. s itself is not modified.
func (s *Shard) AppendLocal(dst []byte, created, expires uint64) []byte {
	fl, xl, cl := s.BuildLookups()
	f := Footer{
		Version:   FooterVersion,
		CreatedAt: created,
		ExpiresAt: expires,
	}
	for i := range s.Files {
		f.MaterializedBytes += s.Files[i].Size()
	}
	for i := range s.Xorbs {
		f.StoredBytes += uint64(s.Xorbs[i].BytesInXorb)
		f.StoredBytesOnDisk += uint64(s.Xorbs[i].BytesOnDisk)
	}
	dst = slices.Grow(dst, s.sectionsSize()+len(fl)*lookupSize+len(xl)*lookupSize+len(cl)*chunkLookupSize+FooterSize)
	return s.appendWithFooter(dst, f, fl, xl, cl)
}

// BuildLookups computes the three lookup tables for the shard's current files and xorbs, as
// xet-core's serialize_from does. Each table is sorted by key; entries with equal keys stay in
// section order (xet-core leaves their order unspecified).
func (s *Shard) BuildLookups() (files, xorbs []LookupEntry, chunks []ChunkLookupEntry) {
	files = make([]LookupEntry, len(s.Files))
	idx := uint32(0)
	for i := range s.Files {
		files[i] = LookupEntry{s.Files[i].Hash.Truncate(), idx}
		idx += uint32(s.Files[i].entries())
	}
	xorbs = make([]LookupEntry, len(s.Xorbs))
	n := 0
	for i := range s.Xorbs {
		n += len(s.Xorbs[i].Chunks)
	}
	chunks = make([]ChunkLookupEntry, 0, n)
	idx = 0
	for i := range s.Xorbs {
		x := &s.Xorbs[i]
		xorbs[i] = LookupEntry{x.Hash.Truncate(), idx}
		for c := range x.Chunks {
			chunks = append(chunks, ChunkLookupEntry{x.Chunks[c].Hash.Truncate(), idx, uint32(c)})
		}
		idx += 1 + uint32(len(x.Chunks))
	}
	// Ties (truncated-hash collisions) keep section order: the index breaks them.
	byKey := func(a, b LookupEntry) int {
		if c := cmpU64(a.Key, b.Key); c != 0 {
			return c
		}
		return cmpU64(uint64(a.Index), uint64(b.Index))
	}
	slices.SortFunc(files, byKey)
	slices.SortFunc(xorbs, byKey)
	slices.SortFunc(chunks, func(a, b ChunkLookupEntry) int {
		if c := cmpU64(a.Key, b.Key); c != 0 {
			return c
		}
		if c := cmpU64(uint64(a.XorbIndex), uint64(b.XorbIndex)); c != 0 {
			return c
		}
		return cmpU64(uint64(a.ChunkIndex), uint64(b.ChunkIndex))
	})
	return files, xorbs, chunks
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SectionsSize is the length of the upload form (header, file section, xorb section): what the
// shard costs before lookup tables and footer.
func (s *Shard) SectionsSize() int64 { return int64(s.sectionsSize()) }

// sectionsSize is the length of header, file section and xorb section.
func (s *Shard) sectionsSize() int {
	n := HeaderSize + 2*EntrySize
	for i := range s.Files {
		n += s.Files[i].entries() * EntrySize
	}
	for i := range s.Xorbs {
		n += (1 + len(s.Xorbs[i].Chunks)) * EntrySize
	}
	return n
}

// appendWithFooter writes the sections, the given lookups and footer f with its layout fields
// (offsets, counts) computed.
func (s *Shard) appendWithFooter(dst []byte, f Footer, fl, xl []LookupEntry, cl []ChunkLookupEntry) []byte {
	base := len(dst)
	dst = s.appendSections(dst, FooterSize)
	f.FileInfoOffset = HeaderSize
	f.XorbInfoOffset = uint64(HeaderSize + s.filesSize())
	f.FileLookupOffset = uint64(len(dst) - base)
	f.FileLookupNum = uint64(len(fl))
	dst = appendLookup(dst, fl)
	f.XorbLookupOffset = uint64(len(dst) - base)
	f.XorbLookupNum = uint64(len(xl))
	dst = appendLookup(dst, xl)
	f.ChunkLookupOffset = uint64(len(dst) - base)
	f.ChunkLookupNum = uint64(len(cl))
	for _, e := range cl {
		dst = le.AppendUint64(dst, e.Key)
		dst = le.AppendUint32(dst, e.XorbIndex)
		dst = le.AppendUint32(dst, e.ChunkIndex)
	}
	f.FooterOffset = uint64(len(dst) - base)
	return f.appendTo(dst)
}

// filesSize is the length of the file section including its bookend.
func (s *Shard) filesSize() int {
	n := EntrySize
	for i := range s.Files {
		n += s.Files[i].entries() * EntrySize
	}
	return n
}

func appendLookup(dst []byte, l []LookupEntry) []byte {
	for _, e := range l {
		dst = le.AppendUint64(dst, e.Key)
		dst = le.AppendUint32(dst, e.Index)
	}
	return dst
}

var zero16 [16]byte

func appendBookend(dst []byte) []byte {
	dst = append(dst, hash.Marker[:]...)
	return append(dst, zero16[:]...)
}

// appendSections writes the header (with footerSize) and the file and xorb sections.
func (s *Shard) appendSections(dst []byte, footerSize uint64) []byte {
	v := s.Version
	if v == 0 {
		v = HeaderVersion
	}
	dst = append(dst, Tag[:]...)
	dst = le.AppendUint64(dst, v)
	dst = le.AppendUint64(dst, footerSize)
	for i := range s.Files {
		dst = s.Files[i].appendTo(dst)
	}
	dst = appendBookend(dst)
	for i := range s.Xorbs {
		x := &s.Xorbs[i]
		dst = append(dst, x.Hash[:]...)
		dst = le.AppendUint32(dst, x.Flags)
		dst = le.AppendUint32(dst, uint32(len(x.Chunks)))
		dst = le.AppendUint32(dst, x.BytesInXorb)
		dst = le.AppendUint32(dst, x.BytesOnDisk)
		for _, c := range x.Chunks {
			dst = append(dst, c.Hash[:]...)
			dst = le.AppendUint32(dst, c.RawStart)
			dst = le.AppendUint32(dst, c.RawLen)
			dst = le.AppendUint32(dst, c.Flags)
			dst = le.AppendUint32(dst, c.Unused)
		}
	}
	return appendBookend(dst)
}

// appendTo writes the file block. Verification entries: one per term (a missing one is written as
// zero hash, extra ones are dropped).
func (f *File) appendTo(dst []byte) []byte {
	dst = append(dst, f.Hash[:]...)
	dst = le.AppendUint32(dst, f.flags())
	dst = le.AppendUint32(dst, uint32(len(f.Terms)))
	dst = le.AppendUint64(dst, f.Unused)
	for _, t := range f.Terms {
		dst = append(dst, t.Xorb[:]...)
		dst = le.AppendUint32(dst, t.Flags)
		dst = le.AppendUint32(dst, t.UnpackedBytes)
		dst = le.AppendUint32(dst, t.ChunkStart)
		dst = le.AppendUint32(dst, t.ChunkEnd)
	}
	if f.Verification != nil {
		for i := range f.Terms {
			var v hash.Hash
			if i < len(f.Verification) {
				v = f.Verification[i]
			}
			dst = append(dst, v[:]...)
			dst = append(dst, zero16[:]...)
		}
	}
	if f.HasSHA256 {
		dst = append(dst, f.SHA256[:]...)
		dst = append(dst, zero16[:]...)
	}
	return dst
}

func (f *Footer) appendTo(dst []byte) []byte {
	for _, v := range []uint64{f.Version, f.FileInfoOffset, f.XorbInfoOffset, f.FileLookupOffset,
		f.FileLookupNum, f.XorbLookupOffset, f.XorbLookupNum, f.ChunkLookupOffset, f.ChunkLookupNum} {
		dst = le.AppendUint64(dst, v)
	}
	dst = append(dst, f.HMACKey[:]...)
	dst = le.AppendUint64(dst, f.CreatedAt)
	dst = le.AppendUint64(dst, f.ExpiresAt)
	for _, v := range f.Reserved {
		dst = le.AppendUint64(dst, v)
	}
	for _, v := range []uint64{f.StoredBytesOnDisk, f.MaterializedBytes, f.StoredBytes, f.FooterOffset} {
		dst = le.AppendUint64(dst, v)
	}
	return dst
}
