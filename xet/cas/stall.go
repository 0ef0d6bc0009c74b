package cas

import "github.com/git-xet-transfer/git-xet-transfer/xet/retry"

// DefaultStallTimeout is retry.DefaultStallTimeout, the stall rule's default (retry.StallGuard),
// under the name this package's callers know.
const DefaultStallTimeout = retry.DefaultStallTimeout
