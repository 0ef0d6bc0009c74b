package shard

// ParseUpload reads a shard sent to a CAS (POST /v1/shards) as liberally as the Hub does. Clients
// send different shapes of the same content:
//   - git-xet-transfer and xet-core: footer_size 0, no lookup tables, no footer;
//   - huggingface.js: footer_size 200 and a footer whose lookup offsets and counts are all zero;
//   - a local (cache) shard: footer, lookup tables and all.
//
// Only the header and the file and xorb sections carry what a CAS registers; they are parsed and
// checked as Parse does. After the xorb bookend, a shard with a footer may hold anything up to the
// footer (lookup tables, or nothing), which is ignored, and the footer itself is read for one thing
// only: a non-zero chunk-hash key marks a global-dedupe answer, which is not an upload (Keyed).
// The Shard returned has no Footer: it is the content in canonical form. Errors match ErrInvalid.
func ParseUpload(b []byte) (s *Shard, keyed bool, err error) {
	if len(b) < HeaderSize {
		return nil, false, errf("%d bytes is too short for a header (%d)", len(b), HeaderSize)
	}
	if [32]byte(b[:32]) != Tag {
		return nil, false, errf("bad header tag %x", b[:32])
	}
	s = &Shard{Version: le.Uint64(b[32:40])}
	if s.Version != HeaderVersion {
		return nil, false, errf("header version %d: want %d", s.Version, HeaderVersion)
	}
	end := len(b)
	switch fs := le.Uint64(b[40:48]); fs {
	case 0:
	case FooterSize:
		if len(b) < HeaderSize+FooterSize {
			return nil, false, errf("%d bytes is too short for a header and a %d-byte footer", len(b), FooterSize)
		}
		end = len(b) - FooterSize
		keyed = !parseFooter(b[end:]).HMACKey.IsZero()
	default:
		return nil, false, errf("footer_size %d: want %d or 0", fs, FooterSize)
	}
	pos, err := s.parseFiles(b[:end], HeaderSize)
	if err != nil {
		return nil, false, err
	}
	pos, err = s.parseXorbs(b[:end], pos)
	if err != nil {
		return nil, false, err
	}
	if end == len(b) && pos != len(b) {
		return nil, false, errf("%d bytes after the xorb section bookend in a shard without footer", len(b)-pos)
	}
	return s, keyed, nil
}
