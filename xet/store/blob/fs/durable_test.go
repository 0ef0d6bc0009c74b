package fs

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// recordSyncs records the directories syncDir makes durable until the test ends.
func recordSyncs(t *testing.T) func() []string {
	t.Helper()
	var mu sync.Mutex
	var dirs []string
	syncDirHook = func(dir string) {
		mu.Lock()
		dirs = append(dirs, dir)
		mu.Unlock()
	}
	t.Cleanup(func() { syncDirHook = nil })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(dirs)
		dirs = dirs[:0]
		return out
	}
}

// A large blob is durable only when every directory entry on its path is: the blob's own entry,
// and the entries of the directories Create made for it (xorbs/, xorbs/ab/), which a power loss
// on a file system without a journal would otherwise drop with the blob in them.
func TestCreateMakesNewDirectoriesDurable(t *testing.T) {
	root := t.TempDir()
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	synced := recordSyncs(t)
	big := bytes.Repeat([]byte{7}, packMaxBlob+1)
	created, err := b.Create(context.Background(), "xorbs/ab/first", bytes.NewReader(big))
	if err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	got := synced()
	for _, want := range []string{filepath.Join(root, "xorbs", "ab"), filepath.Join(root, "xorbs"), root} {
		if !slices.Contains(got, want) {
			t.Errorf("Create of a blob in new directories did not sync %s (synced %q)", want, got)
		}
	}
}

// Another writer may have linked a blob and not yet synced its directory when Create finds the
// blob there: Create reports it stored only once its entry is durable.
func TestCreateOfAnExistingBlobSyncsItsDirectory(t *testing.T) {
	root := t.TempDir()
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, packMaxBlob+1)
	if _, err := b.Create(context.Background(), "xorbs/ab/first", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	synced := recordSyncs(t)
	created, err := b.Create(context.Background(), "xorbs/ab/first", bytes.NewReader(big))
	if err != nil || created {
		t.Fatalf("Create of an existing blob: %v, %v", created, err)
	}
	if got, want := synced(), filepath.Join(root, "xorbs", "ab"); !slices.Contains(got, want) {
		t.Errorf("Create of an existing blob did not sync %s (synced %q)", want, got)
	}
}

// A small blob a store without packs wrote (the same store used from Windows, or by an older
// build) is a loose file; CreateBatch to a store with packs finds it and stores nothing. It reports
// the blob stored only once the file's entry is durable, as Create does for a large one: the other
// writer may have linked it a moment ago, not yet synced.
func TestCreateBatchOfALooseSmallBlobSyncsItsDirectory(t *testing.T) {
	root := t.TempDir()
	loose, err := New(root, Options{Loose: true})
	if err != nil {
		t.Fatal(err)
	}
	small := []byte("a small blob written as a file of its own")
	if created, err := loose.Create(context.Background(), "xorbs/cd/loose", bytes.NewReader(small)); err != nil || !created {
		t.Fatalf("Create without packs: %v, %v", created, err)
	}
	loose.Close()
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	synced := recordSyncs(t)
	created, err := b.CreateBatch(context.Background(), []blob.NewBlob{{Name: "xorbs/cd/loose", Data: small}})
	if err != nil || created[0] {
		t.Fatalf("CreateBatch of a stored loose blob: %v, %v", created, err)
	}
	if got, want := synced(), filepath.Join(root, "xorbs", "cd"); !slices.Contains(got, want) {
		t.Errorf("CreateBatch reported a loose blob stored without syncing %s (synced %q)", want, got)
	}
}

// A store's first pack makes packs/ itself durable in the store's root, not only the pack's entry.
func TestFirstPackMakesPacksDirectoryDurable(t *testing.T) {
	root := t.TempDir()
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.packs == nil {
		t.Skip("no packs on this platform")
	}
	synced := recordSyncs(t)
	if _, err := b.Create(context.Background(), "xorbs/ab/small", bytes.NewReader([]byte("small"))); err != nil {
		t.Fatal(err)
	}
	if got := synced(); !slices.Contains(got, root) {
		t.Errorf("the first pack did not sync the store's root, which holds packs/ (synced %q)", got)
	}
}

// A new store's own directory is on the path of every blob in it: New makes its entry durable, and
// those of the parents it made for it (a local remote's first push makes remote.git/xet), not
// only the entries below the store's root.
func TestNewStoreDirectoryIsDurable(t *testing.T) {
	parent := t.TempDir()
	synced := recordSyncs(t)
	root := filepath.Join(parent, "remote.git", "xet")
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, packMaxBlob+1)
	if created, err := b.Create(context.Background(), "xorbs/ab/first", bytes.NewReader(big)); err != nil || !created {
		t.Fatalf("Create: %v, %v", created, err)
	}
	got := synced()
	for _, want := range []string{parent, filepath.Join(parent, "remote.git")} {
		if !slices.Contains(got, want) {
			t.Errorf("a blob of a new store is reported stored, and %s, which holds a directory on its path, was not synced (synced %q)", want, got)
		}
	}
	// A store opened again syncs nothing of what it found.
	synced()
	if _, err := New(root, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := synced(); len(got) != 0 {
		t.Errorf("opening an existing store synced %q", got)
	}
}

// A damaged blob moved aside is kept for inspection: its new entry in quarantine/ and
// quarantine/'s own entry in the root are made durable with the removal of the old one, or a power
// loss could lose the only copy of what fsck found.
func TestQuarantineIsDurable(t *testing.T) {
	root := t.TempDir()
	b, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, packMaxBlob+1)
	if _, err := b.Create(context.Background(), "xorbs/ab/damaged", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	synced := recordSyncs(t)
	if err := b.Quarantine(context.Background(), "xorbs/ab/damaged"); err != nil {
		t.Fatal(err)
	}
	got := synced()
	for _, want := range []string{filepath.Join(root, "quarantine"), root, filepath.Join(root, "xorbs", "ab")} {
		if !slices.Contains(got, want) {
			t.Errorf("Quarantine did not sync %s (synced %q)", want, got)
		}
	}
}
