package lfsobject

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestValidOid(t *testing.T) {
	good := strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		oid  string
		want bool
	}{
		{good, true},
		{strings.ToUpper(good), false}, // git-lfs writes lowercase only
		{good[:63], false},
		{good + "0", false},
		{good[:63] + "g", false},
		{"../" + good[3:], false},
		{"", false},
	} {
		if got := ValidOid(c.oid); got != c.want {
			t.Errorf("ValidOid(%q) = %v, want %v", c.oid, got, c.want)
		}
		if _, err := ParseOid(c.oid); (err == nil) != c.want {
			t.Errorf("ParseOid(%q): %v", c.oid, err)
		}
	}
	b, err := ParseOid(good)
	if err != nil || hex.EncodeToString(b[:]) != good {
		t.Fatalf("ParseOid(%s) = %x, %v", good, b, err)
	}
}
