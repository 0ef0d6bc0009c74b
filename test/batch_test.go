package test

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// xetServer is xet-server's handler on a loopback port with its store in a temp dir.
type xetServer struct {
	url  string // base URL
	data string // the store directory
	srv  *httptest.Server
}

// startServer starts xet-server; usersFile text ("" = open mode) lists the users.
func startServer(t *testing.T, usersText string, mods ...func(*server.Config)) *xetServer {
	t.Helper()
	return startServerAt(t, t.TempDir(), usersText, mods...)
}

// startServerAt starts a server on the store in data (a restart keeps its data).
func startServerAt(t *testing.T, data, usersText string, mods ...func(*server.Config)) *xetServer {
	t.Helper()
	hs := httptest.NewServer(serverHandler(t, data, usersText, mods...))
	t.Cleanup(hs.Close)
	return &xetServer{url: hs.URL, data: data, srv: hs}
}

// serverHandler is xet-server's handler on the store in data, as startServerAt serves it.
func serverHandler(t *testing.T, data, usersText string, mods ...func(*server.Config)) http.Handler {
	t.Helper()
	st, err := store.Open(data, store.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		Store:  st,
		Ingest: &server.UploadIngester{Store: st, Policy: xorb.PolicyAuto, Log: zerolog.Nop()},
		Secret: secret,
		Log:    zerolog.Nop(),
	}
	if usersText != "" {
		p := filepath.Join(t.TempDir(), "users")
		if err := os.WriteFile(p, []byte(usersText), 0o600); err != nil {
			t.Fatal(err)
		}
		u, err := server.LoadUsers(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Users = u
	}
	for _, m := range mods {
		m(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler()
}

// batchRepo makes a work tree whose committed .lfsconfig points at lfsURL, with a local bare
// remote for the git objects.
func batchRepo(t *testing.T, e *env, lfsURL string) (work, remote string) {
	t.Helper()
	return e.localRepo(repoOpts{lfsURL: lfsURL})
}

// Against xet-server, pushes, clones, pulls and fetches go through the xet transfer (the agent in
// batch mode), with 8 agent processes sharing the shard cache.
func TestBatchPushClonePullFetch(t *testing.T) {
	e := newEnv(t)
	e.install()
	e.git("", "config", "--global", "lfs.concurrenttransfers", "8")
	s := startServer(t, "")
	work, remote := batchRepo(t, e, s.url+"/team/repo.git/info/lfs")

	writeFile(t, filepath.Join(work, "big.bin"), testutil.RandomBytes(20<<20, 11))
	writeFile(t, filepath.Join(work, "copy.bin"), testutil.RandomBytes(20<<20, 11)) // same bytes, second path
	for i := 0; i < 40; i++ {
		writeFile(t, filepath.Join(work, "small", fmt.Sprintf("s%02d.bin", i)), testutil.RandomBytes(5000+i*1000, uint64(200+i)))
	}
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "v1")
	e.git(work, "push", "-q", "origin", "main")
	uploads := e.logLines(`"op":"upload"`, `"mode":"batch"`, "transfer complete")
	if len(uploads) != 41 { // big.bin and copy.bin are one object
		t.Errorf("%d uploads through the xet transfer, want 41", len(uploads))
	}
	pids := map[string]bool{}
	for _, l := range e.logLines(`"message":"init"`) {
		if i := strings.Index(l, `"pid":`); i >= 0 {
			pids[strings.SplitN(l[i:], ",", 2)[0]] = true
		}
	}
	if len(pids) < 8 {
		t.Errorf("%d agent processes, want 8 (lfs.concurrenttransfers)", len(pids))
	}
	cacheDir := filepath.Join(e.home, ".cache", "huggingface", "xet")
	if n := countFiles(t, cacheDir, ".mdb") + countFiles(t, cacheDir, ".singles"); n == 0 {
		t.Errorf("no shard or singles files in the shared shard cache %s", cacheDir)
	}

	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	sameTree(t, work, clone)
	if n := len(e.logLines(`"op":"download"`, `"mode":"batch"`, "transfer complete")); n != 41 {
		t.Errorf("%d downloads through the xet transfer, want 41", n)
	}

	// v2 pushed from work, pulled into the clone.
	big := testutil.RandomBytes(20<<20, 11)
	copy(big[5<<20:], testutil.RandomBytes(200<<10, 12))
	writeFile(t, filepath.Join(work, "big.bin"), big)
	e.git(work, "commit", "-q", "-am", "v2")
	before := dirSize(t, s.data)
	e.git(work, "push", "-q", "origin", "main")
	growth := dirSize(t, s.data) - before
	t.Logf("server store grew by %d bytes for a 200 KiB edit of a 20 MiB file", growth)
	if growth > 2<<20 {
		t.Errorf("server store grew by %d bytes for a 200 KiB edit, want deduplication (< 2 MiB)", growth)
	}
	e.git(clone, "pull", "-q", "origin", "main")
	sameTree(t, work, clone)

	// A fresh clone without smudge, then git lfs fetch --all and checkout.
	bare := filepath.Join(e.home, "fetchall")
	e.git("", "-c", "filter.lfs.smudge=git-lfs smudge --skip -- %f", "-c", "filter.lfs.process=git-lfs filter-process --skip",
		"clone", "-q", remote, bare)
	e.git(bare, "lfs", "fetch", "--all", "origin")
	if n := checkLFSObjects(t, bare); n != 42 {
		t.Errorf("git lfs fetch --all got %d objects, want 42 (41 + the new big.bin)", n)
	}
	e.git(bare, "lfs", "checkout")
	sameTree(t, work, bare)
}

func countFiles(t *testing.T, dir, suffix string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, suffix) {
			n++
		}
		return nil
	})
	return n
}
