package xetfile

import (
	"bytes"
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkcache"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// xorbInfo is what a verified footer says of a xorb: each chunk's hash, the raw offset where it
// ends, and where its record ends in the xorb's serialized chunks.
type xorbInfo struct {
	hashes []hash.Hash
	rawEnd []int64
	recEnd []uint32
	// granted: the footer could not be tied to the xorb hash, because the CAS that gave the plan
	// withheld (zeroed) the hashes of the chunks outside what its URL grants (xet-server does, so
	// that a repository learns nothing of chunks it may not read). Its other hashes rest on that
	// CAS, as the plan does, until the plan check ties them to the file's Xet hash; it is never
	// kept in the disk cache, whose entries must verify on their own.
	granted bool
}

func (x *xorbInfo) rawStart(i uint32) int64 {
	if i == 0 {
		return 0
	}
	return x.rawEnd[i-1]
}

func (x *xorbInfo) recStart(i uint32) uint64 {
	if i == 0 {
		return 0
	}
	return uint64(x.recEnd[i-1])
}

func (x *xorbInfo) size(i uint32) int { return int(x.rawEnd[i] - x.rawStart(i)) }

// chunkAt is the chunk of [start, end) whose raw bytes hold raw offset r of the xorb.
func (x *xorbInfo) chunkAt(start, end uint32, r int64) uint32 {
	k := sort.Search(int(end-start), func(i int) bool { return x.rawEnd[int(start)+i] > r })
	return start + uint32(k)
}

// infoOf checks foot against xorb h and keeps what reads need of it. fromCAS: the footer came
// from the CAS that gave the plan itself (its URL on the CAS's origin), which may withhold hashes
// (xorbInfo.granted); a footer from anywhere else (an object store's presigned URL, a CDN) must
// verify.
func infoOf(h hash.Hash, foot *xorb.Footer, fromCAS bool) (*xorbInfo, error) {
	ents, err := foot.Verify(h)
	granted := false
	if err != nil && fromCAS && withholds(foot) {
		ents, err = foot.Entries(h)
		granted = true
	}
	if err != nil {
		return nil, err
	}
	if len(foot.BoundaryEnds) != len(ents) {
		return nil, fmt.Errorf("xorb %s: the footer lists %d record ends for %d chunks", h, len(foot.BoundaryEnds), len(ents))
	}
	x := &xorbInfo{hashes: foot.ChunkHashes, rawEnd: make([]int64, len(ents)), recEnd: foot.BoundaryEnds, granted: granted}
	var end int64
	for i, e := range ents {
		end += int64(e.Size)
		x.rawEnd[i] = end
	}
	return x, nil
}

// withholds reports a footer with a zero chunk hash: one its server withheld.
func withholds(foot *xorb.Footer) bool {
	for _, h := range foot.ChunkHashes {
		if h.IsZero() {
			return true
		}
	}
	return false
}

// sameOrigin reports whether URL u is served by the CAS at where (scheme, host and port equal).
func sameOrigin(u, where string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(where)
	return err1 == nil && err2 == nil && (a.Scheme == "http" || a.Scheme == "https") &&
		a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host)
}

// checkTerm checks that the plan's term t is what the xorb's footer says of its chunks.
func (x *xorbInfo) checkTerm(t term) error {
	if int(t.end) > len(x.hashes) {
		return fmt.Errorf("the plan names chunks [%d, %d) of xorb %s, which has %d", t.start, t.end, t.xorb, len(x.hashes))
	}
	if x.granted {
		for k := t.start; k < t.end; k++ {
			if x.hashes[k].IsZero() {
				return fmt.Errorf("the CAS withholds the hash of chunk %d of xorb %s, which the plan names", k, t.xorb)
			}
		}
	}
	if n := x.rawEnd[t.end-1] - x.rawStart(t.start); n != t.length {
		return fmt.Errorf("the plan says chunks [%d, %d) of xorb %s are %d bytes, its footer %d", t.start, t.end, t.xorb, t.length, n)
	}
	return nil
}

// maxFooterChunks bounds the chunks of the footers kept in memory (about 50 bytes each); the least
// recently used go first, and are read again from the disk cache.
const maxFooterChunks = 256 << 10

// footerCache is the verified footers of xorbs, found once each (from the disk cache, else the
// CAS) however many reads want them.
type footerCache struct {
	fs     *Files
	mu     sync.Mutex
	slots  map[hash.Hash]*list.Element // of *footerSlot
	order  *list.List                  // most recently used first
	chunks int
}

type footerSlot struct {
	x      hash.Hash
	info   lazy[*xorbInfo]
	chunks int
}

func newFooterCache(fs *Files) *footerCache {
	return &footerCache{fs: fs, slots: map[hash.Hash]*list.Element{}, order: list.New()}
}

// get returns the verified footer of xorb x, read through plan p's URL when it must be fetched.
func (c *footerCache) get(ctx context.Context, f *File, p *plan, x hash.Hash) (*xorbInfo, error) {
	s := c.slot(x)
	info, err := s.info.get(ctx, c.fs, "the footer of xorb "+x.String(), func(ctx context.Context) (*xorbInfo, error) {
		return c.load(ctx, f, p, x)
	})
	if err == nil {
		c.counted(s, len(info.hashes))
	}
	return info, err
}

// start starts finding the footer of x in the background, when it is neither known nor on its way.
func (c *footerCache) start(f *File, p *plan, x hash.Hash) {
	s := c.slot(x)
	s.info.start(c.fs, func(ctx context.Context) (*xorbInfo, error) { return c.load(ctx, f, p, x) })
}

// slot is the footer slot of x, made when missing, now the most recently used.
func (c *footerCache) slot(x hash.Hash) *footerSlot {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.slots[x]
	if e == nil {
		e = c.order.PushFront(&footerSlot{x: x})
		c.slots[x] = e
	} else {
		c.order.MoveToFront(e)
	}
	return e.Value.(*footerSlot)
}

// peek returns the footer of x when it is in memory.
func (c *footerCache) peek(x hash.Hash) *xorbInfo {
	c.mu.Lock()
	e := c.slots[x]
	c.mu.Unlock()
	if e == nil {
		return nil
	}
	v, _ := e.Value.(*footerSlot).info.peekValue()
	return v
}

// forget drops the footer of x when it is info and info is granted (not tied to the xorb hash): a
// chunk or the plan check found it wrong, and it may be the footer that changed on the way, so the
// next read that needs it fetches it again instead of failing on it for the mount's life.
func (c *footerCache) forget(x hash.Hash, info *xorbInfo) {
	if !info.granted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.slots[x]
	if e == nil {
		return
	}
	s := e.Value.(*footerSlot)
	if v, _ := s.info.peekValue(); v != info {
		return
	}
	c.order.Remove(e)
	delete(c.slots, x)
	c.chunks -= s.chunks
}

// counted adds a found footer's chunks to the bound, dropping the least recently used footers.
func (c *footerCache) counted(s *footerSlot, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.chunks == 0 {
		s.chunks = n
		c.chunks += n
	}
	for c.chunks > maxFooterChunks && c.order.Len() > 1 {
		old := c.order.Back().Value.(*footerSlot)
		if old == s {
			break
		}
		c.order.Remove(c.order.Back())
		delete(c.slots, old.x)
		c.chunks -= old.chunks
	}
}

// load finds the footer of x: from the disk cache when an entry there verifies, else from the CAS
// (stored in the disk cache once it verifies). A plan whose URLs no longer give the footer is asked
// for again once.
func (c *footerCache) load(ctx context.Context, f *File, p *plan, x hash.Hash) (*xorbInfo, error) {
	if info, ok := c.fromDisk(x); ok {
		return info, nil
	}
	foot, err := c.fetch(ctx, p, x)
	if errors.Is(err, cas.ErrNoFooter) && ctx.Err() == nil {
		if p2, perr := f.replan(ctx, p); perr == nil && p2 != p {
			p = p2
			foot, err = c.fetch(ctx, p, x)
		}
	}
	if err != nil {
		return nil, err
	}
	info, err := infoOf(x, foot, sameOrigin(p.xorbs[x][0].URL, p.src.Where))
	if err != nil {
		c.fs.st.bad.Add(1)
		return nil, fmt.Errorf("%s sent a footer of xorb %s that does not verify: %w", p.src.Where, x, err)
	}
	if cache := c.fs.cfg.Cache; cache != nil && !info.granted {
		if err := cache.Put(chunkcache.Footer, x, encodeFooter(foot)); err != nil {
			c.fs.cfg.Log.Debug().Err(err).Msg("mount: keeping a footer in the cache")
		}
	}
	return info, nil
}

// fetch asks p's CAS for the footer of x (the CAS client retries within its budget).
func (c *footerCache) fetch(ctx context.Context, p *plan, x hash.Hash) (*xorb.Footer, error) {
	fetches := p.xorbs[x]
	if len(fetches) == 0 {
		return nil, fmt.Errorf("the plan gives no URL for xorb %s", x)
	}
	foot, err := p.src.CAS.XorbFooter(ctx, x, fetches[0])
	if err != nil {
		if errors.Is(err, cas.ErrNoFooter) {
			return nil, fmt.Errorf("%s offers no footer of xorb %s to check its chunks against (the mount needs one; `git lfs pull` the file instead): %w", p.src.Where, x, err)
		}
		return nil, fmt.Errorf("reading the footer of xorb %s from %s: %w", x, p.src.Where, err)
	}
	c.fs.st.footerReads.Add(1)
	c.fs.st.fetched.Add(int64(foot.Size()))
	return foot, nil
}

// fromDisk reads the footer of x from the disk cache; an entry that does not verify is dropped.
func (c *footerCache) fromDisk(x hash.Hash) (*xorbInfo, bool) {
	cache := c.fs.cfg.Cache
	if cache == nil {
		return nil, false
	}
	b, err := cache.Get(chunkcache.Footer, x)
	if err != nil {
		return nil, false
	}
	foot, err := decodeFooter(b)
	var info *xorbInfo
	if err == nil {
		info, err = infoOf(x, foot, false)
	}
	if err != nil {
		c.fs.st.bad.Add(1)
		c.fs.cfg.Log.Warn().Err(err).Str("xorb", x.String()).Msg("mount: a cached footer does not verify; dropped")
		cache.Drop(chunkcache.Footer, x)
		return nil, false
	}
	return info, true
}

// encodeFooter is a footer as the disk cache keeps it: the length of the xorb's records (8 bytes,
// little-endian), then the footer as a xorb object ends with it.
func encodeFooter(f *xorb.Footer) []byte {
	var recs uint64
	if n := len(f.BoundaryEnds); n > 0 {
		recs = uint64(f.BoundaryEnds[n-1])
	}
	return f.AppendTo(binary.LittleEndian.AppendUint64(nil, recs))
}

// decodeFooter reads what encodeFooter wrote, with xorb.ReadFooter's checks.
func decodeFooter(b []byte) (*xorb.Footer, error) {
	if len(b) < 8 {
		return nil, errors.New("cached footer too short")
	}
	recs := int64(binary.LittleEndian.Uint64(b))
	tail := b[8:]
	if recs < 0 || recs > xorb.MaxBytes*2 {
		return nil, fmt.Errorf("cached footer names %d record bytes", recs)
	}
	f, _, err := xorb.ReadFooter(tailReader{base: recs, r: bytes.NewReader(tail)}, recs+int64(len(tail)))
	return f, err
}

// tailReader reads the tail of an object, held from offset base on.
type tailReader struct {
	base int64
	r    io.ReaderAt
}

func (t tailReader) ReadAt(p []byte, off int64) (int, error) {
	if off < t.base {
		return 0, fmt.Errorf("offset %d is before the cached tail (from %d)", off, t.base)
	}
	return t.r.ReadAt(p, off-t.base)
}
