package localshards

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

const (
	helperEnv     = "LOCALSHARDS_TEST_HELPER"
	helperShards  = 12
	helperChunks  = 300
	helperTimeout = 20 * time.Second
)

func helperSeed(id, i int) uint64 { return uint64(7000 + id*100 + i) }

// TestTwoProcesses runs two copies of this test binary on one cache directory. Each adds its own
// shards one by one while looking up the other's, and must see all of the other's shards (through
// the directory refresh) with no error and no wrong answer.
func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for id := 0; id < 2; id++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=1", "LOCALSHARDS_DIR="+dir, "LOCALSHARDS_ID="+strconv.Itoa(id))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v\n%s", i, err, outs[i])
		}
	}
	// Both sets are on disk and readable by a third cache.
	c := openTest(t, dir, Options{Now: newClock(t0).Now})
	for id := 0; id < 2; id++ {
		for i := 0; i < helperShards; i++ {
			s := testShard(helperSeed(id, i), 1, helperChunks)
			mustFind(t, c, s.Xorbs[0].Chunks[helperChunks/2].Hash, s.Xorbs[0].Hash, helperChunks/2)
		}
	}
}

// TestHelperProcess is the body of a TestTwoProcesses child; it does nothing in a normal run.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	id, _ := strconv.Atoi(os.Getenv("LOCALSHARDS_ID"))
	if err := runHelper(os.Getenv("LOCALSHARDS_DIR"), id); err != nil {
		fmt.Fprintf(os.Stderr, "helper %d: %v\n", id, err)
		os.Exit(1)
	}
}

func runHelper(dir string, id int) error {
	c, err := Open(dir, Options{Now: newClock(t0).Now, RefreshInterval: time.Millisecond})
	if err != nil {
		return err
	}
	defer c.Close()
	other := 1 - id
	theirs := make([]*shard.Shard, helperShards)
	for i := range theirs {
		theirs[i] = testShard(helperSeed(other, i), 1, helperChunks)
	}
	seen := make([]bool, helperShards)
	nseen := 0
	// look records the sibling shards whose first and last chunks the cache now finds.
	look := func() error {
		for i := 0; i < helperShards; i++ {
			if seen[i] {
				continue
			}
			s := theirs[i]
			for _, j := range []int{0, helperChunks - 1} {
				m, ok, err := c.Lookup(s.Xorbs[0].Chunks[j].Hash)
				if err != nil {
					return fmt.Errorf("Lookup: %w", err)
				}
				if !ok {
					break
				}
				if m.Xorb != s.Xorbs[0].Hash || int(m.Index) != j || m.Chunks[j].Hash != s.Xorbs[0].Chunks[j].Hash {
					return fmt.Errorf("wrong answer for sibling shard %d chunk %d: xorb %s index %d", i, j, m.Xorb, m.Index)
				}
				if j == helperChunks-1 {
					seen[i] = true
					nseen++
				}
			}
		}
		return nil
	}
	for added := 0; added < helperShards; added++ { // looking between the adds: reads while the sibling writes
		if err := c.AddOwn(testShard(helperSeed(id, added), 1, helperChunks)); err != nil {
			return fmt.Errorf("AddOwn %d: %w", added, err)
		}
		if err := look(); err != nil {
			return err
		}
	}
	if !testutil.Eventually(helperTimeout, func() bool { err = look(); return err != nil || nseen == helperShards }) {
		return fmt.Errorf("saw %d of %d sibling shards after %v", nseen, helperShards, helperTimeout)
	}
	return err
}
