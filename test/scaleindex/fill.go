package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

const (
	filesPerShard = 1000
	chunksPerXorb = 1024 // a real xorb of 64 KiB chunks holds about as many
	chunkBytes    = 16   // a file index and a counter
	samplesKept   = 4000 // of each kind, about
)

// layout says how many indexed chunks each file gets: ENTRIES spread evenly over FILES.
type layout struct{ entries, files int64 }

// chunks returns how many chunks file i has (all indexed: its first and the mined ones).
func (l layout) chunks(i int64) int {
	extra := l.entries - l.files
	return 1 + int(extra*(i+1)/l.files-extra*i/l.files)
}

// samples collects every step-th chunk and file hash written, for the queries of serve.
type samples struct {
	mu                 sync.Mutex
	chunks, files      []hash.Hash
	chunkStep, fileStp int64
}

func fill(dir string, entries, files int64, samplesPath string) error {
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return err
	}
	l := layout{entries, files}
	sm := &samples{chunkStep: max(1, entries/samplesKept), fileStp: max(1, files/samplesKept)}
	t0 := time.Now()
	shards := (files + filesPerShard - 1) / filesPerShard
	next := make(chan int64)
	g, ctx := errgroup.WithContext(context.Background())
	g.Go(func() error {
		defer close(next)
		for k := int64(0); k < shards; k++ {
			select {
			case next <- k:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for k := range next {
				if err := putShard(ctx, st, l, k, sm); err != nil {
					return fmt.Errorf("shard %d: %w", k, err)
				}
			}
			return nil
		})
	}
	err = g.Wait()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("fill_s %.1f\n", time.Since(t0).Seconds())
	return writeSamples(samplesPath, sm)
}

// putShard builds and registers shard k: files [k*filesPerShard, …) of l, their chunks in xorbs
// of at most chunksPerXorb chunks, each file one term.
func putShard(ctx context.Context, st *store.Store, l layout, k int64, sm *samples) error {
	first, last := k*filesPerShard, min((k+1)*filesPerShard, l.files)
	sh := &shard.Shard{}
	pending := map[hash.Hash]*store.PendingXorb{}
	b := xorb.NewBuilder(xorb.PolicyNone)
	var hashes []hash.Hash // of the chunks in b
	var open []openFile    // files whose term is in b
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		x := b.Finish()
		p, err := store.PrepareBuiltXorb(x)
		if err != nil {
			return err
		}
		pending[x.Hash] = p
		sh.Xorbs = append(sh.Xorbs, shardXorb(x))
		for _, f := range open {
			file, err := f.file(x.Hash, hashes)
			if err != nil {
				return err
			}
			sh.Files = append(sh.Files, file)
			sm.addFile(f.index, file.Hash)
		}
		hashes, open = hashes[:0], open[:0]
		return nil
	}
	for i := first; i < last; i++ {
		n := l.chunks(i)
		if b.Len()+n > chunksPerXorb {
			if err := flush(); err != nil {
				return err
			}
		}
		f := openFile{index: i, start: b.Len(), sha: sha256.New()}
		b.StartFile()
		for c, data := range fileChunks(i, n) {
			h := hash.Chunk(data)
			if c > 0 && h.Mod(store.DedupeModulus) != 0 {
				return fmt.Errorf("file %d: mined chunk %d is not one the store indexes (hash %s)", i, c, h)
			}
			b.Add(data, h)
			hashes = append(hashes, h)
			f.sha.Write(data)
			f.raw = append(f.raw, hash.Entry{Hash: h, Size: uint64(len(data))})
			sm.addChunk(l.entryIndex(i)+int64(c), h)
		}
		open = append(open, f)
	}
	if err := flush(); err != nil {
		return err
	}
	sh.Sort()
	_, err := st.PutShardWithXorbs(ctx, "", sh.Marshal(), func(h hash.Hash) *store.PendingXorb { return pending[h] })
	return err
}

// entryIndex is the index of file i's first entry among all entries.
func (l layout) entryIndex(i int64) int64 {
	return i + (l.entries-l.files)*i/l.files
}

// openFile is a file being built: its chunks begin at chunk start of the xorb being built.
type openFile struct {
	index int64
	start int
	raw   []hash.Entry
	sha   interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
}

// file returns f's file block: one term, chunks [start, start+len(raw)) of xorb x.
func (f *openFile) file(x hash.Hash, hashes []hash.Hash) (shard.File, error) {
	end := f.start + len(f.raw)
	t := shard.Term{Xorb: x, UnpackedBytes: uint32(len(f.raw) * chunkBytes), ChunkStart: uint32(f.start), ChunkEnd: uint32(end)}
	return shard.UploadFile(hash.File(f.raw), []shard.Term{t}, []hash.Hash{hash.Verification(hashes[f.start:end])},
		[32]byte(f.sha.Sum(nil)))
}

// fileChunks returns file i's n chunks: the first is the file's index; each other one is mined,
// the file's index and the first counter from there on whose chunk hash the store indexes.
func fileChunks(i int64, n int) func(func(int, []byte) bool) {
	return func(yield func(int, []byte) bool) {
		data := make([]byte, chunkBytes)
		binary.LittleEndian.PutUint64(data, uint64(i))
		if !yield(0, data) {
			return
		}
		counter := uint64(1)
		for c := 1; c < n; c++ {
			counter = mine(uint64(i), counter)
			binary.LittleEndian.PutUint64(data[8:], counter)
			counter++
			if !yield(c, data) {
				return
			}
		}
	}
}

// shardXorb is x's block in a shard's xorb section.
func shardXorb(x *xorb.Xorb) shard.Xorb {
	s := shard.Xorb{Hash: x.Hash, BytesInXorb: uint32(x.RawBytes), Chunks: make([]shard.XorbChunk, len(x.Chunks))}
	for i, c := range x.Chunks {
		s.Chunks[i] = shard.XorbChunk{Hash: c.Hash, RawStart: uint32(c.RawStart), RawLen: c.RawLen}
	}
	return s
}

func (s *samples) addChunk(i int64, h hash.Hash) {
	if i%s.chunkStep == 0 {
		s.mu.Lock()
		s.chunks = append(s.chunks, h)
		s.mu.Unlock()
	}
}

func (s *samples) addFile(i int64, h hash.Hash) {
	if i%s.fileStp == 0 {
		s.mu.Lock()
		s.files = append(s.files, h)
		s.mu.Unlock()
	}
}

// writeSamples writes "c HASH" and "f HASH" lines.
func writeSamples(path string, s *samples) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, h := range s.chunks {
		fmt.Fprintln(w, "c", h)
	}
	for _, h := range s.files {
		fmt.Fprintln(w, "f", h)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
