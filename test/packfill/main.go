// Command packfill fills an embedded store's directory with small blobs through the fs backend's
// own pack writer, and times what a process pays to open such a store and look blobs up in it.
// It is test/packidx.sh's helper.
//
//	packfill fill DIR N          N blobs of 64-256 bytes under xorbs/, files/ and dedupe/ names
//	packfill open DIR NAME...    a fresh backend on DIR reads each NAME whole (a name not stored
//	                             is a miss, which reads what other processes added); prints the
//	                             microseconds from before the backend's creation to the last read
//	packfill cpu FILE CMD ARG... runs CMD on this process's stdin, stdout and stderr and appends its
//	                             CPU time (user+sys, microseconds) to FILE: the agent's wrapper
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "packfill:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 3 && args[0] == "fill":
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 {
			return fmt.Errorf("fill: %q is not a count of blobs", args[2])
		}
		return fill(args[1], n)
	case len(args) >= 3 && args[0] == "open":
		return open(args[1], args[2:])
	case len(args) >= 3 && args[0] == "cpu":
		return cpu(args[1], args[2], args[3:])
	}
	return errors.New("usage: packfill {fill DIR N | open DIR NAME... | cpu FILE CMD ARG...}")
}

// fill writes n blobs to dir in batches of 4096, one fsync each, as a server taking many pushes
// would; names and bytes come from a fixed seed.
func fill(dir string, n int) error {
	be, err := fs.New(dir, fs.Options{})
	if err != nil {
		return err
	}
	defer be.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	kinds := []string{"xorbs", "files", "dedupe"}
	var h [32]byte
	for done := 0; done < n; {
		batch := make([]blob.NewBlob, 0, 4096)
		for ; len(batch) < cap(batch) && done < n; done++ {
			for i := 0; i < len(h); i += 8 {
				v := rnd.Uint64()
				for j := 0; j < 8; j++ {
					h[i+j] = byte(v >> (8 * j))
				}
			}
			x := hex.EncodeToString(h[:])
			data := make([]byte, 64+rnd.IntN(193))
			for i := range data {
				data[i] = byte(rnd.Uint32())
			}
			batch = append(batch, blob.NewBlob{Name: kinds[done%3] + "/" + x[:2] + "/" + x, Data: data})
		}
		if _, err := be.CreateBatch(context.Background(), batch); err != nil {
			return err
		}
	}
	return nil
}

func open(dir string, names []string) error {
	t0 := time.Now()
	be, err := fs.New(dir, fs.Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, name := range names {
		b, err := be.Open(ctx, name)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		buf := make([]byte, b.Size())
		if _, err := b.ReadAt(ctx, buf, 0); err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		b.Close()
	}
	fmt.Println(time.Since(t0).Microseconds())
	return nil
}

// cpu runs name with args as a child sharing this process's standard files, appends the child's CPU
// time to file, and exits with the child's status.
func cpu(file, name string, args []string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	runErr := cmd.Run()
	if cmd.ProcessState == nil {
		return runErr
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	_, err = fmt.Fprintln(f, used.Microseconds())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	os.Exit(cmd.ProcessState.ExitCode())
	return nil
}
