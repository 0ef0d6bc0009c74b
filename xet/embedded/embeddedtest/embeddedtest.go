// Package embeddedtest gives tests an in-process CAS (in the manner of net/http/httptest).
package embeddedtest

import (
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// New returns an in-process CAS over a new store in a temp directory of t.
func New(t testing.TB) *embedded.CAS {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return embedded.New(st, "")
}
