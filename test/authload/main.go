// Command authload is the password guesser of test/authload.sh: it sends LFS batch requests with a
// wrong HTTP Basic password to a server at a fixed rate, from one source address, for a while, and
// prints how many it sent and how they were answered. Each request starts on its tick whatever the
// server's pace (at most -inflight at once; a tick that finds none free is counted as missed), so a
// slow server gets the offered rate, not the rate it answers. With -names every request names a
// new user (names the server does not know). Loopback only.
//
//	authload -url http://127.0.0.1:8080/team/a.git/info/lfs/objects/batch -user alice -rate 200 -for 10s -from 127.0.0.2
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const body = `{"operation":"download","transfers":["basic"],"objects":[{"oid":"` +
	"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd" + `","size":1}]}`

// tally counts the answers by status ("none": no answer, e.g. still in flight at the end).
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (t *tally) add(k string) {
	t.mu.Lock()
	t.n[k]++
	t.mu.Unlock()
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for k := range t.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, t.n[k]))
	}
	return strings.Join(parts, " ")
}

func main() {
	url := flag.String("url", "", "the batch URL")
	user := flag.String("user", "alice", "the user whose password is guessed")
	names := flag.Bool("names", false, "a new, unknown user name for every request instead of -user")
	rate := flag.Int("rate", 200, "requests per second")
	dur := flag.Duration("for", 10*time.Second, "how long to send")
	from := flag.String("from", "127.0.0.2", "source address of the connections")
	inflight := flag.Int("inflight", 512, "requests in flight at most")
	flag.Parse()
	if *url == "" || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "authload: -url and a positive -rate are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*from)}, Timeout: 10 * time.Second}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: *inflight}}
	answers := &tally{n: map[string]int{}}
	var sent, missed atomic.Int64
	slots := make(chan struct{}, *inflight)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	defer tick.Stop()
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			el := time.Since(start).Seconds()
			fmt.Printf("sent %d in %.1f s (%.0f/s), missed ticks %d; answers: %s\n", sent.Load(), el,
				float64(sent.Load())/el, missed.Load(), answers)
			return
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			missed.Add(1)
			continue
		}
		name := *user
		if *names {
			name = fmt.Sprintf("nobody%d", i)
		}
		sent.Add(1)
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			answers.add(guess(ctx, client, *url, name, fmt.Sprintf("guess-%d", i)))
		}()
	}
}

// guess sends one request and returns its status, or "none".
func guess(ctx context.Context, c *http.Client, url, user, pw string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "none"
	}
	req.SetBasicAuth(user, pw)
	req.Header.Set("Content-Type", "application/vnd.git-lfs+json")
	res, err := c.Do(req)
	if err != nil {
		return "none"
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return fmt.Sprint(res.StatusCode)
}
