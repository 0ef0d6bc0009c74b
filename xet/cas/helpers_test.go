package cas_test

import (
	"crypto/rand"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func randHash() hash.Hash {
	var h hash.Hash
	_, _ = rand.Read(h[:])
	return h
}
