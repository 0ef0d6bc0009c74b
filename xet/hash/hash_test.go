package hash

import (
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
)

func rawHash(t *testing.T, s string) Hash {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("raw hash %q: %v", s, err)
	}
	return Hash(b)
}

func TestHexStringVectors(t *testing.T) {
	for _, l := range vectors.Lines(t, "HEXSTRING") {
		raw := rawHash(t, vectors.Field(t, l, "raw"))
		want := vectors.Field(t, l, "str")
		if got := raw.String(); got != want {
			t.Errorf("String(%x) = %s, want %s", raw[:], got, want)
		}
		back, err := Parse(want)
		if err != nil || back != raw {
			t.Errorf("Parse(%s) = %x, %v; want %x", want, back[:], err, raw[:])
		}
	}
}

func TestChunkHashVector(t *testing.T) {
	l := vectors.Lines(t, "CHUNKHASH")[0]
	in := strings.TrimSuffix(strings.TrimPrefix(strings.Join(l[1:3], " "), "input_ascii='"), "'")
	got := Chunk([]byte(in))
	if want := rawHash(t, vectors.Field(t, l, "raw")); got != want {
		t.Fatalf("Chunk(%q) = %x, want %x", in, got[:], want[:])
	}
	if got.String() != vectors.Field(t, l, "str") {
		t.Fatalf("Chunk(%q).String() = %s", in, got)
	}
	if NewChunkHasher().Sum([]byte(in)) != got {
		t.Fatal("ChunkHasher disagrees with Chunk")
	}
}

func TestNodeAndVerificationVectors(t *testing.T) {
	l := vectors.Lines(t, "NODEHASH")[0]
	var children []Entry
	for _, c := range strings.Split(vectors.Field(t, l, "children"), ",") {
		hs, size, _ := strings.Cut(c, ":")
		n, err := strconv.ParseUint(size, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		children = append(children, Entry{mustParse(hs), n})
	}
	node := Node(children)
	if got, want := node.Hash.String(), vectors.Field(t, l, "result"); got != want {
		t.Errorf("Node = %s, want %s", got, want)
	}
	if node.Size != 300 {
		t.Errorf("Node size = %d, want 300", node.Size)
	}

	v := vectors.Lines(t, "VERIFY")[0]
	var chunks []Hash
	for _, c := range strings.Split(vectors.Field(t, v, "raw_chunks"), ",") {
		chunks = append(chunks, rawHash(t, c))
	}
	// The vector's result is given in the hash-string form.
	if got, want := Verification(chunks).String(), vectors.Field(t, v, "result"); got != want {
		t.Errorf("Verification = %s, want %s", got, want)
	}
}

func TestAggregatedVectors(t *testing.T) {
	cases := vectors.Cases(t)
	if len(cases) != 18 {
		t.Fatalf("%d CASE vectors, want 18", len(cases))
	}
	outputs := 0
	for i, c := range cases {
		entries := make([]Entry, len(c.Chunks))
		for j, ch := range c.Chunks {
			entries[j] = Entry{mustParse(ch.Hash), ch.Size}
		}
		if c.Xorb != "" {
			outputs++
			if got := Merkle(entries); got.String() != c.Xorb {
				t.Errorf("case %d: Merkle = %s, want %s", i, got, c.Xorb)
			}
		}
		for _, s := range c.Salted {
			outputs++
			if got := FileWithSalt(entries, mustParse(s[0])); got.String() != s[1] {
				t.Errorf("case %d salt %s: file hash = %s, want %s", i, s[0], got, s[1])
			}
		}
	}
	if outputs != 72 {
		t.Errorf("checked %d outputs, want 72", outputs)
	}
}

func TestReferenceFileHashes(t *testing.T) {
	ref := vectors.Lines(t, "REFFILE")[0]
	chunks := vectors.ReferenceChunks(t)
	entries := make([]Entry, len(chunks))
	raw := make([]Hash, len(chunks))
	var total uint64
	eligible := -1
	for i, c := range chunks {
		entries[i] = Entry{mustParse(c.Hash), c.Size}
		raw[i] = entries[i].Hash
		total += c.Size
		if i > 0 && raw[i].Mod(1024) == 0 {
			eligible = i
		}
	}
	if strconv.Itoa(len(chunks)) != vectors.Field(t, ref, "n") || strconv.FormatUint(total, 10) != vectors.Field(t, ref, "bytes") {
		t.Fatalf("reference chunks: %d chunks, %d bytes", len(chunks), total)
	}
	if got := Merkle(entries).String(); got != vectors.Field(t, ref, "xorb") {
		t.Errorf("xorb hash = %s", got)
	}
	if got := File(entries).String(); got != vectors.Field(t, ref, "file") {
		t.Errorf("file hash = %s", got)
	}
	if got := Verification(raw).String(); got != vectors.Field(t, ref, "range_all") {
		t.Errorf("range hash = %s", got)
	}
	if strconv.Itoa(eligible) != vectors.Field(t, ref, "global_dedup_eligible_idx") {
		t.Errorf("global-dedupe eligible chunk = %d", eligible)
	}
}

func TestKeyedDedupeVector(t *testing.T) {
	l := vectors.Lines(t, "DEDUPE_HMAC_KEY")[0]
	key := rawHash(t, vectors.Field(t, l, "raw"))
	if !strings.HasPrefix(key.String(), "1234567812345678") {
		t.Fatalf("key string %s", key)
	}
	// The keyed hash is blake3_keyed(key, raw hash); its full check against the dedupe shard lives
	// in xet/shard. Here: it differs from the unkeyed value and depends on the key.
	h := Chunk([]byte("x"))
	if Keyed(key, h) == h || Keyed(key, h) == Keyed(Zero, h) {
		t.Fatal("keyed hash does not depend on the key")
	}
}

func TestOrderingAndMod(t *testing.T) {
	// Word 0 decides before any later byte: byte 7 is the most significant byte of word 0.
	var a, b Hash
	a[7] = 1  // word0 = 1<<56
	b[0] = 2  // word0 = 2
	b[31] = 9 // irrelevant
	if !b.Less(a) || a.Less(b) || a.Compare(a) != 0 {
		t.Fatal("ordering is not by little-endian words")
	}
	hs := []Hash{a, b, Zero, Marker}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Less(hs[j]) })
	if hs[0] != Zero || hs[1] != b || hs[2] != a || hs[3] != Marker {
		t.Fatal("sorted order wrong")
	}
	var m Hash
	m[24] = 5
	m[31] = 0x80
	if m.Mod(4) != 1 || m.Mod(1024) != 5 {
		t.Fatalf("Mod uses the wrong bytes: %d %d", m.Mod(4), m.Mod(1024))
	}
	if File(nil) != Zero || Merkle(nil) != Zero {
		t.Fatal("empty file must hash to zero")
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"", "abc", strings.Repeat("g", 64), strings.Repeat("0", 65)} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	oid := "f41255b252f776125f2b657136654e4d4d5d2ccf8ef4db0ec186bd1981b69734"
	h, err := ParseSHA256(oid)
	if err != nil || h.String() != oid {
		t.Fatalf("ParseSHA256 round trip: %s %v", h, err)
	}
	if h[0] != 0x12 || h[1] != 0x76 { // raw starts 1276f752 (xet-formats.md)
		t.Fatalf("sha256 raw bytes %x", h[:4])
	}
	d := h.SHA256()
	if hex.EncodeToString(d[:]) != oid {
		t.Fatal("SHA256() is not the digest")
	}
	// An oid is lowercase hex (git-lfs writes nothing else): another spelling is another name.
	if _, err := ParseSHA256(strings.ToUpper(oid)); err == nil {
		t.Error("ParseSHA256 accepted an uppercase oid")
	}
}

func BenchmarkChunkHash64K(b *testing.B) {
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	c := NewChunkHasher()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c.Sum(data)
	}
}

func BenchmarkVerification(b *testing.B) {
	chunks := make([]Hash, 16)
	b.ReportAllocs()
	for b.Loop() {
		Verification(chunks)
	}
}

// mustParse is Parse for test constants (other packages' tests use hashtest.MustParse).
func mustParse(s string) Hash {
	h, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return h
}
