package fs

import (
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/blobtest"
)

// The backends' conformance suite, with packs and with a file per blob.
func TestConformance(t *testing.T) {
	for name, opts := range map[string]Options{"packs": {}, "loose": {Loose: true}} {
		t.Run(name, func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blob.Backend {
				b, err := New(t.TempDir(), opts)
				if err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}
