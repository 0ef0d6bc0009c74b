package client

import (
	"context"
	"strconv"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/gitrepo"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// retryPolicy is the repository's retry settings as the one retry policy (see retryPolicyOf); a
// configuration that cannot be read leaves the policy's defaults (the request that needs it says
// what failed).
func retryPolicy(ctx context.Context, g Git) retry.Policy {
	repo := gitrepo.Open(g.Dir)
	return retryPolicyOf(func(key string) (string, bool) {
		v, ok, err := repo.Get(ctx, key)
		return v, ok && err == nil
	})
}

// retryPolicyOf maps git-lfs's lfs.transfer.maxretries (retries after the first attempt, at least
// 1) and lfs.transfer.maxretrydelay (seconds; the longest backoff between attempts, 0: none) onto
// retry.Policy, as git-lfs reads them: a value that is not a valid number is ignored. Unset, the
// policy keeps its defaults. A server's Retry-After is still obeyed up to the policy's MaxDelay.
func retryPolicyOf(get func(key string) (string, bool)) retry.Policy {
	var p retry.Policy
	if v, ok := get("lfs.transfer.maxretries"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 {
			p.Attempts = n + 1
		}
	}
	if v, ok := get("lfs.transfer.maxretrydelay"); ok {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			d := time.Duration(s) * time.Second
			if s == 0 {
				d = time.Millisecond // no backoff of our own
			}
			p.MaxDelay = d
			if p.BaseDelay = retry.DefaultBaseDelay; p.BaseDelay > d {
				p.BaseDelay = d
			}
		}
	}
	return p
}
