package hash

import "testing"

// TestKeyerIsKeyed: a Keyer reused over several hashes gives Keyed's answer for each (its state is
// reset between them).
func TestKeyerIsKeyed(t *testing.T) {
	key := Chunk([]byte("key"))
	k := NewKeyer(key)
	for i := range 3 {
		h := Chunk([]byte{byte(i)})
		if got, want := k.Sum(h), Keyed(key, h); got != want {
			t.Fatalf("hash %d: Keyer %s, Keyed %s", i, got, want)
		}
	}
}
