// Package chunkindex is the client's index of chunks in local files. For each object of 1 MiB
// or more that this repository uploaded or downloaded, a map says which chunks of which xorbs lie
// at which bytes of the object in .git/lfs/objects, so the download of a new version copies its
// unchanged chunks from the old one (it is a span.Local: every chunk is hash-checked before it
// is used). A Partial is the same record for the verified part of a download in progress, kept
// beside it in git-lfs's temp directory so that an interrupted download resumes.
//
// It lives in the repository (.git/lfs/xet/chunks), not in the shared cache root: the files it
// names are that repository's objects, it goes when the repository goes, and no other clone can
// make its paths wrong.
package chunkindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// The layout of a map (and of a Partial's record), little-endian:
//
//	header: magic "XETLCM01", u64 file size, 32-byte Xet file hash
//	records, one per span: u32 body length, u32 CRC-32C of the body, body:
//	  u64 position in the file, 32-byte xorb hash, u32 first chunk index, u32 chunk count n,
//	  u64 XorbEnd (where the next chunk starts in the xorb; 0: unknown),
//	  n × (u32 chunk size, 32-byte chunk hash)
//
// Records are appended; a reader stops at the first one that is cut short or fails its CRC (the
// tail a killed writer left) and keeps those before it.
const (
	magic      = "XETLCM01"
	headerSize = 8 + 8 + 32
	recHead    = 8
	spanHead   = 8 + 32 + 4 + 4 + 8
	entrySize  = 4 + 32
	// maxChunks bounds a record: a span lies in one xorb (at most 8192 chunks).
	maxChunks = 8192
	// maxChunkSize bounds one chunk's size (xet chunks are at most 128 KiB; more is damage).
	maxChunkSize = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the start of a map: which file it describes.
type header struct {
	size int64
	file hash.Hash
}

func (h header) append(b []byte) []byte {
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.size))
	return append(b, h.file[:]...)
}

func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize || string(b[:8]) != magic {
		return header{}, errors.New("not a chunk map (bad magic)")
	}
	h := header{size: int64(binary.LittleEndian.Uint64(b[8:16]))}
	copy(h.file[:], b[16:48])
	if h.size < 0 {
		return header{}, fmt.Errorf("chunk map: bad file size %d", h.size)
	}
	return h, nil
}

// appendRecord appends sp as one record.
func appendRecord(b []byte, sp span.Span) []byte {
	n := spanHead + len(sp.Chunks)*entrySize
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, 0)
	body := len(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(sp.Pos))
	b = append(b, sp.Xorb[:]...)
	b = binary.LittleEndian.AppendUint32(b, sp.Start)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sp.Chunks)))
	b = binary.LittleEndian.AppendUint64(b, sp.XorbEnd)
	for _, e := range sp.Chunks {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.Size))
		b = append(b, e.Hash[:]...)
	}
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(b[body:], castagnoli))
	return b
}

// parseRecords returns the spans of the records in b (after the header), up to the first bad
// one, and the length of the good prefix. Spans must lie inside a file of size bytes.
func parseRecords(b []byte, size int64) ([]span.Span, int) {
	var out []span.Span
	off := 0
	for len(b)-off >= recHead {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		sum := binary.LittleEndian.Uint32(b[off+4:])
		if n < spanHead || n > spanHead+maxChunks*entrySize || (n-spanHead)%entrySize != 0 || len(b)-off-recHead < n {
			break
		}
		body := b[off+recHead : off+recHead+n]
		if crc32.Checksum(body, castagnoli) != sum {
			break
		}
		sp, ok := parseSpan(body, size)
		if !ok {
			break
		}
		out = append(out, sp)
		off += recHead + n
	}
	return out, off
}

func parseSpan(body []byte, size int64) (span.Span, bool) {
	sp := span.Span{Pos: int64(binary.LittleEndian.Uint64(body))}
	copy(sp.Xorb[:], body[8:40])
	sp.Start = binary.LittleEndian.Uint32(body[40:])
	n := int(binary.LittleEndian.Uint32(body[44:]))
	sp.XorbEnd = binary.LittleEndian.Uint64(body[48:])
	if n == 0 || n != (len(body)-spanHead)/entrySize || sp.Pos < 0 || uint64(sp.Start)+uint64(n) > maxChunks {
		return sp, false
	}
	sp.Chunks = make([]hash.Entry, n)
	end := sp.Pos
	for k := range sp.Chunks {
		e := body[spanHead+k*entrySize:]
		sz := binary.LittleEndian.Uint32(e)
		if sz == 0 || sz > maxChunkSize {
			return sp, false
		}
		sp.Chunks[k].Size = uint64(sz)
		copy(sp.Chunks[k].Hash[:], e[4:36])
		end += int64(sz)
	}
	return sp, end <= size
}

// readMap reads a whole map from r (at most limit bytes).
func readMap(r io.Reader, limit int64) (header, []span.Span, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return header{}, nil, err
	}
	h, err := parseHeader(b)
	if err != nil {
		return header{}, nil, err
	}
	spans, _ := parseRecords(b[headerSize:], h.size)
	return h, spans, nil
}
