package xorb

import (
	"io"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// ChunkInfo is one chunk of a xorb. Start and End are the byte offsets of its record in the
// serialized chunk region (End exclusive); RawStart is the cumulative raw offset of its data.
type ChunkInfo struct {
	Hash     hash.Hash
	RawLen   uint32
	Scheme   Scheme
	Start    uint32
	End      uint32
	RawStart uint64
}

// Xorb is a finished xorb: its hash (the merkle hash of its chunks), its chunk records (the upload
// form, without footer), and where each chunk lies. When Lent is empty, Body is the serialized
// body; otherwise Body holds all of it but the lent payloads, which are read from Src (see Lent,
// Reader, Serialized). Chunk offsets are always those of the serialized body.
type Xorb struct {
	Hash     hash.Hash
	Body     []byte
	Chunks   []ChunkInfo
	RawBytes uint64
	Lent     []Lent
	Src      io.ReaderAt
	// Follows is set by an upload session that knows where the xorb's raw bytes sit in a file (a
	// hint for the CAS, lfsbatch.HeaderXorbFollows); the zero value says nothing.
	Follows Follows
}

// Follows says that a xorb's raw bytes, all its chunks in order, begin a file (Start) or continue
// it right after all those of xorb Prev.
type Follows struct {
	Start bool
	Prev  hash.Hash
}

// Header returns the value of lfsbatch.HeaderXorbFollows for f, "" for the zero value.
func (f Follows) Header() string {
	switch {
	case f.Start:
		return "first"
	case f.Prev != hash.Hash{}:
		return f.Prev.String()
	}
	return ""
}

// ParseFollows reads a lfsbatch.HeaderXorbFollows value; anything else is the zero value (a hint
// only).
func ParseFollows(v string) Follows {
	if v == "first" {
		return Follows{Start: true}
	}
	if h, err := hash.Parse(v); err == nil && h != (hash.Hash{}) {
		return Follows{Prev: h}
	}
	return Follows{}
}

// Entries returns the (chunk hash, raw length) list the xorb hash is computed over.
func (x *Xorb) Entries() []hash.Entry {
	return chunkEntries(x.Chunks)
}

func chunkEntries(chunks []ChunkInfo) []hash.Entry {
	e := make([]hash.Entry, len(chunks))
	for i, c := range chunks {
		e[i] = hash.Entry{Hash: c.Hash, Size: uint64(c.RawLen)}
	}
	return e
}

// Footer returns the version-1 footer describing x.
func (x *Xorb) Footer() *Footer {
	return footerFor(x.Hash, x.Chunks)
}

func footerFor(h hash.Hash, chunks []ChunkInfo) *Footer {
	f := &Footer{
		Version:      1,
		Hash:         h,
		ChunkHashes:  make([]hash.Hash, len(chunks)),
		BoundaryEnds: make([]uint32, len(chunks)),
		RawEnds:      make([]uint32, len(chunks)),
	}
	for i, c := range chunks {
		f.ChunkHashes[i] = c.Hash
		f.BoundaryEnds[i] = c.End
		f.RawEnds[i] = uint32(c.RawStart) + c.RawLen
	}
	return f
}

// Builder packs chunks into one xorb, compressing each chunk as it is added with the scheme its
// Policy picks. Callers check Fits before Add and Finish the xorb when a chunk does not fit (xet-core
// cuts before a chunk that would take the xorb over MaxBytes raw bytes or MaxChunks chunks).
//
// With PolicyAuto, the chunks of each file segment (StartFile marks where one begins; a new xorb
// begins one too) go in blocks of 32: the BG4 predictor runs on a block's first chunk and its choice
// (BG4-LZ4 or LZ4) applies to the whole block. Whatever the scheme, a chunk that does not get smaller
// is stored uncompressed.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	policy   Policy
	enc      *encoder // from encoders while chunks are being added; returned by Finish
	body     []byte
	chunks   []ChunkInfo
	raw      uint64
	segStart int    // index of the first chunk of the current file segment
	block    Scheme // PolicyAuto: the scheme of the current 32-chunk block

	src       io.ReaderAt // see Lend
	lent      []Lent
	lentBytes int
}

// NewBuilder returns an empty Builder using policy.
func NewBuilder(policy Policy) *Builder {
	return &Builder{policy: policy}
}

// StartFile marks a file boundary: the next chunk begins a new segment, for which the BG4
// predictor is run again.
func (b *Builder) StartFile() { b.segStart = len(b.chunks) }

// Fits reports whether a chunk of rawLen bytes can be added without taking the xorb over MaxBytes
// raw bytes or MaxChunks chunks.
func (b *Builder) Fits(rawLen int) bool {
	return b.raw+uint64(rawLen) <= MaxBytes && len(b.chunks)+1 <= MaxChunks
}

// Add compresses data (copied; at most MaxChunkRaw bytes, or Add panics) into the xorb as the next
// chunk with hash h (the caller's chunk hash of data), and returns the chunk's index.
func (b *Builder) Add(data []byte, h hash.Hash) int { return b.AddFrom(data, h, -1) }

// AddFrom is Add for data that the Builder's Lend source holds at off: when the chunk is stored
// uncompressed its payload is lent (not copied). off < 0, or no source, is Add.
func (b *Builder) AddFrom(data []byte, h hash.Hash, off int64) int {
	s := b.schemeFor(data)
	if b.enc == nil {
		b.enc = encoders.Get().(*encoder)
	}
	b.reserve(RecordHeaderSize + 15 + len(data) + len(data)/255 + 16)
	at := len(b.body)
	lend := b.src != nil && off >= 0
	var lent bool
	b.body, lent = b.enc.appendRecord(b.body, data, s, lend)
	start := at + b.lentBytes
	if lent {
		b.lent = append(b.lent, Lent{At: start + RecordHeaderSize, Off: off, N: len(data)})
		b.lentBytes += len(data)
	}
	i := len(b.chunks)
	b.chunks = append(b.chunks, ChunkInfo{
		Hash:     h,
		RawLen:   uint32(len(data)),
		Scheme:   Scheme(b.body[at+4]),
		Start:    uint32(start),
		End:      uint32(len(b.body) + b.lentBytes),
		RawStart: b.raw,
	})
	b.raw += uint64(len(data))
	return i
}

// maxBody bounds the body of a full xorb: every raw byte stored plus, per chunk, a header and the
// worst-case LZ4 frame overhead.
const maxBody = MaxBytes + MaxChunks*(RecordHeaderSize+16) + MaxBytes/255

// BodyCap is the capacity of a body buffer a Builder never outgrows (see UseBuffer): a full xorb
// with the worst-case per-chunk overhead.
const BodyCap = maxBody

// UseBuffer makes the Builder write the records of its next xorb into buf (from buf[:0]); Finish
// returns them in Xorb.Body, which then aliases buf. With cap(buf) >= BodyCap the body never has to
// grow (no copying, no garbage): callers recycle bodies through a pool once a xorb is stored. It
// must be called while the Builder is empty; otherwise it does nothing.
func (b *Builder) UseBuffer(buf []byte) {
	if len(b.chunks) == 0 && len(b.body) == 0 {
		b.body = buf[:0]
	}
}

// reserve makes room for n more body bytes, doubling the buffer (append grows large slices by only
// 1.25x, which copies a 64 MiB xorb several times over). With a UseBuffer buffer of BodyCap, it
// never allocates.
func (b *Builder) reserve(n int) {
	if cap(b.body)-len(b.body) >= n {
		return
	}
	c := max(2*cap(b.body), 256<<10, len(b.body)+n)
	c = max(min(c, maxBody), len(b.body)+n)
	nb := make([]byte, len(b.body), c)
	copy(nb, b.body)
	b.body = nb
}

// Absorb moves the chunks of src (an unfinished Builder) to the end of b, copying their records as
// they are (no decoding, no recompression), and resets src. The caller checks that the sum fits
// (raw bytes <= MaxBytes, chunks <= MaxChunks). The next chunk added to b begins a new file segment.
// It returns the index in b of src's first chunk.
func (b *Builder) Absorb(src *Builder) int {
	if len(src.lent) != 0 || len(b.lent) != 0 {
		panic("xorb: Absorb of a Builder with lent payloads (call Own first)")
	}
	first := len(b.chunks)
	base := uint32(len(b.body))
	b.reserve(len(src.body))
	b.body = append(b.body, src.body...)
	for _, c := range src.chunks {
		c.Start += base
		c.End += base
		c.RawStart += b.raw
		b.chunks = append(b.chunks, c)
	}
	b.raw += src.raw
	b.segStart = len(b.chunks)
	src.body, src.chunks, src.raw, src.segStart = src.body[:0], nil, 0, 0
	return first
}

func (b *Builder) schemeFor(data []byte) Scheme {
	switch b.policy {
	case PolicyNone:
		return SchemeNone
	case PolicyLZ4:
		return SchemeLZ4
	case PolicyBG4LZ4:
		return SchemeBG4LZ4
	}
	if (len(b.chunks)-b.segStart)%retestInterval == 0 {
		if BG4Recommended(data) {
			b.block = SchemeBG4LZ4
		} else {
			b.block = SchemeLZ4
		}
	}
	return b.block
}

// Len returns the number of chunks added.
func (b *Builder) Len() int { return len(b.chunks) }

// Finish returns the xorb built so far, with its hash computed, and resets the Builder for the next
// xorb (a new xorb starts a new file segment).
func (b *Builder) Finish() *Xorb {
	x := &Xorb{
		Hash:     hash.Merkle(chunkEntries(b.chunks)),
		Body:     b.body,
		Chunks:   b.chunks,
		RawBytes: b.raw,
		Lent:     b.lent,
	}
	if len(b.lent) != 0 {
		x.Src = b.src
	}
	b.body, b.chunks, b.raw, b.segStart = nil, nil, 0, 0
	b.lent, b.lentBytes = nil, 0
	if b.enc != nil {
		encoders.Put(b.enc)
		b.enc = nil
	}
	return x
}

// encoders recycles the LZ4 compressor state (a 64 KiB hash table) across builders: a session per
// small file would otherwise allocate and clear one per file.
var encoders = sync.Pool{New: func() any { return new(encoder) }}
