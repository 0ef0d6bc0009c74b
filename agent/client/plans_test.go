package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// planRepo makes a work tree whose origin is remoteURL; it returns its directory.
func planRepo(t *testing.T, remoteURL string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git missing")
		}
		t.Skip("git missing")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	work := filepath.Join(t.TempDir(), "work")
	for _, args := range [][]string{{"init", "-q", work}, {"-C", work, "remote", "add", "origin", remoteURL}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return work
}

func oids(n int) []lfsbatch.Object {
	var out []lfsbatch.Object
	for i := range n {
		out = append(out, lfsbatch.Object{OID: fmt.Sprintf("%064x", i+1), Size: int64(100 + i)})
	}
	return out
}

// Against an LFS server: one download batch per 100 objects offering xet; an object the server
// answers with a plain href is a plain LFS object, a 404 a missing one, another error a failed one
// carrying the server's message.
func TestPlansLocateAtAnLFSServer(t *testing.T) {
	var batches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req lfsbatch.Request
		if r.URL.Path != "/org/m.git/info/lfs/objects/batch" || json.NewDecoder(r.Body).Decode(&req) != nil ||
			req.Operation != "download" || !slices.Contains(req.Transfers, "xet") || len(req.Objects) > 100 {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		batches.Add(1)
		resp := lfsbatch.Response{Transfer: "basic"}
		for _, o := range req.Objects {
			res := lfsbatch.Result{OID: o.OID, Size: o.Size}
			switch o.OID[63] {
			case '1':
				res.Error = &lfsbatch.ObjectError{Code: 404, Message: "Object does not exist"}
			case '2':
				res.Error = &lfsbatch.ObjectError{Code: 500, Message: "storage is down"}
			default:
				res.Actions = map[string]*lfsbatch.Action{"download": {Href: "https://cdn.example.test/objects/" + o.OID}}
			}
			resp.Objects = append(resp.Objects, res)
		}
		w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	work := planRepo(t, srv.URL+"/org/m.git")
	p, err := NewPlans(context.Background(), Options{Git: Git{Dir: work}, Log: zerolog.Nop(), HTTPClient: srv.Client()}, "origin")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	objs := oids(150)
	got, err := p.Locate(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if n := batches.Load(); n != 2 {
		t.Errorf("%d batch requests for 150 objects, want 2", n)
	}
	for i, l := range got {
		want := PlainLFS
		switch objs[i].OID[63] {
		case '1':
			want = Missing
		case '2':
			want = Failed
		}
		if l.State != want || (want == Failed && (l.Err == nil || !strings.Contains(l.Err.Error(), "storage is down"))) {
			t.Fatalf("object %d: %v (%v), want %v", i, l.State, l.Err, want)
		}
	}
}

// A local remote: an object in neither the Xet store nor the remote's LFS objects is missing; one
// among its plain LFS objects is a plain LFS object.
func TestPlansLocateInALocalRemote(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "remote.git")
	if err := os.MkdirAll(remote, 0o755); err != nil {
		t.Fatal(err)
	}
	work := planRepo(t, remote)
	if out, err := exec.Command("git", "init", "-q", "--bare", remote).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	objs := oids(2)
	plain := filepath.Join(remote, "lfs", "objects", objs[1].OID[:2], objs[1].OID[2:4], objs[1].OID)
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, make([]byte, objs[1].Size), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlans(context.Background(), Options{Git: Git{Dir: work}, Log: zerolog.Nop()}, "origin")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := p.Locate(context.Background(), objs)
	if err != nil || got[0].State != Missing || got[1].State != PlainLFS {
		t.Errorf("Locate = %+v, %v; want missing, then a plain LFS object", got, err)
	}
	if _, err := os.Stat(filepath.Join(remote, "xet")); err == nil {
		t.Error("Locate made a Xet store in the remote")
	}
}
