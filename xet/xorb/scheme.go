// Package xorb holds the xorb format: chunk records (8-byte header + compressed payload), the LZ4
// frame and BG4 compression schemes xet-core writes, the XETBLOB footer, a Builder that packs chunks
// into xorbs, and readers that walk and verify the records of a xorb object.
//
// Nothing here is safe for concurrent use on one value unless its doc says so; the package-level
// functions are safe for concurrent use (they take scratch space from pools).
package xorb

import "fmt"

// Scheme is the compression scheme byte of a chunk record.
type Scheme uint8

// The schemes xet-core reads. Any other value is rejected.
const (
	SchemeNone   Scheme = 0
	SchemeLZ4    Scheme = 1
	SchemeBG4LZ4 Scheme = 2
)

func (s Scheme) String() string {
	switch s {
	case SchemeNone:
		return "none"
	case SchemeLZ4:
		return "lz4"
	case SchemeBG4LZ4:
		return "bg4-lz4"
	}
	return fmt.Sprintf("scheme(%d)", uint8(s))
}

// Valid reports whether s is one of the three schemes on the wire.
func (s Scheme) Valid() bool { return s <= SchemeBG4LZ4 }

// Policy chooses the scheme of each chunk a Builder adds.
type Policy int

const (
	// PolicyAuto is xet-core's default: the BG4 predictor decides for each block of 32 chunks of a
	// file segment, from the block's first chunk.
	PolicyAuto Policy = iota
	PolicyNone
	PolicyLZ4
	PolicyBG4LZ4
)

func (p Policy) String() string {
	switch p {
	case PolicyAuto:
		return "auto"
	case PolicyNone:
		return "none"
	case PolicyLZ4:
		return "lz4"
	case PolicyBG4LZ4:
		return "bg4-lz4"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// ParsePolicy parses the names xet-core accepts in HF_XET_XORB_COMPRESSION_POLICY: "auto" (or ""),
// "none", "lz4" and "bg4-lz4".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "", "auto":
		return PolicyAuto, nil
	case "none":
		return PolicyNone, nil
	case "lz4":
		return PolicyLZ4, nil
	case "bg4-lz4":
		return PolicyBG4LZ4, nil
	}
	return 0, fmt.Errorf("xorb: unknown compression policy %q (want auto, none, lz4 or bg4-lz4)", s)
}

// Limits of xet-core (xorb_object/constants.rs and the chunk header reader), and of what other
// clients write.
const (
	// MaxBytes is the most raw chunk bytes one xorb holds as xet-core and our Builder cut them (the
	// serialized size may exceed it by the record headers and incompressible-frame overhead).
	MaxBytes = 64 << 20
	// MaxSerializedBytes is huggingface.js's cap: it cuts a xorb at 64 MiB of serialized records,
	// so compressible data gives xorbs of more than MaxBytes raw bytes. A reader accepts a xorb
	// within either cap (WithinLimits).
	MaxSerializedBytes = 64 << 20
	// MaxRawAccepted is the most raw bytes any valid xorb can hold: MaxChunks chunks of MaxChunkRaw
	// bytes (1 GiB). A term of a file, a subrange of one xorb, is never longer.
	MaxRawAccepted = MaxChunks * MaxChunkRaw
	// MaxChunks is the most chunks one xorb holds.
	MaxChunks = 8192
	// MaxChunkRaw is the largest uncompressed chunk a record may declare.
	MaxChunkRaw = 131072
	// MaxChunkCompressed is the largest payload a record may declare.
	MaxChunkCompressed = 262144
	// RecordHeaderSize is the size of a chunk record header.
	RecordHeaderSize = 8
	// retestInterval is how many chunks of a file segment share one predictor decision (PolicyAuto).
	retestInterval = 32
)

// WithinLimits reports whether a xorb of rawBytes raw bytes in recordsLen bytes of records is one
// some client legitimately writes: at most MaxBytes raw (xet-core, this Builder) or at most
// MaxSerializedBytes serialized (huggingface.js), and never over MaxRawAccepted raw.
func WithinLimits(rawBytes uint64, recordsLen int) bool {
	return rawBytes <= MaxRawAccepted && (rawBytes <= MaxBytes || recordsLen <= MaxSerializedBytes)
}
