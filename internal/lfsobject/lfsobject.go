// Package lfsobject is what git-lfs says an LFS object is called: its oid, a SHA-256 in lowercase
// hex (the only kind git-lfs uses). It is the one place that says what an oid looks like: the
// protocol's requests, the chunk index's file names, the objects a history walk finds, the
// transfers of the client. It imports no project package, and nothing that costs the start-up
// agent (which links it through the protocol) anything at start.
package lfsobject

import (
	"encoding/hex"
	"fmt"
)

// ValidOid reports whether oid is a SHA-256 in lowercase hex, the only oid git-lfs uses.
func ValidOid(oid string) bool {
	if len(oid) != 64 {
		return false
	}
	for i := 0; i < len(oid); i++ {
		c := oid[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseOid returns the digest oid names; an error when it is not an oid (ValidOid).
func ParseOid(oid string) ([32]byte, error) {
	var b [32]byte
	if !ValidOid(oid) {
		return b, fmt.Errorf("oid %q is not a SHA-256", oid)
	}
	_, err := hex.Decode(b[:], []byte(oid))
	return b, err
}
