// Package hash holds the Xet 32-byte hash: its string form, the ordering xet-core uses, and the keyed
// BLAKE3 functions behind chunk, merkle-node, verification, file and dedupe hashes.
//
// A Hash is stored as raw bytes. xet-core reads those bytes as four little-endian u64 words; the string
// form prints each word as %016x, ordering compares word 0 first, and "% n" uses word 3.
package hash

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// Size is the length of a Hash in bytes.
const Size = 32

// Hash is a 32-byte Xet hash in its raw (wire and binary-format) byte order.
type Hash [Size]byte

// Zero is the all-zero hash: the hash of an empty file and of an empty merkle tree.
var Zero Hash

// Marker is the all-0xFF hash xet-core uses as a bookend and as a placeholder for unknown xorbs.
var Marker = Hash{
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
}

// Word returns little-endian u64 word i (0..3) of h.
func (h Hash) Word(i int) uint64 { return binary.LittleEndian.Uint64(h[i*8 : i*8+8]) }

// String returns the Xet string form: the four words, each printed as %016x.
func (h Hash) String() string {
	var out [64]byte
	return string(h.appendString(out[:0]))
}

// appendString appends the Xet string form of h to b.
func (h Hash) appendString(b []byte) []byte {
	const digits = "0123456789abcdef"
	for w := 0; w < 4; w++ {
		for i := 7; i >= 0; i-- {
			c := h[w*8+i]
			b = append(b, digits[c>>4], digits[c&15])
		}
	}
	return b
}

// MarshalText implements encoding.TextMarshaler with the Xet string form.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with the Xet string form.
func (h *Hash) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// Parse reads the Xet string form (64 hex digits, upper or lower case).
func Parse(s string) (Hash, error) {
	var h Hash
	if len(s) != 64 {
		return h, fmt.Errorf("xet hash %q: want 64 hex digits, got %d characters", clip(s), len(s))
	}
	var raw [32]byte
	if _, err := hex.Decode(raw[:], []byte(s)); err != nil {
		return h, fmt.Errorf("xet hash %q: %w", clip(s), err)
	}
	for w := 0; w < 4; w++ {
		for i := 0; i < 8; i++ {
			h[w*8+i] = raw[w*8+7-i]
		}
	}
	return h, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Compare orders hashes as xet-core's DataHash does: word 0, then 1, 2, 3, each as an unsigned
// integer. It is not byte-lexicographic order.
func (h Hash) Compare(o Hash) int {
	for w := 0; w < 4; w++ {
		a, b := h.Word(w), o.Word(w)
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Less reports whether h sorts before o (see Compare).
func (h Hash) Less(o Hash) bool { return h.Compare(o) < 0 }

// Mod returns h % n as xet-core computes it: word 3 (bytes 24..32, little-endian) modulo n.
func (h Hash) Mod(n uint64) uint64 { return h.Word(3) % n }

// Truncate returns word 0, the key xet-core's shard lookup tables use.
func (h Hash) Truncate() uint64 { return h.Word(0) }

// IsZero reports whether h is all zero bytes.
func (h Hash) IsZero() bool { return h == Zero }

// FromSHA256 stores a SHA-256 digest as xet-core's FileMetadataExt does (DataHash::from_be_bytes):
// each 8-byte group is reversed, so the resulting hash's String is the ordinary hex digest.
func FromSHA256(digest [32]byte) Hash {
	var h Hash
	for w := 0; w < 4; w++ {
		for i := 0; i < 8; i++ {
			h[w*8+i] = digest[w*8+7-i]
		}
	}
	return h
}

// SHA256 is the inverse of FromSHA256: the ordinary digest bytes.
func (h Hash) SHA256() [32]byte { return [32]byte(FromSHA256([32]byte(h))) }

// ParseSHA256 reads an ordinary 64-digit SHA-256 hex string (an LFS oid) into the stored form. The
// digits are lowercase, as git-lfs writes an oid (internal/lfsobject says the same): an uppercase
// spelling would be a second name of one object.
func ParseSHA256(oid string) (Hash, error) {
	var d [32]byte
	if len(oid) != 64 {
		return Hash{}, fmt.Errorf("sha256 %q: want 64 hex digits, got %d characters", clip(oid), len(oid))
	}
	if strings.ToLower(oid) != oid {
		return Hash{}, fmt.Errorf("sha256 %q: want lowercase hex digits", clip(oid))
	}
	if _, err := hex.Decode(d[:], []byte(oid)); err != nil {
		return Hash{}, fmt.Errorf("sha256 %q: %w", clip(oid), err)
	}
	return FromSHA256(d), nil
}
