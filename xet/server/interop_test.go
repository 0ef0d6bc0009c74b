package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// casClient builds the project's CAS HTTP client from a batch action, the way the agent does:
// endpoint, token and expiry from the X-Xet-* headers, refresh through the action's href with the
// user's credentials.
func casClient(t *testing.T, a *lfsbatch.Action, user, pw string) *cas.HTTP {
	t.Helper()
	exp, err := strconv.ParseInt(a.Header[lfsbatch.HeaderTokenExpiration], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(ctx context.Context) (casapi.Token, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", a.Href, nil)
		req.SetBasicAuth(user, pw)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return casapi.Token{}, err
		}
		defer res.Body.Close()
		var tok casapi.Token
		err = decodeJSONReader(res, &tok)
		return tok, err
	}
	return cas.NewHTTP(cas.HTTPOptions{
		Endpoint:  a.Header[lfsbatch.HeaderCasURL],
		Token:     cas.NewRefreshingToken(a.Header[lfsbatch.HeaderAccessToken], time.Unix(exp, 0), refresh),
		SessionID: a.Header[lfsbatch.HeaderSessionID],
		Retry:     retry.Policy{Attempts: 1},
	})
}

// The project's own Xet client (xet/upload + xet/download over xet/cas's HTTP client) round-trips a
// file through the server with the "xet" transfer: batch, token, xorbs, shard, plan, signed ranges.
func TestXetClientRoundTrip(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Users = mustUsers(t, servertest.UserLine("alice", alicePW, "")) })
	ctx := t.Context()
	data := vectors.SplitMix(3_000_000, 11)
	sum := sha256.Sum256(data)
	obj := lfsbatch.Object{OID: hex.EncodeToString(sum[:]), Size: int64(len(data))}

	_, br := e.batch("org/repo", batchBody("upload", []string{"basic", "xet"}, obj), servertest.Basic("alice", alicePW)...)
	up := br.Objects[0].Actions["upload"]
	if br.Transfer != "xet" || up == nil {
		t.Fatalf("upload batch %+v", br)
	}
	sess := upload.NewSession(upload.Config{CAS: casClient(t, up, "alice", alicePW), GlobalDedupe: true})
	res, err := sess.Upload(ctx, bytes.NewReader(data), &sum, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Finish(ctx); err != nil {
		t.Fatalf("finish: %v\n%s", err, e.logs.String())
	}
	_, br = e.batch("org/repo", batchBody("upload", []string{"xet"}, obj), servertest.Basic("alice", alicePW)...)
	if br.Objects[0].Actions != nil {
		t.Fatalf("uploaded object still gets actions: %+v", br.Objects[0])
	}

	_, br = e.batch("org/repo", batchBody("download", []string{"basic", "xet"}, obj), servertest.Basic("alice", alicePW)...)
	dl := br.Objects[0].Actions["download"]
	if dl == nil || dl.Header[lfsbatch.HeaderXetHash] != res.FileHash.String() {
		t.Fatalf("download action %+v (file %s)", dl, res.FileHash)
	}
	file, err := hash.Parse(dl.Header[lfsbatch.HeaderXetHash])
	if err != nil {
		t.Fatal(err)
	}
	client := casClient(t, dl, "alice", alicePW)
	out := filepath.Join(t.TempDir(), "out.bin")
	if err := download.Download(ctx, download.Config{CAS: client}, download.Request{File: file, SHA256: &sum, Size: int64(len(data)), Path: out}); err != nil {
		t.Fatalf("download: %v", err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}
	part := filepath.Join(t.TempDir(), "part.bin")
	rng := &casapi.ByteRange{Start: 1_000_000, End: 2_345_678}
	if err := download.Download(ctx, download.Config{CAS: client}, download.Request{File: file, Range: rng, Size: -1, Path: part}); err != nil {
		t.Fatalf("range download: %v", err)
	}
	if got, _ := os.ReadFile(part); !bytes.Equal(got, data[rng.Start:rng.End+1]) {
		t.Fatal("downloaded range differs")
	}
	// The plain bridge serves the same object.
	if r := e.do("GET", "/org/repo.git/info/lfs/objects/"+obj.OID, nil, servertest.Basic("alice", alicePW)...); r.status != 200 || !bytes.Equal(r.body, data) {
		t.Fatalf("bridge: %d", r.status)
	}
}
