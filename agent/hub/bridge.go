package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/agent/credentials"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// BridgeHash reads the Xet file hash out of a bridge URL
// (https://cas-bridge.xethub.hf.co/xet-bridge-us/<id>/<64-hex Xet hash>?...: the segment two after
// the one starting "xet-bridge-"). ok is false for any other URL (an object not yet in Xet); a
// bridge URL whose hash segment is not a Xet hash is an error.
func BridgeHash(href string) (h hash.Hash, ok bool, err error) {
	u, err := url.Parse(href)
	if err != nil {
		return h, false, fmt.Errorf("download href is not a URL")
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "xet-bridge-") {
			continue
		}
		if i+2 >= len(segs) {
			return h, false, fmt.Errorf("bridge URL %s has no Xet hash after %s", Where(href), s)
		}
		h, err := hash.Parse(segs[i+2])
		if err != nil {
			return h, false, fmt.Errorf("bridge URL %s: %q is not a 64-hex Xet hash", Where(href), segs[i+2])
		}
		return h, true, nil
	}
	return h, false, nil
}

// GetVerified downloads href (a plain signed URL, with the action's headers) into path: streamed,
// cut off past size bytes, its SHA-256 checked against oid, synced (SaveVerified). On any
// failure path is removed.
func (c *Client) GetVerified(ctx context.Context, href string, header map[string]string, oid string, size int64, path string, progress func(int64)) (err error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, href, nil)
	if err != nil || (hr.URL.Scheme != "http" && hr.URL.Scheme != "https") {
		return fmt.Errorf("GET %s: not an http(s) URL", Where(href))
	}
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	hr.Header.Set("User-Agent", c.ua)
	resp, err := c.http.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("GET %s: %w", Where(href), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readHTTPError(http.MethodGet, href, resp, credentials.Credential{})
	}
	if err := SaveVerified(ctx, resp.Body, path, oid, size, progress); err != nil {
		return fmt.Errorf("GET %s: %w", Where(href), err)
	}
	return nil
}

// ErrMismatch marks bytes that are not the object they were to be: another size, or another
// SHA-256 than the oid.
var ErrMismatch = errors.New("the bytes do not match the object")

// SaveVerified writes the object oid of size bytes, read from body, to path (created or truncated), and
// keeps it only when it is exactly size bytes whose SHA-256 is oid, synced: otherwise path is
// removed and the error wraps ErrMismatch, or is the I/O error (or ctx's: reading stops when ctx
// ends). It reads at most size+1 bytes of body. progress (may be nil) gets the bytes written so
// far. It is the one way a copy of an object is made from bytes that came from elsewhere: a plain
// GET (GetVerified), a local remote's plain LFS file (agent/client), migrate's sources.
func SaveVerified(ctx context.Context, body io.Reader, path, oid string, size int64, progress func(int64)) (err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	sum := sha256.New()
	in := &reader{stopped: ctx.Err, r: io.LimitReader(body, size+1), progress: progress}
	n, err := io.Copy(io.MultiWriter(f, sum), in)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%w: got %d bytes, want %d", ErrMismatch, n, size)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != oid {
		return fmt.Errorf("%w: SHA-256 %s, want %s", ErrMismatch, got, oid)
	}
	return f.Sync()
}

// reader reads r until stopped returns an error (a ctx's Err), reporting the bytes read so far.
type reader struct {
	stopped  func() error
	r        io.Reader
	n        int64
	progress func(int64)
}

func (p *reader) Read(b []byte) (int, error) {
	if err := p.stopped(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	if n > 0 && p.progress != nil {
		p.progress(p.n)
	}
	return n, err
}
