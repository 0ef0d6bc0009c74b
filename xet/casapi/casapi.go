// Package casapi holds the wire shapes of the Xet CAS HTTP API: the JSON bodies of reconstructions
// (v1 and v2), xorb and shard uploads, tokens and errors, and byte ranges. The LFS batch shapes and
// the X-Xet-* header names are in xet/lfsbatch. The CAS client (xet/cas) and the server
// (xet/server) both speak through these types, so the two cannot drift apart. Field order follows
// the Hub's responses.
package casapi

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// HeaderRequestID names the id a CAS gives its answer, logged with errors. The X-Xet-* names are
// in xet/lfsbatch.
const HeaderRequestID = "X-Request-Id"

// Prefixes of CAS routes (/v1/xorbs/{prefix}/{hash}, /v1/chunks/{prefix}/{hash}).
const (
	PrefixDefault  = "default"
	PrefixMerkleDB = "default-merkledb"
)

// ChunkRange is a range of chunk indices in a xorb, end-exclusive.
type ChunkRange struct {
	Start uint32 `json:"start"`
	End   uint32 `json:"end"`
}

// ByteRange is a range of bytes, end-inclusive as in HTTP Range headers.
type ByteRange struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
}

// Len returns the number of bytes in r (of a valid one: see Valid).
func (r ByteRange) Len() uint64 { return r.End - r.Start + 1 }

// Valid reports whether r is a range of at least one byte whose Len does not wrap: a server's
// range that is not is refused, never sized or sliced by.
func (r ByteRange) Valid() bool { return r.Start <= r.End && r.End < math.MaxUint64 }

// Header returns the HTTP Range header value for r.
func (r ByteRange) Header() string { return fmt.Sprintf("bytes=%d-%d", r.Start, r.End) }

// Term is one piece of a file: unpacked_length bytes made of chunks Range of xorb Hash.
type Term struct {
	Hash           hash.Hash  `json:"hash"`
	UnpackedLength uint32     `json:"unpacked_length"`
	Range          ChunkRange `json:"range"`
}

// FetchInfoV1 is one fetchable piece of a xorb in the v1 reconstruction: chunks Range are bytes
// URLRange (inclusive) of the object at URL.
type FetchInfoV1 struct {
	Range    ChunkRange `json:"range"`
	URL      string     `json:"url"`
	URLRange ByteRange  `json:"url_range"`
}

// ReconstructionV1 is the body of GET /v1/reconstructions/{file}.
type ReconstructionV1 struct {
	OffsetIntoFirstRange uint64                      `json:"offset_into_first_range"`
	Terms                []Term                      `json:"terms"`
	FetchInfo            map[hash.Hash][]FetchInfoV1 `json:"fetch_info"`
}

// XorbRange is one range of a v2 xorb fetch: chunks Chunks are bytes Bytes (inclusive).
type XorbRange struct {
	Chunks ChunkRange `json:"chunks"`
	Bytes  ByteRange  `json:"bytes"`
}

// XorbFetch is one signed URL of a xorb and the ranges it may be fetched with.
type XorbFetch struct {
	URL    string      `json:"url"`
	Ranges []XorbRange `json:"ranges"`
}

// ReconstructionV2 is the body of GET /v2/reconstructions/{file}. It is also the client's normalized
// plan: a v1 answer is converted to this shape (see FromV1).
type ReconstructionV2 struct {
	OffsetIntoFirstRange uint64                    `json:"offset_into_first_range"`
	Terms                []Term                    `json:"terms"`
	Xorbs                map[hash.Hash][]XorbFetch `json:"xorbs"`
}

// FromV1 converts a v1 reconstruction to the v2 shape, one fetch per v1 fetch_info entry.
func FromV1(v1 *ReconstructionV1) *ReconstructionV2 {
	out := &ReconstructionV2{
		OffsetIntoFirstRange: v1.OffsetIntoFirstRange,
		Terms:                v1.Terms,
		Xorbs:                make(map[hash.Hash][]XorbFetch, len(v1.FetchInfo)),
	}
	for h, infos := range v1.FetchInfo {
		for _, fi := range infos {
			out.Xorbs[h] = append(out.Xorbs[h], XorbFetch{
				URL:    fi.URL,
				Ranges: []XorbRange{{Chunks: fi.Range, Bytes: fi.URLRange}},
			})
		}
	}
	return out
}

// BatchListing is the body of GET /v1/batches/{id}, our server's extension (lfsbatch.HeaderBatchURL):
// the objects one LFS batch answer gave actions to, for the operation it answered ("upload" or
// "download"). Listed objects are at most the batch's; a client checks each one it uses (the
// SHA-256 of what it reads or reconstructs) as it would the object git-lfs hands it.
//
// A download listing also carries the plans of its small files, by Xet hash (as GET
// /v2/reconstructions answers them; a file left out is asked for on its own), and Fetches: per
// xorb, the ranges of all those plans merged where they touch, each with a URL that may fetch it,
// so that the small files of one batch answer, stored side by side, cost a request or two.
type BatchListing struct {
	Operation string                       `json:"operation"`
	Objects   []BatchObject                `json:"objects"`
	Plans     map[string]*ReconstructionV2 `json:"plans,omitempty"`
	Fetches   map[hash.Hash][]XorbFetch    `json:"fetches,omitempty"`
}

// BatchObject is one object of a BatchListing: its LFS oid and size, and for downloads its Xet
// file hash.
type BatchObject struct {
	OID     string `json:"oid"`
	Size    int64  `json:"size"`
	XetHash string `json:"xet_hash,omitempty"`
}

// PutXorbResponse is the body answering POST /v1/xorbs/{prefix}/{hash}.
type PutXorbResponse struct {
	WasInserted bool `json:"was_inserted"`
}

// Results of a shard upload.
const (
	ShardExists         = 0
	ShardSyncPerformed  = 1
	MaxShardFrameLength = 1 << 20 // longest NDJSON line of POST /v2/shards a client reads
)

// PutShardResponse is the body answering POST /v1/shards.
type PutShardResponse struct {
	Result int `json:"result"`
}

// ShardFrame is one NDJSON line of the POST /v2/shards response. Type is "validating", "committing",
// "result" or "error"; clients ignore other types.
type ShardFrame struct {
	Type      string `json:"type"`
	Verified  *int   `json:"verified,omitempty"`
	Total     *int   `json:"total,omitempty"`
	Stage     string `json:"stage,omitempty"`
	Result    *int   `json:"result,omitempty"`
	Message   string `json:"message,omitempty"`
	Retryable bool   `json:"retryable,omitempty"`
}

// Token is the body of the token refresh route GET /api/{type}s/{repo}/xet-{read|write}-token/{rev}.
type Token struct {
	AccessToken string `json:"accessToken"`
	Exp         int64  `json:"exp"` // unix seconds
	CasURL      string `json:"casUrl"`
}

// Error is the JSON body of a non-2xx answer of our server ({"error": "..."}); the client surfaces its
// message.
type Error struct {
	Error string `json:"error"`
}

// Encode writes v as JSON the way the Hub does (no HTML escaping of '&' in signed URLs), followed by
// a newline.
func Encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
