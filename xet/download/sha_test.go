package download

import (
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// shaStream gives the SHA-256 of the file whatever the order of the writes, with rewrites of
// hashed bytes (a retried range) and writes past the frontier read back from the file.
func TestSHAStreamOutOfOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 3<<20+777)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	want := sha256.Sum256(data)
	for trial := range 20 {
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		// Cut the file into pieces, write them in a random order, some twice.
		var cuts []int
		for at := 0; at < len(data); {
			n := 1 + r.IntN(300<<10)
			cuts = append(cuts, at)
			at += n
		}
		cuts = append(cuts, len(data))
		order := r.Perm(len(cuts) - 1)
		if trial == 0 {
			for i := range order {
				order[i] = i // in order: everything hashed from the buffers
			}
		}
		s := newSHAStream(f)
		for k, i := range order {
			b := data[cuts[i]:cuts[i+1]]
			if _, err := f.WriteAt(b, int64(cuts[i])); err != nil {
				t.Fatal(err)
			}
			if err := s.written(int64(cuts[i]), b); err != nil {
				t.Fatal(err)
			}
			if k%5 == 0 { // a retried piece
				if err := s.written(int64(cuts[i]), b); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := s.finish(int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("trial %d: SHA-256 %x, want %x", trial, got, want)
		}
		f.Close()
	}
}

// behind counts the bytes written past the in-order prefix at one time: none for writes in file
// order, the rest of the file when the first piece comes last.
func TestSHAStreamBehind(t *testing.T) {
	data := make([]byte, 4<<20)
	for _, tc := range []struct {
		name  string
		order []int // of four 1 MiB pieces
		want  int64
	}{{"in order", []int{0, 1, 2, 3}, 0}, {"first last", []int{1, 2, 3, 0}, 3 << 20}, {"pairs", []int{1, 0, 3, 2}, 1 << 20}} {
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		s := newSHAStream(f)
		for _, i := range tc.order {
			if err := s.written(int64(i)<<20, data[i<<20:(i+1)<<20]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.finish(int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if got := s.behind(); got != tc.want {
			t.Errorf("%s: %d bytes behind at most, want %d", tc.name, got, tc.want)
		}
		f.Close()
	}
}
