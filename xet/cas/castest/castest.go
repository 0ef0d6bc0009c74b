// Package castest holds test doubles of a cas.Client (in the manner of net/http/httptest).
package castest

import (
	"context"
	"sync/atomic"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Counting is the cas.Client it wraps, counting the xorb and shard uploads asked of it: every
// call, whether it stored something or failed. Safe for concurrent use (an upload session puts
// xorbs from several goroutines).
type Counting struct {
	cas.Client
	Xorbs  atomic.Int64 // PutXorb calls
	Shards atomic.Int64 // PutShard calls
}

// NewCounting returns a Counting over c.
func NewCounting(c cas.Client) *Counting { return &Counting{Client: c} }

// PutXorb counts the call and passes it on.
func (c *Counting) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	c.Xorbs.Add(1)
	return c.Client.PutXorb(ctx, x)
}

// PutShard counts the call and passes it on.
func (c *Counting) PutShard(ctx context.Context, body []byte) error {
	c.Shards.Add(1)
	return c.Client.PutShard(ctx, body)
}
