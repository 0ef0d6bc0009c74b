// Command shardcost sends issue 41 item 5's shard to a running xet-server (open mode, loopback): it
// uploads a xorb of 8192 chunks of 128 KiB of zeros (1 GiB raw in about 4 MB), then one shard of one
// file naming all its chunks -terms times over (4096: 2^25 chunk references, 4 TiB of content, in
// about 390 KB) with a wrong SHA-256, and prints the shard's answer and how long it took. The shard
// is built once and kept in -shard (its file hash is a merkle tree over every reference: long to
// compute). test/shardcost.sh runs it against two builds and reads the server's CPU time around it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func main() {
	url := flag.String("url", "", "the server's base URL")
	file := flag.String("shard", "item5.shard", "where the shard is kept between runs")
	terms := flag.Int("terms", 4096, "how many times the file names the whole xorb")
	timeout := flag.Duration("timeout", 60*time.Second, "how long to wait for the shard's answer")
	flag.Parse()
	if err := run(*url, *file, *terms, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "shardcost:", err)
		os.Exit(1)
	}
}

func run(url, file string, terms int, timeout time.Duration) error {
	x := testutil.ZerosXorb(xorb.MaxChunks)
	body, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		body = (&shard.Shard{Version: shard.HeaderVersion, Files: []shard.File{testutil.RepeatingFile(x, terms, [32]byte{1})}}).AppendUpload(nil)
		err = os.WriteFile(file, body, 0o644)
	}
	if err != nil {
		return err
	}
	tok, err := token(url)
	if err != nil {
		return err
	}
	if code, msg, _ := post(url+"/v1/xorbs/default/"+x.Hash.String(), tok, x.Body, 10*time.Minute); code != 200 {
		return fmt.Errorf("xorb upload: %d %s", code, msg)
	}
	fmt.Println("xorb stored")
	fmt.Println("sending") // the script reads the server's CPU time here
	start := time.Now()
	code, msg, err := post(url+"/v1/shards", tok, body, timeout)
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		fmt.Printf("shard of %d bytes: no answer after %v (%v)\n", len(body), took, err)
		return nil
	}
	fmt.Printf("shard of %d bytes: %d in %v: %s\n", len(body), code, took, strings.TrimSpace(msg))
	return nil
}

// token is a write token of repository org/item5 from the batch API of an open server.
func token(url string) (string, error) {
	req, _ := json.Marshal(lfsbatch.Request{Operation: "upload", Transfers: []string{"xet"},
		Objects: []lfsbatch.Object{{OID: strings.Repeat("01", 32), Size: 1}}})
	res, err := http.Post(url+"/org/item5.git/info/lfs/objects/batch", "application/vnd.git-lfs+json", bytes.NewReader(req))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out lfsbatch.Response
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || len(out.Objects) != 1 {
		return "", fmt.Errorf("batch: %d %v", res.StatusCode, err)
	}
	for _, a := range out.Objects[0].Actions {
		if t := a.Header[lfsbatch.HeaderAccessToken]; t != "" {
			return t, nil
		}
	}
	return "", errors.New("batch: no xet action")
}

func post(url, tok string, body []byte, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(b), nil
}
