package store

import (
	"bytes"
	"context"
	"fmt"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// PendingXorb is a small xorb built in this process, checked as PutBuiltXorb checks it and
// serialized, that is stored in the same batch as the first shard naming it (PutShardWithXorbs):
// for a small file, one fsync covers its xorb and its registration. Nothing about it is visible in
// the store until that batch is.
type PendingXorb struct {
	Hash hash.Hash
	blob blob.NewBlob
	meta *xorbMeta
}

// MaxPendingXorb is the largest xorb worth holding back for its shard's batch (a pack's largest
// blob); larger ones are stored at once with PutBuiltXorb.
const MaxPendingXorb = fs.MaxPacked

// PrepareBuiltXorb checks a xorb this process built (the trust boundary of PutBuiltXorb) and
// serializes it for PutShardWithXorbs; x.Body is copied and not retained.
func PrepareBuiltXorb(x *xorb.Xorb) (*PendingXorb, error) {
	if err := checkBuilt(x); err != nil {
		return nil, err
	}
	foot := x.Footer()
	data := foot.AppendTo(bytes.Clone(x.Body))
	return &PendingXorb{
		Hash: x.Hash,
		blob: blob.NewBlob{Name: xorbName(x.Hash), Data: data},
		meta: &xorbMeta{hash: x.Hash, hashes: foot.ChunkHashes, boundEnds: foot.BoundaryEnds, rawEnds: foot.RawEnds},
	}, nil
}

// Size returns the stored size of the xorb.
func (p *PendingXorb) Size() int { return len(p.blob.Data) }

// PutPendingXorbs stores held-back xorbs without a shard (their shard never came, or too many are
// held back), in one batch, and records them as uploaded to repository ns (as PutBuiltXorb).
func (s *Store) PutPendingXorbs(ctx context.Context, ns string, ps []*PendingXorb) error {
	blobs := make([]blob.NewBlob, len(ps))
	for i, p := range ps {
		blobs[i] = p.blob
	}
	if _, err := s.be.CreateBatch(ctx, blobs); err != nil {
		return fmt.Errorf("storing %d xorbs: %w", len(ps), err)
	}
	for _, p := range ps {
		if _, err := s.recordUpload(ctx, Access{Repo: ns}, p.Hash, uint64(p.meta.rawBytes(0, p.meta.n()))); err != nil {
			return err
		}
	}
	return nil
}
