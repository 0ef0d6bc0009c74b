package cas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// footerProbe is how many bytes of a xorb's tail the first footer read asks for: the whole footer
// of a xorb of up to about 1600 chunks (40 bytes per chunk); a larger footer takes a second read
// of exactly its length.
const footerProbe = 64 << 10

// XorbFooter reads the footer of xorb x with a suffix range ("bytes=-N") on the fetch URL, as an
// object store's presigned GET and our server's signed xorb route answer it (the object is the
// chunk records followed by the footer). A URL that refuses the range (403, 416, or an answer
// without a Content-Range inside the object) gives ErrNoFooter; other failures are retried within
// the client's budget.
func (h *HTTP) XorbFooter(ctx context.Context, x hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error) {
	if f.URL == "" {
		return nil, fmt.Errorf("xorb %s: %w (plan has no URL)", x, ErrNoFooter)
	}
	tail, total, err := h.fetchTail(ctx, x, f.URL, footerProbe)
	if err != nil {
		return nil, err
	}
	if len(tail) >= 4 {
		need := int64(tail[len(tail)-4]) | int64(tail[len(tail)-3])<<8 | int64(tail[len(tail)-2])<<16 | int64(tail[len(tail)-1])<<24
		need += 4
		if need > int64(len(tail)) && need <= xorb.MaxFooterSize && need <= total {
			if tail, total, err = h.fetchTail(ctx, x, f.URL, need); err != nil {
				return nil, err
			}
		}
	}
	foot, _, err := xorb.ReadFooter(tailAt{base: total - int64(len(tail)), b: tail}, total)
	if err != nil {
		return nil, fmt.Errorf("xorb %s: %w: %w", x, ErrNoFooter, err)
	}
	if foot.Hash != x {
		return nil, fmt.Errorf("xorb %s: %w: the footer names xorb %s", x, ErrNoFooter, foot.Hash)
	}
	return foot, nil
}

// fetchTail GETs the last n bytes of the object at url (fewer when the object, or what the URL
// grants of its tail, is shorter) and the object's size from Content-Range.
func (h *HTTP) fetchTail(ctx context.Context, x hash.Hash, url string, n int64) ([]byte, int64, error) {
	var tail []byte
	var total int64
	err := h.do(ctx, call{
		op: "xorb footer " + x.String(), method: http.MethodGet, url: url,
		header: map[string]string{"Range": "bytes=-" + strconv.FormatInt(n, 10)},
		noRetry: func(code int) bool {
			return code == http.StatusForbidden || code == http.StatusRequestedRangeNotSatisfiable || code == http.StatusNotFound
		},
		accept: func(resp *http.Response) error {
			start, end, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
			if resp.StatusCode != http.StatusPartialContent || !ok || end+1 != size || end-start+1 > n {
				return fmt.Errorf("%w: HTTP %d, Content-Range %q", ErrNoFooter, resp.StatusCode, resp.Header.Get("Content-Range"))
			}
			b := make([]byte, end-start+1)
			if _, err := io.ReadFull(resp.Body, b); err != nil {
				return retry.Mark(fmt.Errorf("xorb %s footer: read body: %w", x, err))
			}
			tail, total = b, size
			return nil
		},
	})
	if err != nil {
		if errors.Is(err, ErrNoFooter) {
			return nil, 0, fmt.Errorf("xorb %s: %w", x, err)
		}
		if c := StatusCode(err); c == http.StatusForbidden || c == http.StatusRequestedRangeNotSatisfiable || c == http.StatusNotFound {
			return nil, 0, fmt.Errorf("%w: %w", ErrNoFooter, err)
		}
		return nil, 0, err
	}
	return tail, total, nil
}

// parseContentRange parses "bytes START-END/SIZE".
func parseContentRange(v string) (start, end, size int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, sz, found := strings.Cut(spec, "/")
	a, b, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	size, err3 = strconv.ParseInt(sz, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || start < 0 || end < start || size <= end {
		return 0, 0, 0, false
	}
	return start, end, size, true
}

// tailAt reads the bytes of an object fetched from offset base on.
type tailAt struct {
	base int64
	b    []byte
}

func (t tailAt) ReadAt(p []byte, off int64) (int, error) {
	if off < t.base || off-t.base+int64(len(p)) > int64(len(t.b)) {
		return 0, fmt.Errorf("bytes %d-%d are not in the fetched tail (from %d)", off, off+int64(len(p)), t.base)
	}
	return copy(p, t.b[off-t.base:]), nil
}
