package shard

import (
	"encoding/binary"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

var le = binary.LittleEndian

// Parse reads a whole shard: the upload form (footer_size 0), a local/cache shard with lookup
// tables, or a keyed global-dedupe answer. Every count is checked against the bytes that remain
// before anything is allocated, so allocation stays proportional to len(b). The footer's offsets
// must agree with the layout (file section at 48, xorb section after the file bookend, lookups after
// the xorb bookend, then the footer at the end) and the lookup tables must be sorted and point at
// the entries whose hashes they hold. Errors match ErrInvalid.
func Parse(b []byte) (*Shard, error) {
	if len(b) < HeaderSize {
		return nil, errf("%d bytes is too short for a header (%d)", len(b), HeaderSize)
	}
	if [32]byte(b[:32]) != Tag {
		return nil, errf("bad header tag %x", b[:32])
	}
	s := &Shard{Version: le.Uint64(b[32:40])}
	if s.Version != HeaderVersion {
		return nil, errf("header version %d: want %d", s.Version, HeaderVersion)
	}
	footerSize := le.Uint64(b[40:48])
	end := len(b) // end of the file and xorb sections (and lookups)
	switch footerSize {
	case 0:
	case FooterSize:
		if len(b) < HeaderSize+FooterSize {
			return nil, errf("%d bytes is too short for a header and a %d-byte footer", len(b), FooterSize)
		}
		end = len(b) - FooterSize
		s.Footer = parseFooter(b[end:])
		if err := s.checkFooterStart(uint64(end)); err != nil {
			return nil, err
		}
	default:
		return nil, errf("footer_size %d: want %d or 0", footerSize, FooterSize)
	}

	pos, err := s.parseFiles(b[:end], HeaderSize)
	if err != nil {
		return nil, err
	}
	xorbStart := pos
	pos, err = s.parseXorbs(b[:end], pos)
	if err != nil {
		return nil, err
	}
	if s.Footer == nil {
		if pos != len(b) {
			return nil, errf("%d bytes after the xorb section bookend in a shard without footer", len(b)-pos)
		}
		return s, nil
	}
	if err := s.parseLookups(b[:end], xorbStart, pos); err != nil {
		return nil, err
	}
	return s, nil
}

func parseFooter(b []byte) *Footer {
	f := &Footer{
		Version:           le.Uint64(b[0:]),
		FileInfoOffset:    le.Uint64(b[8:]),
		XorbInfoOffset:    le.Uint64(b[16:]),
		FileLookupOffset:  le.Uint64(b[24:]),
		FileLookupNum:     le.Uint64(b[32:]),
		XorbLookupOffset:  le.Uint64(b[40:]),
		XorbLookupNum:     le.Uint64(b[48:]),
		ChunkLookupOffset: le.Uint64(b[56:]),
		ChunkLookupNum:    le.Uint64(b[64:]),
		HMACKey:           hash.Hash(b[72:104]),
		CreatedAt:         le.Uint64(b[104:]),
		ExpiresAt:         le.Uint64(b[112:]),
		StoredBytesOnDisk: le.Uint64(b[168:]),
		MaterializedBytes: le.Uint64(b[176:]),
		StoredBytes:       le.Uint64(b[184:]),
		FooterOffset:      le.Uint64(b[192:]),
	}
	for i := range f.Reserved {
		f.Reserved[i] = le.Uint64(b[120+8*i:])
	}
	return f
}

// checkFooterStart checks the footer fields that do not depend on the sections: version, where the
// footer and the file section are.
func (s *Shard) checkFooterStart(footerAt uint64) error {
	f := s.Footer
	if f.Version != FooterVersion {
		return errf("footer version %d: want %d", f.Version, FooterVersion)
	}
	if f.FooterOffset != footerAt {
		return errf("footer_offset %d: the footer is at %d", f.FooterOffset, footerAt)
	}
	if f.FileInfoOffset != HeaderSize {
		return errf("footer file_info_offset %d: want %d", f.FileInfoOffset, HeaderSize)
	}
	return nil
}

// isBookend reports whether the entry at b starts with the all-FF hash.
func isBookend(b []byte) bool { return hash.Hash(b[:32]) == hash.Marker }

// parseFiles reads file blocks from pos up to and including the bookend, returning the position
// after the bookend.
func (s *Shard) parseFiles(b []byte, pos int) (int, error) {
	entry := 0 // entry index of the current header from the section start
	for {
		if len(b)-pos < EntrySize {
			return 0, errf("file section entry %d: data ends at byte %d before the bookend", entry, len(b))
		}
		e := b[pos : pos+EntrySize]
		if isBookend(e) {
			return pos + EntrySize, nil
		}
		f := File{
			Hash:   hash.Hash(e[:32]),
			Flags:  le.Uint32(e[32:]),
			Unused: le.Uint64(e[40:]),
		}
		n := uint64(le.Uint32(e[36:]))
		need := n
		if f.Flags&FlagVerification != 0 {
			need += n
		}
		if f.Flags&FlagMetadataExt != 0 {
			need++
		}
		pos += EntrySize
		if need > uint64(len(b)-pos)/EntrySize {
			return 0, errf("file section entry %d: num_entries %d exceeds remaining data", entry, n)
		}
		f.Terms = make([]Term, n)
		for i := range f.Terms {
			e := b[pos : pos+EntrySize]
			f.Terms[i] = Term{
				Xorb:          hash.Hash(e[:32]),
				Flags:         le.Uint32(e[32:]),
				UnpackedBytes: le.Uint32(e[36:]),
				ChunkStart:    le.Uint32(e[40:]),
				ChunkEnd:      le.Uint32(e[44:]),
			}
			if f.Terms[i].ChunkEnd <= f.Terms[i].ChunkStart {
				return 0, errf("file section entry %d (file %s term %d): chunk range [%d, %d) is empty",
					entry+1+i, f.Hash, i, f.Terms[i].ChunkStart, f.Terms[i].ChunkEnd)
			}
			pos += EntrySize
		}
		if f.Flags&FlagVerification != 0 {
			f.Verification = make([]hash.Hash, n)
			for i := range f.Verification {
				f.Verification[i] = hash.Hash(b[pos : pos+32])
				pos += EntrySize
			}
		}
		if f.Flags&FlagMetadataExt != 0 {
			f.SHA256 = hash.Hash(b[pos : pos+32])
			f.HasSHA256 = true
			pos += EntrySize
		}
		s.Files = append(s.Files, f)
		entry += 1 + int(need)
	}
}

// parseXorbs reads xorb blocks from pos up to and including the bookend.
func (s *Shard) parseXorbs(b []byte, pos int) (int, error) {
	entry := 0
	for {
		if len(b)-pos < EntrySize {
			return 0, errf("xorb section entry %d: data ends at byte %d before the bookend", entry, len(b))
		}
		e := b[pos : pos+EntrySize]
		if isBookend(e) {
			return pos + EntrySize, nil
		}
		x := Xorb{
			Hash:        hash.Hash(e[:32]),
			Flags:       le.Uint32(e[32:]),
			BytesInXorb: le.Uint32(e[40:]),
			BytesOnDisk: le.Uint32(e[44:]),
		}
		n := uint64(le.Uint32(e[36:]))
		pos += EntrySize
		if n > uint64(len(b)-pos)/EntrySize {
			return 0, errf("xorb section entry %d: num_entries %d exceeds remaining data", entry, n)
		}
		x.Chunks = make([]XorbChunk, n)
		for i := range x.Chunks {
			x.Chunks[i] = decodeXorbChunk(b[pos : pos+EntrySize])
			pos += EntrySize
		}
		s.Xorbs = append(s.Xorbs, x)
		entry += 1 + int(n)
	}
}

// parseLookups checks the footer's section offsets against the layout found (xorb section at
// xorbStart, lookups from lookupStart) and reads and checks the three lookup tables.
func (s *Shard) parseLookups(b []byte, xorbStart, lookupStart int) error {
	f := s.Footer
	if f.XorbInfoOffset != uint64(xorbStart) {
		return errf("footer xorb_info_offset %d: the xorb section starts at %d", f.XorbInfoOffset, xorbStart)
	}
	if f.FileLookupOffset != uint64(lookupStart) {
		return errf("footer file_lookup_offset %d: the xorb section ends at %d", f.FileLookupOffset, lookupStart)
	}
	avail := uint64(len(b) - lookupStart)
	if f.FileLookupNum > avail/lookupSize {
		return errf("footer file_lookup_num_entry %d exceeds remaining data", f.FileLookupNum)
	}
	at := f.FileLookupOffset + f.FileLookupNum*lookupSize
	if f.XorbLookupOffset != at {
		return errf("footer xorb_lookup_offset %d: the file lookup ends at %d", f.XorbLookupOffset, at)
	}
	if f.XorbLookupNum > (uint64(len(b))-at)/lookupSize {
		return errf("footer xorb_lookup_num_entry %d exceeds remaining data", f.XorbLookupNum)
	}
	at += f.XorbLookupNum * lookupSize
	if f.ChunkLookupOffset != at {
		return errf("footer chunk_lookup_offset %d: the xorb lookup ends at %d", f.ChunkLookupOffset, at)
	}
	if f.ChunkLookupNum > (uint64(len(b))-at)/chunkLookupSize {
		return errf("footer chunk_lookup_num_entry %d exceeds remaining data", f.ChunkLookupNum)
	}
	at += f.ChunkLookupNum * chunkLookupSize
	if at != uint64(len(b)) {
		return errf("%d bytes between the chunk lookup and the footer", uint64(len(b))-at)
	}

	var err error
	pos := lookupStart
	if s.FileLookup, pos, err = readLookup(b, pos, f.FileLookupNum, "file"); err != nil {
		return err
	}
	if s.XorbLookup, pos, err = readLookup(b, pos, f.XorbLookupNum, "xorb"); err != nil {
		return err
	}
	if f.ChunkLookupNum > 0 {
		s.ChunkLookup = make([]ChunkLookupEntry, f.ChunkLookupNum)
		for i := range s.ChunkLookup {
			s.ChunkLookup[i] = ChunkLookupEntry{le.Uint64(b[pos:]), le.Uint32(b[pos+8:]), le.Uint32(b[pos+12:])}
			if i > 0 && s.ChunkLookup[i].Key < s.ChunkLookup[i-1].Key {
				return errf("chunk lookup entry %d: not sorted by key", i)
			}
			pos += chunkLookupSize
		}
	}
	return s.checkLookups()
}

func readLookup(b []byte, pos int, n uint64, what string) ([]LookupEntry, int, error) {
	if n == 0 {
		return nil, pos, nil
	}
	out := make([]LookupEntry, n)
	for i := range out {
		out[i] = LookupEntry{le.Uint64(b[pos:]), le.Uint32(b[pos+8:])}
		if i > 0 && out[i].Key < out[i-1].Key {
			return nil, 0, errf("%s lookup entry %d: not sorted by key", what, i)
		}
		pos += lookupSize
	}
	return out, pos, nil
}

// checkLookups verifies that every lookup entry points at a header (or chunk) whose hash it holds.
func (s *Shard) checkLookups() error {
	files, xorbs := s.fileStarts(), s.xorbStarts()
	for i, e := range s.FileLookup {
		j, ok := ordinalOf(files, e.Index)
		if !ok {
			return errf("file lookup entry %d: index %d is not a file header", i, e.Index)
		}
		if s.Files[j].Hash.Truncate() != e.Key {
			return errf("file lookup entry %d: key %016x does not match file %s", i, e.Key, s.Files[j].Hash)
		}
	}
	for i, e := range s.XorbLookup {
		j, ok := ordinalOf(xorbs, e.Index)
		if !ok {
			return errf("xorb lookup entry %d: index %d is not a xorb header", i, e.Index)
		}
		if s.Xorbs[j].Hash.Truncate() != e.Key {
			return errf("xorb lookup entry %d: key %016x does not match xorb %s", i, e.Key, s.Xorbs[j].Hash)
		}
	}
	for i, e := range s.ChunkLookup {
		j, ok := ordinalOf(xorbs, e.XorbIndex)
		if !ok {
			return errf("chunk lookup entry %d: index %d is not a xorb header", i, e.XorbIndex)
		}
		if int(e.ChunkIndex) >= len(s.Xorbs[j].Chunks) {
			return errf("chunk lookup entry %d: chunk %d beyond the %d chunks of xorb %s",
				i, e.ChunkIndex, len(s.Xorbs[j].Chunks), s.Xorbs[j].Hash)
		}
		if s.Xorbs[j].Chunks[e.ChunkIndex].Hash.Truncate() != e.Key {
			return errf("chunk lookup entry %d: key %016x does not match chunk %d of xorb %s",
				i, e.Key, e.ChunkIndex, s.Xorbs[j].Hash)
		}
	}
	return nil
}
