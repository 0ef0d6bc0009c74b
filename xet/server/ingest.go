package server

import (
	"context"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// UploadIngester is the Ingester the binary uses: each basic-transfer upload runs through an
// xet/upload session over the in-process CAS (xet/embedded on the server's store, namespace = the
// repository), so plain LFS uploads are chunked, deduplicated against everything the store already
// holds (global-dedupe queries answered by the store itself) and packed exactly as a Xet client
// would. The shard is registered (Finish) only when the stream's length and SHA-256 match the LFS
// request; a rejected upload leaves at most unreferenced xorbs and no file.
//
// Safe for concurrent use: every call has its own session.
type UploadIngester struct {
	Store  *store.Store
	Policy xorb.Policy
	Log    zerolog.Logger
}

// Ingest implements Ingester. size < 0 means unknown (not checked).
func (in *UploadIngester) Ingest(ctx context.Context, ns string, r io.Reader, size int64, wantSHA256 [32]byte) (hash.Hash, error) {
	sess := upload.NewSession(upload.Config{
		// The store records each xorb it stores as ns's upload (what ns's usage counts, even
		// when the upload fails and no file names it).
		CAS:    embedded.New(in.Store, ns),
		Policy: in.Policy,
		// The store is in this process: a second xorb upload in flight would only hold another
		// buffer (see upload.Config.Concurrency).
		Concurrency:  1,
		GlobalDedupe: true,
		Log:          in.Log,
		SizeHint:     max(size, 0),
	})
	defer sess.Close() // a refused upload's xorb uploads and buffers too
	res, err := sess.Upload(ctx, r, nil, nil)
	if err != nil {
		return hash.Hash{}, fmt.Errorf("chunk upload: %w", err)
	}
	if size >= 0 && res.Size != size {
		return hash.Hash{}, digestError("upload has %d bytes, Content-Length said %d", res.Size, size)
	}
	if res.SHA256 != wantSHA256 {
		return hash.Hash{}, digestError("upload's SHA-256 %x is not the oid %x", res.SHA256, wantSHA256)
	}
	if res.Size == 0 {
		return hash.Hash{}, digestError("empty objects are not stored")
	}
	if err := sess.Finish(ctx); err != nil {
		return hash.Hash{}, fmt.Errorf("register file %s: %w", res.FileHash, err)
	}
	return res.FileHash, nil
}

// digestError marks an upload whose bytes are not what the oid says (400).
func digestError(format string, args ...any) error {
	return &store.InvalidError{Reason: fmt.Sprintf(format, args...)}
}
