package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// StoreIngester is the server's Ingester: it chunks a basic-transfer upload as a Xet client would
// (gearhash CDC, keyed BLAKE3), packs the chunks into xorbs (64 MiB / 8192 chunks each) stored with
// PutXorb as they fill, then, only if the stream's length and SHA-256 match what the LFS client
// announced, registers one upload-form shard (the file's terms with verification entries and SHA-256
// ext, and the xorbs) under the namespace. A rejected upload leaves at most unreferenced xorbs
// (content-addressed, harmless) and no file registration.
//
// It does no deduplication against other files beyond what content addressing gives: identical
// chunk runs at identical xorb boundaries. Memory is one xorb (<= 64 MiB) plus 32 bytes per chunk.
// Safe for concurrent use (each call has its own state).
type StoreIngester struct {
	Store  Store
	Policy xorb.Policy
}

// maxListedChunks: above this many chunks (about 32 GiB of data) the shard lists no xorbs.
const maxListedChunks = 1 << 19

// digestError marks an upload whose bytes are not what the oid says (400).
func digestError(format string, args ...any) error {
	return &store.InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// Ingest implements Ingester. size < 0 means unknown (not checked).
func (in *StoreIngester) Ingest(ctx context.Context, ns string, r io.Reader, size int64, wantSHA256 [32]byte) (hash.Hash, error) {
	cr := chunk.NewReaderOptions(r, chunk.Options{SHA256: true})
	defer cr.Close()
	b := xorb.NewBuilder(in.Policy)
	b.StartFile()

	var (
		entries []hash.Entry // the file's chunks, in order
		terms   []shard.Term
		xorbs   []shard.Xorb
		total   int64
	)
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		x := b.Finish()
		if _, err := in.Store.PutXorb(ctx, x.Hash, bytes.NewReader(x.Body)); err != nil {
			return fmt.Errorf("store xorb %s: %w", x.Hash, err)
		}
		sx := shard.Xorb{Hash: x.Hash, BytesInXorb: uint32(x.RawBytes), Chunks: make([]shard.XorbChunk, len(x.Chunks))}
		for i, c := range x.Chunks {
			sx.Chunks[i] = shard.XorbChunk{Hash: c.Hash, RawStart: uint32(c.RawStart), RawLen: c.RawLen}
		}
		xorbs = append(xorbs, sx)
		terms = append(terms, shard.Term{Xorb: x.Hash, UnpackedBytes: uint32(x.RawBytes), ChunkStart: 0, ChunkEnd: uint32(len(x.Chunks))})
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return hash.Hash{}, err
		}
		c, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return hash.Hash{}, fmt.Errorf("read upload: %w", err)
		}
		if !b.Fits(len(c.Data)) {
			if err := flush(); err != nil {
				return hash.Hash{}, err
			}
		}
		b.Add(c.Data, c.Hash)
		entries = append(entries, hash.Entry{Hash: c.Hash, Size: uint64(len(c.Data))})
		total += int64(len(c.Data))
	}
	sum, ok := cr.SHA256()
	if !ok {
		return hash.Hash{}, errors.New("chunker gave no SHA-256")
	}
	if size >= 0 && total != size {
		return hash.Hash{}, digestError("upload has %d bytes, Content-Length said %d", total, size)
	}
	if sum != wantSHA256 {
		return hash.Hash{}, digestError("upload's SHA-256 %x is not the oid %x", sum, wantSHA256)
	}
	if total == 0 {
		return hash.Hash{}, digestError("empty objects are not stored")
	}
	if err := flush(); err != nil {
		return hash.Hash{}, err
	}
	chunkHashes := make([]hash.Hash, len(entries))
	for i, e := range entries {
		chunkHashes[i] = e.Hash
	}
	fileHash := hash.File(entries)
	f, err := shard.BuildFile(fileHash, terms, chunkHashes, sum)
	if err != nil {
		return hash.Hash{}, fmt.Errorf("build shard: %w", err)
	}
	if len(entries) > maxListedChunks {
		// The xorb section is optional (the store knows its xorbs); leave it out of huge files so
		// the shard stays far below the store's size limit.
		xorbs = nil
	}
	sh := &shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{f}, Xorbs: xorbs}
	sh.Sort()
	if _, err := in.Store.PutShard(ctx, ns, sh.AppendUpload(nil)); err != nil {
		return hash.Hash{}, fmt.Errorf("register file %s: %w", fileHash, err)
	}
	return fileHash, nil
}
