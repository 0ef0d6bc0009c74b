package hash

import (
	"strconv"
	"sync"

	"github.com/zeebo/blake3"
)

// The BLAKE3 keys of xet-core (merklehash/data_hash.rs, metadata_shard/chunk_verification.rs).
var (
	DataKey = [32]byte{
		0x66, 0x97, 0xf5, 0x77, 0x5b, 0x95, 0x50, 0xde, 0x31, 0x35, 0xcb, 0xac, 0xa5, 0x97, 0x18, 0x1c,
		0x9d, 0xe4, 0x21, 0x10, 0x9b, 0xeb, 0x2b, 0x58, 0xb4, 0xd0, 0xb0, 0x4b, 0x93, 0xad, 0xf2, 0x29,
	}
	InternalNodeKey = [32]byte{
		0x01, 0x7e, 0xc5, 0xc7, 0xa5, 0x47, 0x29, 0x96, 0xfd, 0x94, 0x66, 0x66, 0xb4, 0x8a, 0x02, 0xe6,
		0x5d, 0xdd, 0x53, 0x6f, 0x37, 0xc7, 0x6d, 0xd2, 0xf8, 0x63, 0x52, 0xe6, 0x4a, 0x53, 0x71, 0x3f,
	}
	VerificationKey = [32]byte{
		0x7f, 0x18, 0x57, 0xd6, 0xce, 0x56, 0xed, 0x66, 0x12, 0x7f, 0xf9, 0x13, 0xe7, 0xa5, 0xc3, 0xf3,
		0xa4, 0xcd, 0x26, 0xd5, 0xb5, 0xdb, 0x49, 0xe6, 0x41, 0x24, 0x98, 0x7f, 0x28, 0xfb, 0x94, 0xc3,
	}
)

// keyedSum returns blake3_keyed(key, msg) with a 32-byte output.
func keyedSum(key *[32]byte, msg []byte) Hash {
	if *key == [32]byte(Zero) { // every file hash (the unsalted key): pooled
		return fileHashers.sum(func(h *blake3.Hasher) { _, _ = h.Write(msg) })
	}
	h := newKeyed(key)
	_, _ = h.Write(msg)
	var out Hash
	h.Sum(out[:0])
	return out
}

func newKeyed(key *[32]byte) *blake3.Hasher {
	h, err := blake3.NewKeyed(key[:])
	if err != nil { // only for a key of the wrong length, which [32]byte rules out
		panic(err)
	}
	return h
}

// keyedPool reuses hashers of one fixed key: a blake3.Hasher is large (kilobytes), and merkle nodes
// and verification hashes are computed once per term or node, so fresh hashers dominate allocation.
type keyedPool struct {
	key  *[32]byte
	pool sync.Pool
}

func (p *keyedPool) sum(write func(h *blake3.Hasher)) Hash {
	h := p.get()
	write(h)
	return p.put(h)
}

// get returns a reset hasher of the pool's key; put returns its sum and gives it back.
func (p *keyedPool) get() *blake3.Hasher {
	h, _ := p.pool.Get().(*blake3.Hasher)
	if h == nil {
		return newKeyed(p.key)
	}
	h.Reset()
	return h
}

func (p *keyedPool) put(h *blake3.Hasher) Hash {
	var out Hash
	h.Sum(out[:0])
	p.pool.Put(h)
	return out
}

var (
	nodeHashers         = keyedPool{key: &InternalNodeKey}
	verificationHashers = keyedPool{key: &VerificationKey}
	zeroKey             [32]byte
	fileHashers         = keyedPool{key: &zeroKey}
)

// ChunkHasher computes chunk hashes (BLAKE3 keyed with DataKey), reusing its state between calls.
// A ChunkHasher is not safe for concurrent use; give each goroutine its own.
type ChunkHasher struct{ h *blake3.Hasher }

// NewChunkHasher returns a ChunkHasher.
func NewChunkHasher() *ChunkHasher {
	h, err := blake3.NewKeyed(DataKey[:])
	if err != nil {
		panic(err)
	}
	return &ChunkHasher{h: h}
}

// Sum returns the chunk hash of data.
func (c *ChunkHasher) Sum(data []byte) Hash {
	c.h.Reset()
	_, _ = c.h.Write(data)
	var out Hash
	c.h.Sum(out[:0])
	return out
}

var chunkHashers = sync.Pool{New: func() any { return NewChunkHasher() }}

// Chunk returns the chunk hash of data: blake3_keyed(DataKey, data). It is safe for concurrent use.
func Chunk(data []byte) Hash {
	c := chunkHashers.Get().(*ChunkHasher)
	h := c.Sum(data)
	chunkHashers.Put(c)
	return h
}

// Keyed returns blake3_keyed(key, raw bytes of h): the keyed chunk hash of global-dedupe shards
// (xet-core's DataHash::hmac, which is not an HMAC).
func Keyed(key Hash, h Hash) Hash {
	k := [32]byte(key)
	return keyedSum(&k, h[:])
}

// Keyer computes Keyed(key, h) for one key over many hashes, reusing one BLAKE3 state (kilobytes,
// which Keyed allocates afresh for each call): a global-dedupe answer keys every chunk of a xorb.
// A Keyer is not safe for concurrent use.
type Keyer struct{ h *blake3.Hasher }

// NewKeyer returns a Keyer for key.
func NewKeyer(key Hash) *Keyer {
	k := [32]byte(key)
	return &Keyer{h: newKeyed(&k)}
}

// Sum returns Keyed(key, h).
func (k *Keyer) Sum(h Hash) Hash {
	k.h.Reset()
	_, _ = k.h.Write(h[:])
	var out Hash
	k.h.Sum(out[:0])
	return out
}

// Verification returns a term's verification hash: blake3_keyed(VerificationKey, the raw chunk hashes
// of the term's chunks, concatenated).
func Verification(chunks []Hash) Hash {
	return verificationHashers.sum(func(h *blake3.Hasher) {
		for i := range chunks {
			_, _ = h.Write(chunks[i][:])
		}
	})
}

// Entry is a node of the aggregated (merkle) hash: a hash and the number of bytes under it.
type Entry struct {
	Hash Hash
	Size uint64
}

// Node merges children into one node: blake3_keyed(InternalNodeKey, "{hash} : {size}\n" per child),
// with the summed size.
//
// It is called once per few chunks of every file hashed, so the text is built in a buffer on the
// stack (nine children, the most the grouping rule makes, fit) rather than allocated per call.
func Node(children []Entry) Entry {
	var line [nodeLine * 9]byte
	buf := line[:0]
	var size uint64
	for _, c := range children {
		buf = c.Hash.appendString(buf)
		buf = append(buf, " : "...)
		buf = strconv.AppendUint(buf, c.Size, 10)
		buf = append(buf, '\n')
		size += c.Size
	}
	h := nodeHashers.get()
	_, _ = h.Write(buf)
	return Entry{Hash: nodeHashers.put(h), Size: size}
}

// nodeLine is the longest line of a child in Node: 64 hex digits, " : ", 20 decimal digits, '\n'.
const nodeLine = 64 + 3 + 20 + 1

// nextMergeCut returns how many of the leading entries form the next group: all when two or fewer
// remain, else cut after the first entry at index ≥ 2 whose hash % 4 == 0, and at most 9.
func nextMergeCut(level []Entry) int {
	n := len(level)
	if n <= 2 {
		return n
	}
	end := min(9, n)
	for i := 2; i < end; i++ {
		if level[i].Hash.Mod(4) == 0 {
			return i + 1
		}
	}
	return end
}

// Merkle returns the aggregated hash of entries (xet-core's aggregated_node_hash): the xorb hash of a
// xorb's chunks, or the root from which a file hash is made. An empty list gives Zero; a single entry
// gives its own hash.
func Merkle(entries []Entry) Hash {
	if len(entries) == 0 {
		return Zero
	}
	level := append([]Entry(nil), entries...)
	for len(level) > 1 {
		next := level[:0:0]
		for i := 0; i < len(level); {
			cut := nextMergeCut(level[i:])
			next = append(next, Node(level[i:i+cut]))
			i += cut
		}
		level = next
	}
	return level[0].Hash
}

// File returns the Xet file hash of a file whose chunks are entries: blake3_keyed(zero key, merkle
// root). An empty file hashes to Zero.
func File(entries []Entry) Hash { return FileWithSalt(entries, Zero) }

// FileWithSalt is File with the salt's raw bytes as the key (xet-core's file_hash_with_salt).
func FileWithSalt(entries []Entry, salt Hash) Hash {
	if len(entries) == 0 {
		return Zero
	}
	root := Merkle(entries)
	key := [32]byte(salt)
	return keyedSum(&key, root[:])
}
