package chunkindex

import (
	"bytes"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// FuzzChunkMap: any bytes read as a map or a partial record give an error or spans that lie in
// the file, never a panic or an allocation beyond the input's size.
func FuzzChunkMap(f *testing.F) {
	good := header{size: 4 << 20, file: hash.Hash{1}}.append(nil)
	for _, sp := range testSpans(4<<20, hash.Hash{2}, hash.Hash{3}) {
		good = appendRecord(good, sp)
	}
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(good[:headerSize])
	f.Add([]byte("XETLCM01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, spans, err := readMap(bytes.NewReader(b), 1<<20)
		if err != nil {
			return
		}
		for _, sp := range spans {
			if sp.Pos < 0 || sp.Pos+sp.Bytes() > h.size || len(sp.Chunks) == 0 || int(sp.Start)+len(sp.Chunks) > maxChunks {
				t.Fatalf("span out of bounds: pos %d, %d bytes, chunks %d+%d, file %d", sp.Pos, sp.Bytes(), sp.Start, len(sp.Chunks), h.size)
			}
		}
		// What was read back is written the same way.
		again := h.append(nil)
		for _, sp := range spans {
			again = appendRecord(again, sp)
		}
		if _, good := parseRecords(again[headerSize:], h.size); good != len(again)-headerSize {
			t.Fatal("spans read back do not round-trip")
		}
	})
}
