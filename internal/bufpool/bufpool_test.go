package bufpool

import (
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// TestPool: a buffer put back is handed out again (only to a Get it is big enough for), at most
// Keep are kept (the rest are released at once), and all are released once none came back for
// Idle.
func TestPool(t *testing.T) {
	var mu sync.Mutex
	var released []int
	p := &Pool{Keep: 2, Idle: 50 * time.Millisecond, Min: 20, Release: func(b []byte) {
		mu.Lock()
		released = append(released, cap(b))
		mu.Unlock()
	}}
	if b := p.Get(10); b != nil {
		t.Fatalf("an empty pool handed out a buffer of %d", cap(b))
	}
	p.Put(make([]byte, 0, 19)) // under Min: neither kept nor released
	if b := p.Get(1); b != nil {
		t.Fatalf("a buffer under Min was kept (cap %d)", cap(b))
	}
	small, big := make([]byte, 5, 100), make([]byte, 7, 1000)
	p.Put(small)
	p.Put(big)
	p.Put(make([]byte, 0, 50)) // a third: released now
	mu.Lock()
	if len(released) != 1 || released[0] != 50 {
		t.Fatalf("released %v, want the third buffer (50)", released)
	}
	mu.Unlock()
	b := p.Get(500)
	if cap(b) != 1000 || len(b) != 0 || &b[:1][0] != &big[:1][0] {
		t.Fatalf("Get(500) = len %d cap %d, want the 1000-byte buffer, emptied", len(b), cap(b))
	}
	if b := p.Get(500); b != nil {
		t.Fatalf("Get(500) handed out a buffer of %d", cap(b))
	}
	p.Put(b)
	testutil.Eventually(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(released) == 3 })
	mu.Lock()
	defer mu.Unlock()
	if len(released) != 3 {
		t.Fatalf("after the idle time released %v, want the two kept ones too", released)
	}
	if b := p.Get(1); b != nil {
		t.Fatal("a buffer was handed out after it was released")
	}
}
