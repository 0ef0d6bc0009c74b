package xorb

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func chunkOf(r *rand.Rand, n int, compressible bool) []byte {
	b := make([]byte, n)
	for i := range b {
		if compressible {
			b[i] = byte(i / 61)
		} else {
			b[i] = byte(r.Uint32())
		}
	}
	return b
}

// With a BodyCap buffer, a full xorb is built in place: the body aliases the buffer throughout.
func TestUseBufferNoGrowth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, BodyCap)
	b := NewBuilder(PolicyLZ4)
	b.UseBuffer(buf)
	data := chunkOf(r, MaxChunkRaw, false) // worst case: nothing compresses
	for b.Fits(len(data)) {
		b.Add(data, hash.Chunk(data))
	}
	x := b.Finish()
	if len(x.Body) == 0 || &x.Body[0] != &buf[:1][0] {
		t.Fatal("the body of a full incompressible xorb left the BodyCap buffer")
	}
	info, err := Index(x.Body)
	if err != nil || info.Hash != x.Hash {
		t.Fatalf("Index of the built body: %v (hash %v, want %v)", err, info, x.Hash)
	}
}

// Absorb copies records as they are: the merged body equals the records of both builders in order,
// and indexes to the merged hash with the same chunk infos Finish reports.
func TestAbsorb(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, s := NewBuilder(PolicyAuto), NewBuilder(PolicyAuto)
	var want []hash.Entry
	for i := range 5 {
		d := chunkOf(r, 9000+i*1000, i%2 == 0)
		a.Add(d, hash.Chunk(d))
		want = append(want, hash.Entry{Hash: hash.Chunk(d), Size: uint64(len(d))})
	}
	var sEntries []hash.Entry
	for i := range 4 {
		d := chunkOf(r, 12000+i*777, i%2 == 1)
		s.Add(d, hash.Chunk(d))
		sEntries = append(sEntries, hash.Entry{Hash: hash.Chunk(d), Size: uint64(len(d))})
	}
	aBody := bytes.Clone(a.body)
	sBody := bytes.Clone(s.body)
	first := a.Absorb(s)
	if first != 5 || s.Len() != 0 || s.raw != 0 {
		t.Fatalf("Absorb returned %d; source left with %d chunks", first, s.Len())
	}
	x := a.Finish()
	if !bytes.Equal(x.Body, append(aBody, sBody...)) {
		t.Fatal("merged body is not the two record sequences")
	}
	want = append(want, sEntries...)
	if x.Hash != hash.Merkle(want) {
		t.Fatal("merged xorb hash differs from the merkle hash of all chunks")
	}
	info, err := Index(x.Body)
	if err != nil {
		t.Fatal(err)
	}
	if info.Hash != x.Hash || len(info.Chunks) != len(x.Chunks) {
		t.Fatalf("Index: %d chunks, hash %s; Finish: %d, %s", len(info.Chunks), info.Hash, len(x.Chunks), x.Hash)
	}
	for i := range info.Chunks {
		if info.Chunks[i] != x.Chunks[i] {
			t.Fatalf("chunk %d: Index %+v, Finish %+v", i, info.Chunks[i], x.Chunks[i])
		}
	}
}

// AppendRecord's direct framing gives what framing first and comparing sizes gives, at the
// boundary sizes too.
func TestAppendRecordFramingEquivalence(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 15, 16, 17, 100, 4096, 65536, 65537, 100000, MaxChunkRaw} {
		for _, comp := range []bool{false, true} {
			raw := chunkOf(r, n, comp)
			for _, s := range []Scheme{SchemeLZ4, SchemeBG4LZ4} {
				got := appendTestRecord(nil, raw, s)
				src := raw
				if s == SchemeBG4LZ4 {
					src = BG4Split(nil, raw)
				}
				frame := appendLZ4Frame(nil, src)
				var want []byte
				if len(frame) < len(raw) {
					want = append(appendHeader(nil, len(frame), s, len(raw)), frame...)
				} else {
					want = append(appendHeader(nil, len(raw), SchemeNone, len(raw)), raw...)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("n=%d compressible=%v scheme %v: record differs", n, comp, s)
				}
			}
		}
	}
}
