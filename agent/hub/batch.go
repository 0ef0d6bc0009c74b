package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/redact"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// MaxBatch is the most objects one batch request names (git-lfs's own limit).
const MaxBatch = 100

// BatchAnswer is the Hub's answer to a batch request, checked against the request: one answer per
// requested object, in any order, with its oid and size.
type BatchAnswer struct {
	Transfer string                     // "basic", "xet", or "" (basic)
	Objects  map[string]lfsbatch.Result // by oid
}

// Batch asks the LFS batch API about objs (at most MaxBatch) for operation ("upload" or
// "download"), offering transfers; ref is the ref pushed or fetched ("" for none). Downloads go
// anonymous first. An object's own error is returned as an error naming the object.
func (c *Client) Batch(ctx context.Context, operation string, transfers []string, ref string, objs []lfsbatch.Object) (*BatchAnswer, error) {
	answer, at, err := c.postBatch(ctx, c.lfs.String(), operation, transfers, ref, objs)
	if err != nil {
		var he *HTTPError
		if operation == "upload" && errors.As(err, &he) && he.Status == http.StatusForbidden {
			return nil, fmt.Errorf("LFS batch upload to %s: %w; the token needs write access to %s (or push to a pull-request ref, refs/pr/N)", c.repo, err, c.repo)
		}
		return nil, fmt.Errorf("LFS batch %s: %w", operation, err)
	}
	return readBatch(bytes.NewReader(answer), at, objs, false)
}

// BatchEach asks the LFS batch API of any LFS server (lfsURL: its …/info/lfs endpoint, a Hub
// repository's or not) about objs (at most MaxBatch), as Batch does without a ref, but keeps each
// object's own error in its Result (Error set, no actions) for a caller that reports objects one
// by one. The answer is otherwise checked as Batch checks it.
func (c *API) BatchEach(ctx context.Context, lfsURL, operation string, transfers []string, objs []lfsbatch.Object) (*BatchAnswer, error) {
	answer, at, err := c.postBatch(ctx, strings.TrimSuffix(lfsURL, "/"), operation, transfers, "", objs)
	if err != nil {
		return nil, fmt.Errorf("LFS batch %s: %w", operation, err)
	}
	return readBatch(bytes.NewReader(answer), at, objs, true)
}

// postBatch posts a batch request to lfsURL/objects/batch: the answer's body and where it came
// from (for messages).
func (c *API) postBatch(ctx context.Context, lfsURL, operation string, transfers []string, ref string, objs []lfsbatch.Object) ([]byte, string, error) {
	if len(objs) == 0 || len(objs) > MaxBatch {
		return nil, "", fmt.Errorf("batch of %d objects (want 1 to %d)", len(objs), MaxBatch)
	}
	breq := lfsbatch.Request{Operation: operation, Transfers: transfers, Objects: objs, HashAlgo: "sha256"}
	if ref != "" {
		breq.Ref = &lfsbatch.Ref{Name: ref}
	}
	body, err := json.Marshal(breq)
	if err != nil {
		return nil, "", err
	}
	u := lfsURL + "/objects/batch"
	answer, err := c.DoRead(ctx, Request{Method: http.MethodPost, URL: u, Body: body, Anonymous: operation == "download", LFS: true,
		Header: map[string]string{"Accept": "application/vnd.git-lfs+json", "Content-Type": "application/vnd.git-lfs+json"}}, 16<<20)
	return answer, Where(u), err
}

// readBatch decodes and checks a batch answer (at most 16 MiB). An object's own error fails the
// answer unless keepErrors.
func readBatch(r io.Reader, at string, objs []lfsbatch.Object, keepErrors bool) (*BatchAnswer, error) {
	var raw lfsbatch.Response
	if err := json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("LFS batch answer of POST %s is not JSON: %w", at, err)
	}
	if raw.Objects == nil {
		return nil, fmt.Errorf("LFS batch answer of POST %s has no \"objects\"", at)
	}
	want := make(map[string]int64, len(objs))
	for _, o := range objs {
		want[o.OID] = o.Size
	}
	a := &BatchAnswer{Transfer: raw.Transfer, Objects: make(map[string]lfsbatch.Result, len(raw.Objects))}
	for _, o := range raw.Objects {
		size, ok := want[o.OID]
		switch {
		case !ok:
			return nil, fmt.Errorf("LFS batch answer of POST %s names object %q, which was not asked for", at, o.OID)
		case o.Error != nil && keepErrors:
			o.Actions = nil
		case o.Error != nil:
			return nil, fmt.Errorf("LFS batch answer of POST %s: object %s: error %d: %s", at, o.OID, o.Error.Code, redact.Printable(o.Error.Message))
		case o.Size != size:
			return nil, fmt.Errorf("LFS batch answer of POST %s gives object %s size %d, not %d", at, o.OID, o.Size, size)
		}
		a.Objects[o.OID] = o
	}
	for oid := range want {
		if _, ok := a.Objects[oid]; !ok {
			return nil, fmt.Errorf("LFS batch answer of POST %s leaves out object %s", at, oid)
		}
	}
	return a, nil
}
