// Package embeddedtest gives tests an in-process CAS (in the manner of net/http/httptest).
package embeddedtest

import (
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// New returns an in-process CAS over a new store in a temp directory of t. The store is closed
// when the test and its cleanups registered after New are done, so its files do not outlive it.
func New(t testing.TB) *embedded.CAS {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return embedded.New(st, "")
}
