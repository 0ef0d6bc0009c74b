package xetfile

import (
	"os"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// localSpans finds chunks in objects on this machine (the chunk index), asked once per xorb.
type localSpans struct {
	src    span.Local
	mu     sync.Mutex
	byXorb map[hash.Hash][]localSpan
}

// localSpan is a span with the file offset of each of its chunks.
type localSpan struct {
	path  string
	start uint32
	offs  []int64
	ents  []hash.Entry
}

// maxLocalXorbs bounds the xorbs whose spans are kept (the lookups are forgotten past it).
const maxLocalXorbs = 4096

func newLocalSpans(src span.Local) *localSpans {
	return &localSpans{src: src, byXorb: map[hash.Hash][]localSpan{}}
}

// of returns the local spans holding chunks of xorb x.
func (l *localSpans) of(x hash.Hash) []localSpan {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.byXorb[x]; ok {
		return s
	}
	var out []localSpan
	for _, sp := range l.src.Spans([]hash.Hash{x}) {
		if sp.Xorb != x || sp.Path == "" {
			continue
		}
		ls := localSpan{path: sp.Path, start: sp.Start, ents: sp.Chunks, offs: make([]int64, len(sp.Chunks))}
		pos := sp.Pos
		for i, e := range sp.Chunks {
			ls.offs[i] = pos
			pos += int64(e.Size)
		}
		out = append(out, ls)
	}
	if len(l.byXorb) >= maxLocalXorbs {
		clear(l.byXorb)
	}
	l.byXorb[x] = out
	return out
}

// fromLocal reads chunk r from a local object holding it, when its bytes there hash to r.
func (fs *Files) fromLocal(r chunkRef) ([]byte, bool) {
	if fs.locals.src == nil {
		return nil, false
	}
	for _, sp := range fs.locals.of(r.xorb) {
		if r.idx < sp.start || int(r.idx-sp.start) >= len(sp.ents) {
			continue
		}
		i := r.idx - sp.start
		if sp.ents[i].Hash != r.hash || int(sp.ents[i].Size) != r.size {
			continue
		}
		if d, ok := readVerified(sp.path, sp.offs[i], r); ok {
			fs.st.fromLocal.Add(int64(len(d)))
			return d, true
		}
		fs.st.bad.Add(1)
	}
	return nil, false
}

// readVerified reads r.size bytes at off of path, when they hash to r.hash.
func readVerified(path string, off int64, r chunkRef) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	d := make([]byte, r.size)
	if _, err := f.ReadAt(d, off); err != nil || hash.Chunk(d) != r.hash {
		return nil, false
	}
	return d, true
}
