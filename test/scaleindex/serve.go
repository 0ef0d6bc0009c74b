package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// serve starts the server on data, times its start, runs the queries and stops it.
func serve(bin, data, samplesPath string, n int) error {
	chunks, files, err := readSamples(samplesPath)
	if err != nil {
		return err
	}
	if len(chunks) == 0 || len(files) == 0 {
		return errors.New("serve: no samples")
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	var log bytes.Buffer
	cmd := exec.Command(bin, "--listen", addr, "--data", data, "--log-level", "error", "--ui=false")
	cmd.Stdout, cmd.Stderr = &log, &log
	c := &http.Client{Timeout: 30 * time.Second}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer stop(cmd)
	probe := base + "/v1/chunks/default-merkledb/" + chunks[0].String()
	for {
		if res, err := c.Get(probe); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("serve: the first query answered %s", res.Status)
			}
			break
		}
		if time.Since(t0) > 60*time.Second {
			return fmt.Errorf("serve: xet-server did not answer within 60 s:\n%s", log.String())
		}
		time.Sleep(2 * time.Millisecond) // polling for the server's first answer: the figure's resolution
	}
	fmt.Printf("start_s %.3f\n", time.Since(t0).Seconds())
	misses := make([]hash.Hash, len(chunks))
	for i := range misses {
		rand.Read(misses[i][:])
	}
	for _, q := range []struct {
		name, route string
		hashes      []hash.Hash
		want        int
	}{
		{"query", "/v1/chunks/default-merkledb/", chunks, http.StatusOK},
		{"miss", "/v1/chunks/default-merkledb/", misses, http.StatusNotFound},
		{"recon", "/v2/reconstructions/", files, http.StatusOK},
		// The baseline: a route that reads nothing, so its tail is the machine's (scheduling,
		// other load), not the index's.
		{"health", "/healthz", nil, http.StatusOK},
	} {
		lat, err := timeQueries(c, base+q.route, q.hashes, q.want, n)
		if err != nil {
			return fmt.Errorf("serve: %s: %w", q.name, err)
		}
		fmt.Printf("%s_p50_ms %.3f\n%s_p99_ms %.3f\n", q.name, pct(lat, 50), q.name, pct(lat, 99))
	}
	if hwm, err := peakRSS(cmd.Process.Pid); err == nil {
		fmt.Printf("server_peak_rss_mb %.1f\n", hwm)
	}
	return nil
}

// timeQueries asks GET base+hash for n hashes (cycling through hs, shuffled; base alone when hs
// is empty), one at a time, and returns each answer's latency in ms, whole body read.
func timeQueries(c *http.Client, base string, hs []hash.Hash, want, n int) ([]float64, error) {
	order := slices.Clone(hs)
	shuffle(order)
	lat := make([]float64, 0, n)
	for i := range n {
		url := base
		if len(order) > 0 {
			url += order[i%len(order)].String()
		}
		t := time.Now()
		res, err := c.Get(url)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		lat = append(lat, float64(time.Since(t).Microseconds())/1000)
		if err != nil {
			return nil, err
		}
		if res.StatusCode != want {
			return nil, fmt.Errorf("%s: %s, want %d", url, res.Status, want)
		}
	}
	return lat, nil
}

func shuffle(hs []hash.Hash) {
	var b [8]byte
	for i := len(hs) - 1; i > 0; i-- {
		rand.Read(b[:])
		j := int((uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24) % uint64(i+1))
		hs[i], hs[j] = hs[j], hs[i]
	}
}

// pct is the p-th percentile of xs (nearest rank).
func pct(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, i-1)]
}

// peakRSS is a process's VmHWM in MB.
func peakRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(l, "VmHWM: %f kB", &kb); err == nil {
			return kb / 1024, nil
		}
	}
	return 0, errors.New("no VmHWM")
}

// stop ends the server with SIGTERM and waits for it; SIGKILL after 10 s.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func readSamples(path string) (chunks, files []hash.Hash, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, s, ok := strings.Cut(sc.Text(), " ")
		h, err := hash.Parse(s)
		if !ok || err != nil {
			return nil, nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		if kind == "c" {
			chunks = append(chunks, h)
		} else {
			files = append(files, h)
		}
	}
	return chunks, files, sc.Err()
}
