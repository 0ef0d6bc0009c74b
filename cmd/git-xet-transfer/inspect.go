package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// inspectMaxBytes bounds what inspect reads: a xorb is at most 64 MiB of raw chunks (its records and
// footer a little more in the worst case), a shard rarely more than 64 MiB.
const inspectMaxBytes = 512 << 20

// runInspect implements `git-xet-transfer inspect [-summary] FILE|-`: it recognises a xorb object
// (chunk records, with or without XETBLOB footer) or an MDB shard (header tag) and prints what it
// holds as indented JSON on stdout.
func runInspect(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	summary := fs.Bool("summary", false, "omit the per-chunk and per-term lists")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: git-xet-transfer inspect [-summary] FILE   (FILE - reads stdin)")
		fmt.Fprintln(stderr, "Describes a xorb or shard file as JSON.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	data, err := readInspectInput(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer inspect: %v\n", err)
		return 1
	}
	v, err := describe(name, data, *summary)
	if err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer inspect: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer inspect: writing output: %v\n", err)
		return 1
	}
	return 0
}

func readInspectInput(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, inspectMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > inspectMaxBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes, too large for a xorb or shard", name, inspectMaxBytes)
	}
	return data, nil
}

// describe decides what data is and returns its description.
func describe(name string, data []byte, summary bool) (any, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("not a xorb or shard: %s is empty", name)
	}
	if len(data) >= len(shard.Tag) && bytes.Equal(data[:len(shard.Tag)], shard.Tag[:]) {
		s, err := shard.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return describeShard(name, len(data), s, summary), nil
	}
	x, err := describeXorb(name, data, summary)
	if err != nil {
		return nil, fmt.Errorf("not a xorb or shard: %s: %w", name, err)
	}
	return x, nil
}

// ---- xorb ----

type xorbJSON struct {
	Kind        string          `json:"kind"`
	File        string          `json:"file"`
	Size        int             `json:"size"`
	RecordsLen  int             `json:"records_bytes"`
	ChunkCount  int             `json:"chunk_count"`
	RawBytes    uint64          `json:"raw_bytes"`
	Hash        hash.Hash       `json:"hash"`
	Footer      xorbFooterJSON  `json:"footer"`
	Chunks      []xorbChunkJSON `json:"chunks,omitempty"`
	SchemeCount map[string]int  `json:"schemes"`
}

type xorbFooterJSON struct {
	Present     bool       `json:"present"`
	Version     *uint8     `json:"version,omitempty"`
	Hash        *hash.Hash `json:"hash,omitempty"`
	HashMatches *bool      `json:"hash_matches,omitempty"`
	Problem     string     `json:"problem,omitempty"` // why the footer disagrees with the records
}

type xorbChunkJSON struct {
	Index          int       `json:"index"`
	Hash           hash.Hash `json:"hash"`
	RawSize        uint32    `json:"raw_size"`
	CompressedSize uint32    `json:"compressed_size"`
	Scheme         string    `json:"scheme"`
	Offset         uint32    `json:"offset"`
	End            uint32    `json:"end"`
	RawOffset      uint64    `json:"raw_offset"`
}

// describeXorb indexes the records (decoding and hashing every chunk). A footer that disagrees with
// the records is reported rather than refused, so that the disagreement can be seen.
func describeXorb(name string, data []byte, summary bool) (*xorbJSON, error) {
	info, err := xorb.Index(data)
	problem := ""
	if err != nil {
		f, recordsLen, ferr := xorb.ParseFooter(data)
		if ferr != nil {
			return nil, err
		}
		info, ferr = xorb.Index(data[:recordsLen])
		if ferr != nil {
			return nil, err
		}
		info.Footer = f
		problem = err.Error()
	}
	out := &xorbJSON{
		Kind:        "xorb",
		File:        name,
		Size:        len(data),
		RecordsLen:  info.RecordsLen,
		ChunkCount:  len(info.Chunks),
		RawBytes:    info.RawBytes,
		Hash:        info.Hash,
		SchemeCount: map[string]int{},
	}
	if f := info.Footer; f != nil {
		matches := f.Hash == info.Hash
		v, h := f.Version, f.Hash
		out.Footer = xorbFooterJSON{Present: true, Version: &v, Hash: &h, HashMatches: &matches, Problem: problem}
	}
	for i, c := range info.Chunks {
		out.SchemeCount[c.Scheme.String()]++
		if summary {
			continue
		}
		out.Chunks = append(out.Chunks, xorbChunkJSON{
			Index:          i,
			Hash:           c.Hash,
			RawSize:        c.RawLen,
			CompressedSize: c.End - c.Start - xorb.RecordHeaderSize,
			Scheme:         c.Scheme.String(),
			Offset:         c.Start,
			End:            c.End,
			RawOffset:      c.RawStart,
		})
	}
	return out, nil
}

// ---- shard ----

type shardJSON struct {
	Kind    string           `json:"kind"`
	File    string           `json:"file"`
	Size    int              `json:"size"`
	Header  shardHeaderJSON  `json:"header"`
	Keyed   bool             `json:"keyed"`
	Files   []shardFileJSON  `json:"files"`
	Xorbs   []shardXorbJSON  `json:"xorbs"`
	Lookups shardLookupsJSON `json:"lookups"`
	Footer  *shardFooterJSON `json:"footer"`
	Totals  shardTotalsJSON  `json:"totals"`
}

type shardHeaderJSON struct {
	Version    uint64 `json:"version"`
	FooterSize uint64 `json:"footer_size"`
}

type shardFileJSON struct {
	Hash         hash.Hash       `json:"hash"`
	Flags        string          `json:"flags"`
	Size         uint64          `json:"size"`
	TermCount    int             `json:"term_count"`
	Terms        []shardTermJSON `json:"terms,omitempty"`
	Verification []hash.Hash     `json:"verification,omitempty"`
	SHA256       string          `json:"sha256,omitempty"`
}

type shardTermJSON struct {
	Xorb       hash.Hash `json:"xorb"`
	ChunkStart uint32    `json:"chunk_start"`
	ChunkEnd   uint32    `json:"chunk_end"`
	Bytes      uint32    `json:"bytes"`
	Flags      uint32    `json:"flags,omitempty"`
}

type shardXorbJSON struct {
	Hash        hash.Hash            `json:"hash"`
	Flags       uint32               `json:"flags"`
	BytesInXorb uint32               `json:"bytes_in_xorb"`
	BytesOnDisk uint32               `json:"bytes_on_disk"`
	ChunkCount  int                  `json:"chunk_count"`
	Chunks      []shardXorbChunkJSON `json:"chunks,omitempty"`
}

type shardXorbChunkJSON struct {
	Hash     hash.Hash `json:"hash"`
	RawStart uint32    `json:"raw_start"`
	RawSize  uint32    `json:"raw_size"`
	Flags    uint32    `json:"flags"`
	Global   bool      `json:"global_dedupe,omitempty"` // flags has ChunkFlagGlobalDedupe
}

type shardLookupsJSON struct {
	Files  int `json:"files"`
	Xorbs  int `json:"xorbs"`
	Chunks int `json:"chunks"`
}

type shardTotalsJSON struct {
	Files  int    `json:"files"`
	Xorbs  int    `json:"xorbs"`
	Chunks int    `json:"chunks"`
	Bytes  uint64 `json:"file_bytes"`
}

type shardFooterJSON struct {
	Version           uint64    `json:"version"`
	FileInfoOffset    uint64    `json:"file_info_offset"`
	XorbInfoOffset    uint64    `json:"xorb_info_offset"`
	FileLookupOffset  uint64    `json:"file_lookup_offset"`
	FileLookupNum     uint64    `json:"file_lookup_num"`
	XorbLookupOffset  uint64    `json:"xorb_lookup_offset"`
	XorbLookupNum     uint64    `json:"xorb_lookup_num"`
	ChunkLookupOffset uint64    `json:"chunk_lookup_offset"`
	ChunkLookupNum    uint64    `json:"chunk_lookup_num"`
	HMACKey           hash.Hash `json:"hmac_key"`
	Created           uint64    `json:"created"`
	CreatedTime       string    `json:"created_time"`
	Expires           uint64    `json:"expires"`
	ExpiresTime       string    `json:"expires_time"`
	Reserved          [6]uint64 `json:"reserved"`
	StoredBytesOnDisk uint64    `json:"stored_bytes_on_disk"`
	MaterializedBytes uint64    `json:"materialized_bytes"`
	StoredBytes       uint64    `json:"stored_bytes"`
	FooterOffset      uint64    `json:"footer_offset"`
}

// unixTime formats Unix seconds as RFC 3339 (UTC); values past year 9999 (xet-core's "no expiry",
// u64::MAX) print as "never".
func unixTime(sec uint64) string {
	const maxRFC3339 = 253402300799 // 9999-12-31T23:59:59Z
	if sec > maxRFC3339 {
		return "never"
	}
	return time.Unix(int64(sec), 0).UTC().Format(time.RFC3339)
}

func describeShard(name string, size int, s *shard.Shard, summary bool) *shardJSON {
	out := &shardJSON{
		Kind:    "shard",
		File:    name,
		Size:    size,
		Header:  shardHeaderJSON{Version: s.Version},
		Keyed:   s.Keyed(),
		Files:   []shardFileJSON{},
		Xorbs:   []shardXorbJSON{},
		Lookups: shardLookupsJSON{len(s.FileLookup), len(s.XorbLookup), len(s.ChunkLookup)},
		Totals:  shardTotalsJSON{Files: len(s.Files), Xorbs: len(s.Xorbs)},
	}
	for i := range s.Files {
		fj := describeShardFile(&s.Files[i], summary)
		out.Totals.Bytes += fj.Size
		out.Files = append(out.Files, fj)
	}
	for i := range s.Xorbs {
		x := &s.Xorbs[i]
		xj := shardXorbJSON{Hash: x.Hash, Flags: x.Flags, BytesInXorb: x.BytesInXorb, BytesOnDisk: x.BytesOnDisk, ChunkCount: len(x.Chunks)}
		if !summary {
			xj.Chunks = make([]shardXorbChunkJSON, len(x.Chunks))
			for j, c := range x.Chunks {
				xj.Chunks[j] = shardXorbChunkJSON{c.Hash, c.RawStart, c.RawLen, c.Flags, c.Flags&shard.ChunkFlagGlobalDedupe != 0}
			}
		}
		out.Totals.Chunks += len(x.Chunks)
		out.Xorbs = append(out.Xorbs, xj)
	}
	if f := s.Footer; f != nil {
		out.Header.FooterSize = shard.FooterSize
		out.Footer = describeShardFooter(f)
	}
	return out
}

// describeShardFile is one file block of a shard (its terms unless summary).
func describeShardFile(f *shard.File, summary bool) shardFileJSON {
	fj := shardFileJSON{
		Hash:         f.Hash,
		Flags:        fmt.Sprintf("0x%08x", f.Flags),
		Size:         f.Size(),
		TermCount:    len(f.Terms),
		Verification: f.Verification,
	}
	if f.HasSHA256 {
		fj.SHA256 = f.SHA256.String()
	}
	if !summary {
		for _, t := range f.Terms {
			fj.Terms = append(fj.Terms, shardTermJSON{t.Xorb, t.ChunkStart, t.ChunkEnd, t.UnpackedBytes, t.Flags})
		}
	}
	return fj
}

// describeShardFooter is a shard's footer.
func describeShardFooter(f *shard.Footer) *shardFooterJSON {
	return &shardFooterJSON{
		Version:           f.Version,
		FileInfoOffset:    f.FileInfoOffset,
		XorbInfoOffset:    f.XorbInfoOffset,
		FileLookupOffset:  f.FileLookupOffset,
		FileLookupNum:     f.FileLookupNum,
		XorbLookupOffset:  f.XorbLookupOffset,
		XorbLookupNum:     f.XorbLookupNum,
		ChunkLookupOffset: f.ChunkLookupOffset,
		ChunkLookupNum:    f.ChunkLookupNum,
		HMACKey:           f.HMACKey,
		Created:           f.CreatedAt,
		CreatedTime:       unixTime(f.CreatedAt),
		Expires:           f.ExpiresAt,
		ExpiresTime:       unixTime(f.ExpiresAt),
		Reserved:          f.Reserved,
		StoredBytesOnDisk: f.StoredBytesOnDisk,
		MaterializedBytes: f.MaterializedBytes,
		StoredBytes:       f.StoredBytes,
		FooterOffset:      f.FooterOffset,
	}
}
