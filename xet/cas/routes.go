package cas

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// QueryChunk asks GET /v1/chunks/default-merkledb/{chunk} for a global-dedupe shard. A 404 is a
// miss; so is any other failure (logged, returned wrapping ErrNotFound), since dedupe is only an
// optimisation. 429 is not retried.
func (h *HTTP) QueryChunk(ctx context.Context, chunk hash.Hash) ([]byte, error) {
	var out []byte
	err := h.do(ctx, call{
		op: "query chunk " + chunk.String(), method: http.MethodGet, auth: true, no429: true,
		url:     h.o.Endpoint + "/v1/chunks/" + casapi.PrefixMerkleDB + "/" + chunk.String(),
		noRetry: func(code int) bool { return code == http.StatusNotFound },
		accept: func(resp *http.Response) error {
			b, err := readLimited("query chunk", resp.Body, MaxDedupeShard)
			out = b
			return err
		},
	})
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case StatusCode(err) == http.StatusNotFound:
		return nil, ErrNotFound
	}
	h.log.Warn().Err(err).Msg("cas: global dedupe query failed; treated as a miss")
	return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
}

// PutXorb uploads a xorb: POST /v1/xorbs/default/{xorb} with the records as body. Once it returns,
// no request body of any attempt is read any more (each is taken back, lentBodies), so the caller
// may reuse x.Body (and lent payloads are no longer read from x.Src).
func (h *HTTP) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	var ans casapi.PutXorbResponse
	header := map[string]string{"Content-Type": "application/octet-stream"}
	if v := x.Follows.Header(); v != "" {
		header[lfsbatch.HeaderXorbFollows] = v
	}
	err := h.do(ctx, call{
		op: "upload xorb " + x.Hash.String(), method: http.MethodPost, auth: true, bodyOf: x.Reader, bodyLen: int64(x.Size()),
		url:    h.o.Endpoint + "/v1/xorbs/" + casapi.PrefixDefault + "/" + x.Hash.String(),
		header: header,
		accept: func(resp *http.Response) error {
			return decodeJSON("upload xorb", resp.Body, MaxSmallAnswer, &ans)
		},
	})
	if err != nil {
		return false, err
	}
	return ans.WasInserted, nil
}

// HasXorb asks HEAD /v1/xorbs/default/{xorb}: 200 is stored, 404 is not; a CAS without the route
// (405, 501) cannot tell, which is false too.
func (h *HTTP) HasXorb(ctx context.Context, x hash.Hash) (bool, error) {
	err := h.do(ctx, call{
		op: "xorb exists " + x.String(), method: http.MethodHead, auth: true,
		url:     h.o.Endpoint + "/v1/xorbs/" + casapi.PrefixDefault + "/" + x.String(),
		noRetry: func(code int) bool { return code == http.StatusNotFound || code == http.StatusMethodNotAllowed },
		accept:  func(*http.Response) error { return nil },
	})
	switch c := StatusCode(err); {
	case err == nil:
		return true, nil
	case c == http.StatusNotFound || c == http.StatusMethodNotAllowed || c == http.StatusNotImplemented:
		return false, nil
	}
	return false, err
}

// fallback reports whether a v2 route answered "not here" (404, 501), so v1 is to be tried.
func fallback(err error) bool {
	c := StatusCode(err)
	return c == http.StatusNotFound || c == http.StatusNotImplemented
}

// PutShard registers an upload-form shard: POST /v2/shards (NDJSON progress, terminal result or
// error), falling back to POST /v1/shards on 404/501; the answer is remembered.
func (h *HTTP) PutShard(ctx context.Context, body []byte) error {
	if h.shardVersion.Load() != 1 {
		err := h.putShardV2(ctx, body)
		if err == nil || !fallback(err) {
			if err == nil {
				h.shardVersion.Store(2)
			}
			return err
		}
		h.log.Debug().Err(err).Msg("cas: POST /v2/shards not served; using /v1/shards")
		h.shardVersion.Store(1)
	}
	var ans casapi.PutShardResponse
	return h.do(ctx, call{
		op: "upload shard", method: http.MethodPost, auth: true, body: body,
		url:    h.o.Endpoint + "/v1/shards",
		header: map[string]string{"Content-Type": "application/octet-stream"},
		accept: func(resp *http.Response) error {
			return decodeJSON("upload shard", resp.Body, MaxSmallAnswer, &ans)
		},
	})
}

func (h *HTTP) putShardV2(ctx context.Context, body []byte) error {
	return h.do(ctx, call{
		op: "upload shard (v2)", method: http.MethodPost, auth: true, body: body,
		url:     h.o.Endpoint + "/v2/shards",
		header:  map[string]string{"Content-Type": "application/octet-stream"},
		noRetry: func(code int) bool { return code == http.StatusNotFound },
		beats:   true,
		accept:  func(resp *http.Response) error { return readShardFrames(resp.Body) },
	})
}

// readShardFrames follows the NDJSON answer of POST /v2/shards until its terminal frame. Lines are
// at most casapi.MaxShardFrameLength bytes; unknown frame types are ignored.
func readShardFrames(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), casapi.MaxShardFrameLength)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var f casapi.ShardFrame
		if err := json.Unmarshal(line, &f); err != nil {
			return fmt.Errorf("upload shard: bad answer frame: %w", err)
		}
		switch f.Type {
		case "result":
			return nil
		case "error":
			err := fmt.Errorf("upload shard: server: %s", f.Message)
			if f.Retryable {
				return retry.Mark(err)
			}
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("upload shard: answer line longer than %d bytes", casapi.MaxShardFrameLength)
		}
		return retry.Mark(fmt.Errorf("upload shard: read answer: %w", err))
	}
	return retry.Mark(errors.New("upload shard: answer ended without a result"))
}

// Reconstruct gets the plan of a file: GET /v2/reconstructions/{file} (with Range when rng is
// set), falling back to /v1 on 404/501 (remembered once v1 answers).
func (h *HTTP) Reconstruct(ctx context.Context, file hash.Hash, rng *casapi.ByteRange) (*casapi.ReconstructionV2, error) {
	if h.reconVersion.Load() != 1 {
		var v2 casapi.ReconstructionV2
		err := h.getReconstruction(ctx, "v2", file, rng, &v2)
		if err == nil {
			h.reconVersion.Store(2)
			return &v2, nil
		}
		if !fallback(err) || h.reconVersion.Load() == 2 {
			return nil, reconError(err)
		}
		var v1 casapi.ReconstructionV1
		err1 := h.getReconstruction(ctx, "v1", file, rng, &v1)
		if err1 != nil {
			if fallback(err1) {
				return nil, reconError(err) // v1 not there either: the v2 answer stands
			}
			return nil, reconError(err1)
		}
		h.reconVersion.Store(1)
		return casapi.FromV1(&v1), nil
	}
	var v1 casapi.ReconstructionV1
	if err := h.getReconstruction(ctx, "v1", file, rng, &v1); err != nil {
		return nil, reconError(err)
	}
	return casapi.FromV1(&v1), nil
}

func reconError(err error) error {
	switch StatusCode(err) {
	case http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: %w", ErrRangeNotSatisfiable, err)
	}
	return err
}

func (h *HTTP) getReconstruction(ctx context.Context, version string, file hash.Hash, rng *casapi.ByteRange, v any) error {
	c := call{
		op: "reconstruct " + file.String(), method: http.MethodGet, auth: true,
		url:     h.o.Endpoint + "/" + version + "/reconstructions/" + file.String(),
		noRetry: func(code int) bool { return code == http.StatusNotFound },
		accept: func(resp *http.Response) error {
			return decodeJSON("reconstruct", resp.Body, MaxReconstructionJSON, v)
		},
	}
	if rng != nil {
		c.header = map[string]string{"Range": rng.Header()}
	}
	return h.do(ctx, c)
}

// Fetch GETs bytes r of a signed xorb URL, with the Range header and without the bearer token.
// 403 returns ErrURLExpired (the caller re-plans). It makes one attempt: a failure that is worth
// retrying is marked so (retry.IsRetryable) and the caller, which alone sees a body cut short while
// it reads, retries the range (see package retry). The body yields exactly r.Len() bytes: a short
// body fails with a retryable error.
func (h *HTTP) Fetch(ctx context.Context, x hash.Hash, f casapi.XorbFetch, r casapi.ByteRange) (io.ReadCloser, error) {
	if f.URL == "" {
		return nil, fmt.Errorf("fetch xorb %s: plan has no URL", x)
	}
	if r.End < r.Start {
		return nil, fmt.Errorf("fetch xorb %s: bad range %d-%d", x, r.Start, r.End)
	}
	var body io.ReadCloser
	err := h.do(ctx, call{
		op: "fetch xorb " + x.String() + " " + r.Header(), method: http.MethodGet, url: f.URL,
		header: map[string]string{"Range": r.Header()},
		once:   true,
		accept: func(resp *http.Response) error {
			switch {
			case resp.StatusCode == http.StatusPartialContent:
			case resp.StatusCode == http.StatusOK && resp.ContentLength == int64(r.Len()):
			default:
				return fmt.Errorf("fetch xorb %s: HTTP %d without the requested range", x, resp.StatusCode)
			}
			if resp.ContentLength >= 0 && resp.ContentLength != int64(r.Len()) {
				return fmt.Errorf("fetch xorb %s: answer has %d bytes, asked for %d", x, resp.ContentLength, r.Len())
			}
			// Hand the body over: replace it so the deferred drain does not consume it.
			body = &exactBody{rc: resp.Body, left: int64(r.Len()), what: "xorb " + x.String() + " " + r.Header()}
			resp.Body = http.NoBody
			return nil
		},
	})
	if err != nil {
		if StatusCode(err) == http.StatusForbidden {
			return nil, fmt.Errorf("%w: %w", ErrURLExpired, err)
		}
		return nil, err
	}
	return body, nil
}

// exactBody passes a body through and fails (retryably) when it ends before left bytes.
type exactBody struct {
	rc   io.ReadCloser
	left int64
	what string
}

func (b *exactBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		return n, retry.Mark(fmt.Errorf("%s: body truncated (%d bytes missing): %w", b.what, b.left, io.ErrUnexpectedEOF))
	}
	if err != nil && err != io.EOF {
		return n, retry.Mark(fmt.Errorf("%s: read body: %w", b.what, err))
	}
	if b.left == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (b *exactBody) Close() error {
	drain(b.rc)
	return nil
}

var _ Client = (*HTTP)(nil)

// MaxBatchListing bounds a batch listing's answer (GET /v1/batches/{id}).
const MaxBatchListing = 16 << 20

// BatchListing asks GET /v1/batches/{id}, our server's listing of one LFS batch answer
// (lfsbatch.HeaderBatchURL). Any failure is the caller's to ignore: the listing is a hint, and the
// objects go their own way without it; 404 and 403 are not retried.
func (h *HTTP) BatchListing(ctx context.Context, id string) (*casapi.BatchListing, error) {
	var out casapi.BatchListing
	err := h.do(ctx, call{
		op: "batch listing", method: http.MethodGet, auth: true,
		url:     h.o.Endpoint + "/v1/batches/" + url.PathEscape(id),
		noRetry: func(code int) bool { return code == http.StatusNotFound || code == http.StatusForbidden },
		accept: func(resp *http.Response) error {
			return decodeJSON("batch listing", resp.Body, MaxBatchListing, &out)
		},
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
