package cas

import (
	"strings"
	"testing"
)

// A quota refusal (507) or an object too large (413) reads as the server's message first: that is
// what git-lfs shows the user.
func TestQuotaRefusalLeadsWithServerMessage(t *testing.T) {
	for _, code := range []int{507, 413} {
		e := &StatusError{Op: "POST /v1/xorbs/default/ab", Code: code, Message: "repository org/x is over its 10 GiB quota on xet.example.com"}
		if got := e.Error(); !strings.HasPrefix(got, "repository org/x is over its 10 GiB quota on xet.example.com (HTTP ") {
			t.Errorf("%d: %q", code, got)
		}
	}
	if got := (&StatusError{Op: "GET /x", Code: 507}).Error(); got != "GET /x: HTTP 507: Insufficient Storage" {
		t.Errorf("without a message: %q", got)
	}
}
