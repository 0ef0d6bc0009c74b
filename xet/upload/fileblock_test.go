package upload_test

import (
	"crypto/sha256"
	"reflect"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// The session computes each term's verification hash while chunking instead of keeping the file's
// chunk hashes; the file blocks it registers must be exactly what testutil.NewFile makes from all the
// chunk hashes: same terms, verification hashes, flags and SHA-256, for files of one term, of many
// terms (dedupe runs inside the file and against an earlier file, new data between), and empty.
func TestFileBlockEqualsReference(t *testing.T) {
	a := blocks(12, 500)
	fresh := blocks(6, 900)
	files := [][]byte{
		join(t, a...),
		join(t, a[0], a[1], a[2], fresh[0], a[7], a[8], fresh[1], fresh[2], a[3], a[4], a[5], a[6], fresh[0], fresh[1], a[11]),
		join(t, fresh[3], fresh[4], fresh[3], fresh[4], fresh[5], a[9]),
		nil,
		testutil.RandomBytes(700<<10, 77),
	}
	cc := &recCAS{inner: embeddedtest.New(t)}
	res := uploadFiles(t, upload.Config{CAS: cc}, files...)
	sh := cc.lastShard(t)
	multi := 0
	for i, data := range files {
		fi, ok := sh.FindFile(res[i].FileHash)
		if !ok {
			t.Fatalf("file %d (%s) is not in the shard", i, res[i].FileHash)
		}
		got := sh.Files[fi]
		var chunkHashes []hash.Hash
		for _, c := range chunkEntries(data) {
			chunkHashes = append(chunkHashes, c.entry.Hash)
		}
		want := testutil.NewFile(res[i].FileHash, got.Terms, chunkHashes, sha256.Sum256(data))
		if len(got.Terms) > 1 {
			multi++
		}
		for _, f := range []*shard.File{&got, &want} { // nil and empty lists are the same block
			if len(f.Terms) == 0 {
				f.Terms = nil
			}
			if len(f.Verification) == 0 {
				f.Verification = nil
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("file %d: registered block\n%+v\nwant (testutil.NewFile)\n%+v", i, got, want)
		}
	}
	if multi < 2 {
		t.Fatalf("only %d files have several terms: the test data does not exercise term boundaries", multi)
	}
}
