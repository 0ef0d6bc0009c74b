package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// workload is a set of overlapping xorbs and shards over the reference chunks.
type workload struct {
	r      *refData
	xorbs  []*testXorb
	files  []*testFile
	shards [][]byte
}

func newWorkload(t testing.TB) *workload {
	r := loadRef(t)
	w := &workload{r: r}
	xa, xb, xc, xall := r.xorb(0, 1, 2, 3, 4), r.xorb(5, 6, 7, 8, 9), r.xorb(2, 3, 4, 5, 6, 7), r.xorb(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	w.xorbs = []*testXorb{xa, xb, xc, xall}
	f1 := r.file(seg{xall, 0, 10})
	f2 := r.file(seg{xa, 0, 5}, seg{xb, 0, 5})
	f3 := r.file(seg{xc, 1, 6}, seg{xa, 0, 2})
	f4 := r.file(seg{xb, 2, 3})
	f5 := r.file(seg{xc, 0, 6}, seg{xall, 8, 10}, seg{xa, 4, 5})
	w.files = []*testFile{f1, f2, f3, f4, f5}
	w.shards = [][]byte{
		r.shardBytes([]*testFile{f1}, xall),
		r.shardBytes([]*testFile{f2, f4}, xa, xb),
		r.shardBytes([]*testFile{f3, f1}, xc),
		r.shardBytes([]*testFile{f5, f2}),
		r.shardBytes([]*testFile{f4}),
	}
	return w
}

// shardXorbs returns the xorbs shard i needs.
func (w *workload) shardXorbs(i int) []*testXorb {
	x := w.xorbs
	return [][]*testXorb{{x[3]}, {x[0], x[1]}, {x[2], x[3], x[0]}, {x[0], x[1], x[2], x[3]}, {x[1]}}[i]
}

// run puts everything in a random order: for each shard, its xorbs, then the shard. It returns how
// many puts of each xorb reported inserted=true.
func (w *workload) run(ctx context.Context, s *Store, rng *rand.Rand) ([]int, error) {
	inserted := make([]int, len(w.xorbs))
	for _, i := range rng.Perm(len(w.shards)) {
		for _, x := range w.shardXorbs(i) {
			ins, err := s.PutXorb(ctx, x.hash, bytes.NewReader(x.body))
			if err != nil {
				return nil, err
			}
			if ins {
				for k := range w.xorbs {
					if w.xorbs[k] == x {
						inserted[k]++
					}
				}
			}
		}
		if _, err := s.PutShard(ctx, "org/repo", w.shards[i]); err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return inserted, nil
}

// verify checks that every file of the workload reads back and is found by SHA-256.
func (w *workload) verify(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for _, f := range w.files {
		got, err := readFile(ctx, s, f.hash, nil)
		if err != nil || !bytes.Equal(got, f.content) {
			t.Errorf("file %s: %d bytes, %v", f.hash, len(got), err)
		}
		if h, n, err := s.LookupSHA256(ctx, "org/repo", hash.FromSHA256(f.sha)); err != nil || h != f.hash || n != uint64(len(f.content)) {
			t.Errorf("LookupSHA256 for %s: %s %d %v", f.hash, h, n, err)
		}
	}
}

func TestConcurrentPuts(t *testing.T) {
	w := newWorkload(t)
	s := openStore(t)
	const workers = 8
	var wg sync.WaitGroup
	counts := make([][]int, workers)
	errs := make([]error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[g], errs[g] = w.run(context.Background(), s, rand.New(rand.NewPCG(uint64(g), 1)))
		}()
	}
	wg.Wait()
	total := make([]int, len(w.xorbs))
	for g := range workers {
		if errs[g] != nil {
			t.Fatalf("worker %d: %v", g, errs[g])
		}
		for k, n := range counts[g] {
			total[k] += n
		}
	}
	for k, n := range total {
		if n != 1 {
			t.Errorf("xorb %d reported inserted %d times, want once", k, n)
		}
	}
	w.verify(t, s)
}

// TestHelperProcess is a writer process of TestCrossProcess (it does nothing in a normal run).
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("XET_STORE_HELPER_DIR")
	if dir == "" {
		return
	}
	seed, _ := strconv.ParseUint(os.Getenv("XET_STORE_HELPER_SEED"), 10, 64)
	w := newWorkload(t)
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	counts := make([]int, len(w.xorbs))
	for round := 0; round < 3; round++ {
		c, err := w.run(context.Background(), s, rng)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		for k := range c {
			counts[k] += c[k]
		}
	}
	fmt.Printf("INSERTED %v\n", strings.Trim(fmt.Sprint(counts), "[]"))
	os.Exit(0)
}

// TestCrossProcess runs several writer processes (this test binary, re-executed) on one directory at
// once; afterwards every file reconstructs and each xorb was reported inserted at least once (and at
// most once per process: processes racing on one name may each write it, see Backend.Create).
func TestCrossProcess(t *testing.T) {
	w := newWorkload(t)
	dir := t.TempDir()
	const procs = 6
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "XET_STORE_HELPER_DIR="+dir, "XET_STORE_HELPER_SEED="+strconv.Itoa(i))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout = outs[i]
		cmd.Stderr = outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	total := make([]int, len(w.xorbs))
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", i, err, outs[i])
		}
		line := ""
		for _, l := range strings.Split(outs[i].String(), "\n") {
			if rest, ok := strings.CutPrefix(l, "INSERTED "); ok {
				line = rest
			}
		}
		fields := strings.Fields(line)
		if len(fields) != len(w.xorbs) {
			t.Fatalf("writer %d output: %q", i, outs[i])
		}
		for k, f := range fields {
			n, _ := strconv.Atoi(f)
			total[k] += n
		}
	}
	for k, n := range total {
		if n < 1 || n > procs {
			t.Errorf("xorb %d reported inserted %d times across %d processes, want 1 to %d", k, n, procs, procs)
		}
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.verify(t, s)
	if tmp, _ := os.ReadDir(dir + "/tmp"); len(tmp) != 0 {
		t.Errorf("%d temporary files left behind", len(tmp))
	}
}
