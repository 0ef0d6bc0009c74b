package store

import (
	"context"
	"fmt"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// PresignedXorbs gives URLs that fetch stored xorbs straight from storage that presigns its GETs
// (blob/s3), so clients fetch xorb ranges without the server. A stored xorb's records start at
// byte 0, so the byte ranges of a reconstruction apply to the URL as they are.
type PresignedXorbs struct {
	Storage blob.Presigner
}

// XorbURL returns a GET of the stored xorb h, valid for ttl, that accepts a Range header.
func (p PresignedXorbs) XorbURL(ctx context.Context, h hash.Hash, ttl time.Duration) (string, error) {
	u, err := p.Storage.PresignGet(ctx, xorbName(h), ttl)
	if err != nil {
		return "", fmt.Errorf("xorb %s: %w", h, err)
	}
	return u, nil
}
