package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Files written the way huggingface.js writes them (a xorb cut at 64 MiB serialized holding 88 MiB
// of compressible data, a shard with a footer and zero lookup offsets), uploaded with our HTTP
// client to xet-server, are cloned by our agent from a repository whose pointers name them, byte
// for byte.
func TestCloneFilesAHuggingFaceJSClientWrote(t *testing.T) {
	e := newEnv(t)
	e.install()
	s := startServer(t, "")
	ctx := context.Background()

	var rows [][]byte
	for i := 0; i < 704; i++ { // 704 x 128 KiB = 88 MiB raw
		rows = append(rows, bytes.Repeat([]byte(fmt.Sprintf("%08d,%.6f,layer.%d.weight\n", i, float32(i%97)/1e4, i%12)), xorb.MaxChunkRaw/30+1)[:xorb.MaxChunkRaw])
	}
	of := testutil.NewOneXorbFile(rows)
	body, content, xh, sum := of.Body, of.Content, of.Xorb, of.SHA256
	hf, err := testutil.HFJSShard(of.Shard, map[string]uint32{xh.String(): uint32(len(body))}, uint64(time.Now().Unix()))
	if err != nil {
		t.Fatal(err)
	}

	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: s.url, Token: cas.NewRefreshingToken(servertest.RouteToken(t, s.url+"/api/models/team/repo/xet-write-token/main"), time.Time{}, nil)})
	if _, err := c.PutXorb(ctx, &xorb.Xorb{Hash: xh, Body: body}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutShard(ctx, hf); err != nil {
		t.Fatal(err)
	}

	work, remote := batchRepo(t, e, s.url+"/team/repo.git/info/lfs")
	pointer := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%x\nsize %d\n", sum, len(content))
	writeFile(t, filepath.Join(work, "model.bin"), []byte(pointer))
	e.git(work, "add", ".")
	e.git(work, "commit", "-q", "-m", "pointer to a file huggingface.js uploaded")
	e.pushWithoutLFS(work)
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	if got, err := os.ReadFile(filepath.Join(clone, "model.bin")); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("cloned model.bin: %d bytes (%v), want the %d bytes huggingface.js stored", len(got), err, len(content))
	}
	if n := len(e.logLines(`"op":"download"`, `"mode":"batch"`, "transfer complete")); n != 1 {
		t.Errorf("%d downloads through the xet transfer, want 1", n)
	}
}
