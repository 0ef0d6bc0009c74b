package localshards

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// This file is a lean reader of the parts of a shard file the chunk index needs: the header, the
// footer, and the xorb section's headers and chunk keys (xet-formats.md §5). It writes keys straight
// into the index's arrays with no per-entry allocation, which is what lets a cache of 16 million
// chunks open in well under a second. Everything else (file section, lookups) is skipped: a wrong or
// corrupt byte there cannot produce a wrong answer, since every candidate is verified against the full
// chunk hash on a hit (chunks.go). Full validation of a shard that is about to be stored is shard.Parse.

var le = binary.LittleEndian

// errFormat is matched by every error of a malformed shard file: such a file is set aside.
var errFormat = errors.New("malformed cached shard")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errFormat, fmt.Sprintf(format, args...))
}

// meta is what the cache knows of a shard file from its header and footer.
type meta struct {
	size     int64
	created  uint64 // Unix seconds
	expires  uint64 // Unix seconds; 0 = already expired
	key      hash.Hash
	xorbOff  int64 // xorb section: [xorbOff, xorbEnd), bookend included
	xorbEnd  int64
	maxChunk int // upper bound of the chunk entries in the xorb section
}

// minShardSize: header, file bookend, xorb bookend, footer.
const minShardSize = shard.HeaderSize + 2*shard.EntrySize + shard.FooterSize

// parseMeta checks the header (first 48 bytes of the file) and the footer (last 200 bytes) of a
// cached shard of size bytes, and returns where its xorb section is.
func parseMeta(head, foot []byte, size int64) (meta, error) {
	if size < minShardSize {
		return meta{}, formatErr("%d bytes, shorter than the smallest shard with footer (%d)", size, minShardSize)
	}
	if len(head) < shard.HeaderSize || len(foot) < shard.FooterSize {
		return meta{}, formatErr("short header or footer")
	}
	if [32]byte(head[:32]) != shard.Tag {
		return meta{}, formatErr("no shard tag")
	}
	if v := le.Uint64(head[32:]); v != shard.HeaderVersion {
		return meta{}, formatErr("header version %d, want %d", v, shard.HeaderVersion)
	}
	if fs := le.Uint64(head[40:]); fs != shard.FooterSize {
		return meta{}, formatErr("footer_size %d, want %d (a cached shard has a footer)", fs, shard.FooterSize)
	}
	f := func(off int) uint64 { return le.Uint64(foot[off:]) }
	if v := f(0); v != shard.FooterVersion {
		return meta{}, formatErr("footer version %d, want %d", v, shard.FooterVersion)
	}
	footerAt := uint64(size) - shard.FooterSize
	if fo := f(192); fo != footerAt {
		return meta{}, formatErr("footer_offset %d, but the footer starts at %d (truncated or extended file)", fo, footerAt)
	}
	fileOff, xorbOff := f(8), f(16)
	fileLU, fileLUN, xorbLU, xorbLUN, chunkLU, chunkLUN := f(24), f(32), f(40), f(48), f(56), f(64)
	if fileOff != shard.HeaderSize {
		return meta{}, formatErr("file_info_offset %d, want %d", fileOff, shard.HeaderSize)
	}
	if xorbOff < fileOff+shard.EntrySize || (xorbOff-fileOff)%shard.EntrySize != 0 {
		return meta{}, formatErr("xorb_info_offset %d not an entry boundary after the file section", xorbOff)
	}
	// Lookups follow the xorb section back to back, then the footer. Counts are bounded by the size
	// before multiplying, so nothing overflows.
	if fileLUN > footerAt || xorbLUN > footerAt || chunkLUN > footerAt {
		return meta{}, formatErr("lookup counts %d/%d/%d exceed the file", fileLUN, xorbLUN, chunkLUN)
	}
	if fileLU < xorbOff+shard.EntrySize || (fileLU-xorbOff)%shard.EntrySize != 0 ||
		fileLU+12*fileLUN != xorbLU || xorbLU+12*xorbLUN != chunkLU || chunkLU+16*chunkLUN != footerAt {
		return meta{}, formatErr("section offsets xorb=%d lookups=%d/%d/%d footer=%d are inconsistent",
			xorbOff, fileLU, xorbLU, chunkLU, footerAt)
	}
	m := meta{
		size:    size,
		created: f(104),
		expires: f(112),
		xorbOff: int64(xorbOff),
		xorbEnd: int64(fileLU),
	}
	copy(m.key[:], foot[72:104])
	m.maxChunk = int((m.xorbEnd-m.xorbOff)/shard.EntrySize) - 1
	return m, nil
}

// xorbInfo locates one xorb of a cached shard: refs base..base+n-1 are its chunks.
type xorbInfo struct {
	hash  hash.Hash
	off   int64  // offset of its header in the shard file
	base  uint32 // ref of chunk 0
	n     uint32 // chunk count
	shard uint32 // index into view.shards
}

// scanXorbs walks a xorb section (sec, which starts at file offset secOff and ends with the bookend)
// and writes each chunk's truncated hash into keys and its ref (base + running count) into refs,
// both of length >= the number of chunk entries. It appends one xorbInfo per xorb (shard field
// set to sh) and returns the number of chunks written.
func scanXorbs(sec []byte, secOff int64, base uint32, sh uint32, keys []uint64, refs []uint32, xorbs []xorbInfo) (int, []xorbInfo, error) {
	const es = shard.EntrySize
	if len(sec) < es || len(sec)%es != 0 {
		return 0, xorbs, formatErr("xorb section of %d bytes is not whole entries", len(sec))
	}
	n := 0
	pos := 0
	for {
		if len(sec)-pos < es {
			return 0, xorbs, formatErr("xorb section has no bookend")
		}
		h := hash.Hash(sec[pos : pos+32])
		if h == hash.Marker {
			if pos+es != len(sec) {
				return 0, xorbs, formatErr("xorb bookend at %d is not the end of the section", secOff+int64(pos))
			}
			return n, xorbs, nil
		}
		cnt := le.Uint32(sec[pos+36:])
		body := pos + es
		if rem := len(sec) - body - es; rem < 0 || uint64(cnt) > uint64(rem)/es {
			return 0, xorbs, formatErr("xorb %s at %d claims %d chunks, more than the section holds", h, secOff+int64(pos), cnt)
		}
		xorbs = append(xorbs, xorbInfo{hash: h, off: secOff + int64(pos), base: base + uint32(n), n: cnt, shard: sh})
		ents := sec[body : body+int(cnt)*es]
		k := keys[n : n+int(cnt)]
		r := refs[n : n+int(cnt)]
		ref := base + uint32(n)
		for i := range k {
			k[i] = le.Uint64(ents[i*es:])
			r[i] = ref + uint32(i)
		}
		n += int(cnt)
		pos = body + int(cnt)*es
	}
}

// decodeXorb decodes a xorb block read from a shard file (header then n entries) after checking that
// it is the xorb the index expects.
func decodeXorb(b []byte, want hash.Hash, n uint32) ([]shard.XorbChunk, error) {
	const es = shard.EntrySize
	if len(b) != (int(n)+1)*es {
		return nil, formatErr("xorb block of %d bytes, want %d", len(b), (int(n)+1)*es)
	}
	if h := hash.Hash(b[:32]); h != want {
		return nil, formatErr("xorb header %s where %s was indexed", h, want)
	}
	if c := le.Uint32(b[36:]); c != n {
		return nil, formatErr("xorb %s has %d chunks, %d were indexed", want, c, n)
	}
	out := make([]shard.XorbChunk, n)
	for i := range out {
		e := b[(i+1)*es:]
		out[i] = shard.XorbChunk{
			Hash:     hash.Hash(e[:32]),
			RawStart: le.Uint32(e[32:]),
			RawLen:   le.Uint32(e[36:]),
			Flags:    le.Uint32(e[40:]),
			Unused:   le.Uint32(e[44:]),
		}
	}
	return out, nil
}
