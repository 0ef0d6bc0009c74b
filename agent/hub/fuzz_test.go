package hub

import (
	"bytes"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// readBatch takes any bytes without panicking or reading past its limit, and what it accepts
// answers exactly the objects asked for.
func FuzzReadBatch(f *testing.F) {
	f.Add([]byte(`{"transfer":"basic","objects":[{"oid":"` + oid + `","size":10,"actions":{"download":{"href":"https://x/y"}}}]}`))
	f.Add([]byte(`{"objects":[{"oid":"` + oid + `","size":10}]}`))
	f.Add([]byte(`{"objects":null}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := readBatch(bytes.NewReader(b), "https://h/p", []lfsbatch.Object{{OID: oid, Size: 10}}, false)
		if err != nil {
			return
		}
		if len(a.Objects) != 1 || a.Objects[oid].Size != 10 || a.Objects[oid].Error != nil {
			t.Fatalf("accepted %+v", a)
		}
	})
}

// BridgeHash never panics; a hash it returns is the 64-hex segment of the URL.
func FuzzBridgeHash(f *testing.F) {
	f.Add("https://cas-bridge.xethub.hf.co/xet-bridge-us/66d0dccb3866d4d3087d3a9f/908c39bfdfec888e295ba04e974b6342f3c15776760edd46838240a8d455525d?X=1")
	f.Add("https://h/xet-bridge-/a")
	f.Add("::::")
	f.Fuzz(func(t *testing.T, u string) {
		h, ok, err := BridgeHash(u)
		if ok && (err != nil || !strings.Contains(strings.ToLower(u), h.String())) {
			t.Fatalf("BridgeHash(%q) = %s, %v", u, h, err)
		}
	})
}
