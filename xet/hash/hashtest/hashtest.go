// Package hashtest holds hash helpers for tests (in the manner of net/http/httptest).
package hashtest

import "github.com/git-xet-transfer/git-xet-transfer/xet/hash"

// MustParse is hash.Parse for test constants; it panics on a malformed string.
func MustParse(s string) hash.Hash {
	h, err := hash.Parse(s)
	if err != nil {
		panic(err)
	}
	return h
}
