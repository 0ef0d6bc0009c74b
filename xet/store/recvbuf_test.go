package store

import (
	"errors"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/bufpool"
)

// cutReader holds n bytes, says so (Len, as an HTTP body with a Content-Length does), and fails
// after them.
type cutReader struct{ n, left int }

func (r *cutReader) Len() int { return r.n }
func (r *cutReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(p), r.left)
	r.left -= n
	return n, nil
}

// A large body that breaks off (a client gone mid-upload) gives its receive buffer back: a
// mapped buffer dropped instead would stay mapped for the rest of the server's life.
func TestBrokenBodyReturnsItsBuffer(t *testing.T) {
	for b := recvBufs.Get(recvMin); b != nil; b = recvBufs.Get(recvMin) {
		bufpool.Unmap(b)
	}
	_, err := readBounded(&cutReader{n: 20 << 20, left: 5 << 20}, MaxXorbBodyBytes)
	if err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a broken body read as %v", err)
	}
	b := recvBufs.Get(recvMin)
	if b == nil {
		t.Fatal("the broken body's buffer did not come back to the pool")
	}
	bufpool.Unmap(b)
}
