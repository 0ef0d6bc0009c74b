package shard

// Validate checks what Parse does not need for safety but a consumer relies on: each xorb's chunk
// offsets are cumulative from 0 and add up to BytesInXorb, and each file's verification entries (if
// any) match its terms. It does not check hashes (that needs the data). Errors match ErrInvalid.
func (s *Shard) Validate() error {
	for i := range s.Xorbs {
		x := &s.Xorbs[i]
		var off uint64
		for j, c := range x.Chunks {
			if uint64(c.RawStart) != off {
				return errf("xorb %s chunk %d: raw start %d, the chunks before it end at %d", x.Hash, j, c.RawStart, off)
			}
			off += uint64(c.RawLen)
		}
		if off != uint64(x.BytesInXorb) {
			return errf("xorb %s: num_bytes_in_xorb %d, its chunks add up to %d", x.Hash, x.BytesInXorb, off)
		}
	}
	for i := range s.Files {
		f := &s.Files[i]
		if f.Verification != nil && len(f.Verification) != len(f.Terms) {
			return errf("file %s: %d verification entries for %d terms", f.Hash, len(f.Verification), len(f.Terms))
		}
		for j, t := range f.Terms {
			if t.ChunkEnd <= t.ChunkStart {
				return errf("file %s term %d: chunk range [%d, %d) is empty", f.Hash, j, t.ChunkStart, t.ChunkEnd)
			}
		}
	}
	return nil
}

// CheckUpload is Validate plus what the CAS requires of an uploaded shard (POST /v1/shards): every
// file has verification entries and the metadata ext (SHA-256), and the chunk hashes are not keyed.
func (s *Shard) CheckUpload() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Keyed() {
		return errf("upload shard has a chunk hash key")
	}
	for i := range s.Files {
		f := &s.Files[i]
		if f.Verification == nil {
			return errf("file %s: no verification entries (required for upload)", f.Hash)
		}
		if !f.HasSHA256 {
			return errf("file %s: no metadata ext with the SHA-256 (required for upload)", f.Hash)
		}
	}
	return nil
}
