package xorb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// splitFixed cuts data into pieces of the given sizes, cycling.
func splitFixed(data []byte, sizes ...int) [][]byte {
	var out [][]byte
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// build adds the chunks of each file to a Builder and finishes it.
func build(t *testing.T, p Policy, files ...[][]byte) *Xorb {
	t.Helper()
	b := NewBuilder(p)
	n := 0
	for _, f := range files {
		b.StartFile()
		for _, c := range f {
			if !b.Fits(len(c)) {
				t.Fatalf("chunk %d does not fit", n)
			}
			if i := b.Add(c, hash.Chunk(c)); i != n {
				t.Fatalf("Add returned %d, want %d", i, n)
			}
			n++
		}
	}
	return b.Finish()
}

func TestBuilderIndexFooterRoundTrip(t *testing.T) {
	text := splitFixed(csvText(400000, 1), 65536, 131072, 9000, 40000)
	floats := splitFixed(halfData(300000, 2), 65536)
	random := splitFixed(vectors.SplitMix(100000, 3), 50000)
	x := build(t, PolicyAuto, text, floats, random)

	var entries []hash.Entry
	var raw uint64
	for _, f := range [][][]byte{text, floats, random} {
		for _, c := range f {
			entries = append(entries, hash.Entry{Hash: hash.Chunk(c), Size: uint64(len(c))})
			raw += uint64(len(c))
		}
	}
	if x.Hash != hash.Merkle(entries) || x.RawBytes != raw || len(x.Chunks) != len(entries) {
		t.Fatalf("xorb hash/raw/chunks %s %d %d, want %s %d %d", x.Hash, x.RawBytes, len(x.Chunks), hash.Merkle(entries), raw, len(entries))
	}
	// Schemes: text gets LZ4, bf16 data BG4, random data falls back to none.
	var schemes []Scheme
	for _, c := range x.Chunks {
		schemes = append(schemes, c.Scheme)
	}
	for i, c := range x.Chunks {
		want := SchemeLZ4
		if i >= len(text) {
			// The predictor picks BG4; a chunk it does not shrink is stored raw.
			want = SchemeBG4LZ4
			if c.Scheme == SchemeNone {
				want = SchemeNone
			}
		}
		if i >= len(text)+len(floats) {
			want = SchemeNone
		}
		if c.Scheme != want {
			t.Errorf("chunk %d: scheme %v, want %v (all: %v)", i, c.Scheme, want, schemes)
		}
	}

	obj := x.Footer().AppendTo(bytes.Clone(x.Body))
	for _, b := range [][]byte{x.Body, obj} {
		info, err := Index(b)
		if err != nil {
			t.Fatalf("Index: %v", err)
		}
		if info.Hash != x.Hash || info.RecordsLen != len(x.Body) || info.RawBytes != x.RawBytes {
			t.Errorf("Index: hash %s records %d raw %d", info.Hash, info.RecordsLen, info.RawBytes)
		}
		if len(info.Chunks) != len(x.Chunks) {
			t.Fatalf("Index: %d chunks, want %d", len(info.Chunks), len(x.Chunks))
		}
		for i := range info.Chunks {
			if info.Chunks[i] != x.Chunks[i] {
				t.Errorf("chunk %d: Index %+v, Builder %+v", i, info.Chunks[i], x.Chunks[i])
			}
		}
		if (info.Footer != nil) != (len(b) > len(x.Body)) {
			t.Errorf("footer presence %v for %d-byte object", info.Footer != nil, len(b))
		}
	}
	f, recordsLen, err := ParseFooter(obj)
	if err != nil || recordsLen != len(x.Body) {
		t.Fatalf("ParseFooter: %d %v", recordsLen, err)
	}
	want := x.Footer()
	if f.Version != 1 || f.Hash != x.Hash || !equalHashes(f.ChunkHashes, want.ChunkHashes) ||
		!equalU32(f.BoundaryEnds, want.BoundaryEnds) || !equalU32(f.RawEnds, want.RawEnds) {
		t.Errorf("footer round trip: %+v", f)
	}
	if got := f.AppendTo(nil); !bytes.Equal(got, obj[len(x.Body):]) || len(got) != f.Size() {
		t.Errorf("re-serialised footer differs (%d bytes, Size %d)", len(got), f.Size())
	}
	if _, _, err := ParseFooter(x.Body); !errors.Is(err, ErrNoFooter) {
		t.Errorf("records only: ParseFooter err %v, want ErrNoFooter", err)
	}
}

func TestFooterLayoutV1(t *testing.T) {
	h := func(b byte) hash.Hash { var x hash.Hash; x[0] = b; return x }
	f := &Footer{Version: 1, Hash: h(9), ChunkHashes: []hash.Hash{h(1), h(2)}, BoundaryEnds: []uint32{100, 250}, RawEnds: []uint32{1000, 3000}}
	b := f.AppendTo(nil)
	n := 2
	le := binary.LittleEndian
	if len(b) != 92+40*n+4 || string(b[:7]) != "XETBLOB" || b[7] != 1 || b[8] != 9 ||
		string(b[40:47]) != "XBLBHSH" || b[47] != 0 || le.Uint32(b[48:]) != 2 || b[52] != 1 || b[84] != 2 ||
		string(b[52+32*n:59+32*n]) != "XBLBBND" || b[59+32*n] != 1 || le.Uint32(b[60+32*n:]) != 2 ||
		le.Uint32(b[64+32*n:]) != 100 || le.Uint32(b[68+32*n:]) != 250 ||
		le.Uint32(b[64+36*n:]) != 1000 || le.Uint32(b[68+36*n:]) != 3000 ||
		le.Uint32(b[64+40*n:]) != 2 || le.Uint32(b[68+40*n:]) != uint32(52+40*n) || le.Uint32(b[72+40*n:]) != uint32(40+8*n) ||
		!bytes.Equal(b[76+40*n:92+40*n], make([]byte, 16)) || le.Uint32(b[92+40*n:]) != uint32(92+40*n) {
		t.Fatalf("v1 footer layout wrong:\n% x", b)
	}
	// Every way of breaking a field is caught.
	obj := append(make([]byte, 250), b...)
	if _, rl, err := ParseFooter(obj); err != nil || rl != 250 {
		t.Fatalf("ParseFooter: %d %v", rl, err)
	}
	for _, c := range []struct {
		off  int
		want string
		val  uint32 // when non-zero, the u32 written at off instead of flipping a byte
	}{
		{250 + 7, "version", 0},
		{250 + 40, "XBLBHSH", 0},
		{250 + 47, "hashes section version", 0},
		{250 + 48, "cannot hold", 0},
		{250 + 52 + 32*n, "XBLBBND", 0},
		{250 + 59 + 32*n, "boundaries section version", 0},
		{250 + 60 + 32*n, "boundaries section counts", 0},
		{250 + 64 + 32*n, "before its start", 300},
		{250 + 68 + 32*n, "footer starts at", 240},
		{250 + 68 + 36*n, "below the previous", 10},
		{250 + 64 + 40*n, "trailer counts", 0},
		{250 + 68 + 40*n, "hashes section offset", 0},
		{250 + 72 + 40*n, "boundaries section offset", 0},
		{250 + 92 + 40*n, "XETBLOB", 0},
	} {
		bad := bytes.Clone(obj)
		bad[c.off] ^= 0xC3
		if c.val != 0 {
			le.PutUint32(bad[c.off:], c.val)
		}
		if _, _, err := ParseFooter(bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("byte %d changed: err %v, want one mentioning %q", c.off-250, err, c.want)
		}
	}
}

func TestFooterV0(t *testing.T) {
	data := [][]byte{csvText(20000, 1), csvText(30000, 2)}
	x := build(t, PolicyLZ4, data)
	// Hand-built v0 footer: XETBLOB, 0, hash, n, boundaries, hashes, 16 reserved, length.
	le := binary.LittleEndian
	v0 := append([]byte("XETBLOB"), 0)
	v0 = append(v0, x.Hash[:]...)
	v0 = le.AppendUint32(v0, 2)
	for _, c := range x.Chunks {
		v0 = le.AppendUint32(v0, c.End)
	}
	for _, c := range x.Chunks {
		v0 = append(v0, c.Hash[:]...)
	}
	v0 = append(v0, make([]byte, 16)...)
	v0 = le.AppendUint32(v0, uint32(60+36*2))
	obj := append(bytes.Clone(x.Body), v0...)

	f, rl, err := ParseFooter(obj)
	if err != nil || rl != len(x.Body) {
		t.Fatalf("ParseFooter v0: %d %v", rl, err)
	}
	if f.Version != 0 || f.Hash != x.Hash || f.RawEnds != nil || !equalU32(f.BoundaryEnds, x.Footer().BoundaryEnds) ||
		!equalHashes(f.ChunkHashes, x.Footer().ChunkHashes) {
		t.Errorf("v0 footer parsed as %+v", f)
	}
	if !bytes.Equal(f.AppendTo(nil), v0) {
		t.Errorf("v0 footer does not re-serialise byte for byte")
	}
	info, err := Index(obj)
	if err != nil || info.Footer == nil || info.Hash != x.Hash {
		t.Fatalf("Index with v0 footer: %v", err)
	}
	// An empty v0 footer is 60 bytes plus the length.
	empty := (&Footer{Version: 0}).AppendTo(nil)
	if len(empty) != 64 || le.Uint32(empty[60:]) != 60 {
		t.Errorf("empty v0 footer % x", empty)
	}
	if f, rl, err := ParseFooter(empty); err != nil || rl != 0 || len(f.ChunkHashes) != 0 {
		t.Errorf("empty v0 footer: %v", err)
	}
}

func TestIndexRejects(t *testing.T) {
	x := build(t, PolicyAuto, splitFixed(csvText(200000, 1), 50000))
	obj := x.Footer().AppendTo(bytes.Clone(x.Body))
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated record", x.Body[:len(x.Body)-3], "truncated"},
		{"partial header", append(bytes.Clone(x.Body), 0, 1, 2), "truncated"},
		{"garbage after footer", append(bytes.Clone(obj), 1), "footer"},
		{"footer hash", flip(obj, len(x.Body)+8), "hash"},
		{"footer chunk hash", flip(obj, len(x.Body)+52), "chunk 0 hash"},
		{"corrupt record", flip(x.Body, 8), "chunk 0"},
	}
	for _, c := range cases {
		if _, err := Index(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	// AllowTrailing ignores a cut-off record; a cut-off footer ("XETB", as in the dataset's xorb)
	// ends the records even without it.
	info, err := IndexWith(x.Body[:len(x.Body)-3], IndexOptions{AllowTrailing: true})
	if err != nil || len(info.Chunks) != len(x.Chunks)-1 || info.RecordsLen != int(x.Chunks[len(x.Chunks)-2].End) {
		t.Errorf("AllowTrailing: %v", err)
	}
	info, err = Index(append(bytes.Clone(x.Body), "XETB"...))
	if err != nil || info.Hash != x.Hash || info.RecordsLen != len(x.Body) {
		t.Errorf("cut-off footer: %v", err)
	}
	// Counts beyond the limits.
	var many []byte
	one := appendTestRecord(nil, []byte{7}, SchemeNone)
	for i := 0; i <= MaxChunks; i++ {
		many = append(many, one...)
	}
	if _, err := Index(many); err == nil || !strings.Contains(err.Error(), "more than 8192 chunks") {
		t.Errorf("8193 chunks: %v", err)
	}
	// Over 64 MiB raw is fine within 64 MiB serialized (huggingface.js's cap), not beyond both.
	var big []byte
	rec := appendTestRecord(nil, bytes.Repeat([]byte("z"), MaxChunkRaw), SchemeLZ4)
	for i := 0; i <= MaxBytes/MaxChunkRaw; i++ {
		big = append(big, rec...)
	}
	if info, err := Index(big); err != nil || info.RawBytes <= MaxBytes {
		t.Errorf("over 64 MiB raw, small serialized: %v", err)
	}
	big = big[:0]
	raw := make([]byte, MaxChunkRaw)
	for i := 0; i <= MaxBytes/MaxChunkRaw; i++ {
		raw[0], raw[1] = byte(i), byte(i>>8)
		big = append(big, appendTestRecord(nil, raw, SchemeNone)...)
	}
	if _, err := Index(big); err == nil || !strings.Contains(err.Error(), "serialized bytes") {
		t.Errorf("over 64 MiB raw and serialized: %v", err)
	}
}

func TestRecordReaderAndDecodeRecords(t *testing.T) {
	chunks := splitFixed(csvText(300000, 1), 70000, 20000)
	x := build(t, PolicyAuto, chunks)
	obj := x.Footer().AppendTo(bytes.Clone(x.Body))
	for _, b := range [][]byte{x.Body, obj, append(bytes.Clone(x.Body), "XETBL"...)} {
		r := NewRecordReader(io.MultiReader(bytes.NewReader(b[:1000]), bytes.NewReader(b[1000:])))
		for i := 0; ; i++ {
			raw, h, err := r.Next(nil)
			if err == io.EOF {
				if i != len(chunks) {
					t.Errorf("EOF after %d chunks, want %d", i, len(chunks))
				}
				break
			}
			if err != nil || !bytes.Equal(raw, chunks[i]) || h.Scheme != x.Chunks[i].Scheme {
				t.Fatalf("chunk %d: %v", i, err)
			}
		}
	}
	r := NewRecordReader(bytes.NewReader(x.Body[:len(x.Body)-5]))
	var err error
	for err == nil {
		_, _, err = r.Next(nil)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut-off record: %v, want io.ErrUnexpectedEOF", err)
	}

	// DecodeRecords on a range of records, as fetched.
	c := x.Chunks
	rng := x.Body[c[1].Start:c[3].End]
	var got [][]byte
	if err := decodeAllRecords(rng, func(i int, raw []byte) error {
		got = append(got, bytes.Clone(raw))
		return nil
	}); err != nil || len(got) != 3 || !bytes.Equal(got[0], chunks[1]) || !bytes.Equal(got[2], chunks[3]) {
		t.Errorf("DecodeRecords: %v, %d chunks", err, len(got))
	}
	stop := errors.New("stop")
	if err := decodeAllRecords(rng, func(int, []byte) error { return stop }); err != stop {
		t.Errorf("DecodeRecords did not return fn's error: %v", err)
	}
	if err := decodeAllRecords(rng[:len(rng)-1], func(int, []byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Errorf("DecodeRecords on a cut range: %v", err)
	}
}

func TestBuilderCutsAndPolicies(t *testing.T) {
	b := NewBuilder(PolicyNone)
	chunk := bytes.Repeat([]byte{1}, MaxChunkRaw)
	for i := 0; i < MaxBytes/MaxChunkRaw; i++ {
		if !b.Fits(len(chunk)) {
			t.Fatalf("chunk %d does not fit", i)
		}
		b.Add(chunk, hash.Zero)
	}
	if b.Fits(1) || !b.Fits(0) || b.raw != MaxBytes {
		t.Errorf("at 64 MiB: Fits(1)=%v Fits(0)=%v raw %d", b.Fits(1), b.Fits(0), b.raw)
	}
	x := b.Finish()
	if len(x.Chunks) != 512 || x.Chunks[0].Scheme != SchemeNone || len(x.Body) != MaxBytes+8*512 {
		t.Errorf("finished xorb: %d chunks, body %d", len(x.Chunks), len(x.Body))
	}
	if b.Len() != 0 || b.raw != 0 || !b.Fits(MaxChunkRaw) {
		t.Errorf("Builder not reset by Finish")
	}
	for i := 0; i < MaxChunks; i++ {
		b.Add([]byte{byte(i)}, hash.Zero)
	}
	if b.Fits(1) || b.Len() != MaxChunks {
		t.Errorf("8192 chunks: Fits(1) = true")
	}

	// Policies force their scheme (falling back to none only when it does not pay).
	text := csvText(65536, 1)
	for _, c := range []struct {
		p    Policy
		want Scheme
	}{{PolicyNone, SchemeNone}, {PolicyLZ4, SchemeLZ4}, {PolicyBG4LZ4, SchemeBG4LZ4}, {PolicyAuto, SchemeLZ4}} {
		x := build(t, c.p, [][]byte{text})
		if x.Chunks[0].Scheme != c.want {
			t.Errorf("policy %v: scheme %v, want %v", c.p, x.Chunks[0].Scheme, c.want)
		}
	}

	// Auto: the predictor runs on the first chunk of each 32-chunk block of a file segment. A file
	// whose first chunk is text and the rest bf16 data keeps LZ4 for 32 chunks, then switches.
	// Each chunk repeats itself once, so both LZ4 and BG4-LZ4 pay and the scheme chosen shows.
	var half [][]byte
	for i := 0; i < 40; i++ {
		h := halfData(4096, uint64(i))
		half = append(half, append(h, h...))
	}
	mixed := append([][]byte{text[:8192]}, half[:39]...)
	x = build(t, PolicyAuto, mixed)
	for i, c := range x.Chunks {
		want := SchemeLZ4
		if i >= 32 {
			want = SchemeBG4LZ4
		}
		if c.Scheme != want {
			t.Errorf("block test chunk %d: %v, want %v", i, c.Scheme, want)
		}
	}
	// A new file segment retests at once.
	x = build(t, PolicyAuto, mixed[:5], half[:3])
	if x.Chunks[4].Scheme != SchemeLZ4 || x.Chunks[5].Scheme != SchemeBG4LZ4 {
		t.Errorf("StartFile did not retest: %v %v", x.Chunks[4].Scheme, x.Chunks[5].Scheme)
	}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range []Policy{PolicyAuto, PolicyNone, PolicyLZ4, PolicyBG4LZ4} {
		if got, err := ParsePolicy(p.String()); err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	if p, err := ParsePolicy(""); err != nil || p != PolicyAuto {
		t.Errorf(`ParsePolicy("") = %v, %v`, p, err)
	}
	if _, err := ParsePolicy("zstd"); err == nil || !strings.Contains(err.Error(), "zstd") {
		t.Errorf("ParsePolicy(zstd): %v", err)
	}
	if SchemeBG4LZ4.String() != "bg4-lz4" || Scheme(7).String() != "scheme(7)" {
		t.Errorf("Scheme.String: %s %s", SchemeBG4LZ4, Scheme(7))
	}
}

func flip(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 0x5A; return c }

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalHashes(a, b []hash.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
