package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// handleSignedXorb answers GET /xorbs/{prefix}/{xorb}?exp=..&ranges=..&sig=.. — the signed URLs of
// reconstruction plans. Like a CDN URL it needs no bearer token, but it needs a Range header whose
// every range lies inside the signed ranges: 403 when the signature is bad or expired, the Range header
// is missing, or a range falls outside; 416 when ranges overlap or start past the records; 206 with the
// bytes otherwise (several ranges as multipart/byteranges). The bytes stream from the store's file
// (io.SectionReader over OpenXorb), never whole in memory.
//
// A single suffix range ("bytes=-N") with a valid signature reads the tail of the xorb object as an
// object store would (the records, then the footer): it is answered with the last N bytes of the
// footer at most (206, Content-Range in object offsets), never with records outside the signed
// ranges. The footer holds the xorb's record offsets, with which a client fetches single chunks of
// its signed ranges, and the hashes of the chunks inside them: the hash of every chunk a signed
// range does not hold whole is zero (a xorb shared with other repositories must not give away the
// hashes of their chunks, which would let a client name them in a shard).
func (s *Server) handleSignedXorb(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("prefix") != casapi.PrefixDefault {
		writeError(w, http.StatusNotFound, "unknown xorb prefix")
		return
	}
	h, err := hash.Parse(r.PathValue("xorb"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad xorb hash: "+err.Error())
		return
	}
	allowed, err := s.urls.Check(h, r.URL.Query())
	if err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	hdr := r.Header.Get("Range")
	if hdr == "" {
		writeError(w, http.StatusForbidden, "a Range header inside the signed ranges is required")
		return
	}
	if n, ok := suffixLen(hdr); ok {
		s.serveFooter(w, r, h, n, allowed)
		return
	}
	f, recordsLen, err := s.cfg.Store.OpenXorb(r.Context(), h)
	if err != nil {
		s.fail(w, r, "xorb read", err)
		return
	}
	defer f.Close()

	size := uint64(recordsLen)
	req, err := parseRange(hdr, size)
	switch {
	case errors.Is(err, errUnsatisfiable):
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatUint(size, 10))
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "range starts past the end of the xorb")
		return
	case err != nil:
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	var total uint64
	for _, rg := range req {
		if !within(rg, allowed) {
			writeError(w, http.StatusForbidden, "range "+rg.Header()+" is outside the signed ranges")
			return
		}
		total += rg.Len()
	}
	if total > size {
		// http.ServeContent would answer such a request with the whole object.
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "overlapping ranges")
		return
	}
	// If-Range could make ServeContent ignore Range and send everything: the signature grants ranges
	// only.
	r.Header.Del("If-Range")
	w.Header().Set("Content-Type", contentTypeOctets)
	w.Header().Set("Cache-Control", "private, max-age="+strconv.Itoa(int(s.cfg.URLTTL/time.Second)))
	http.ServeContent(w, r, "", time.Time{}, recordsView(f, recordsLen))
}

// suffixLen returns N of a Range header that is one suffix range, "bytes=-N" (N > 0).
func suffixLen(hdr string) (uint64, bool) {
	spec, ok := strings.CutPrefix(hdr, "bytes=-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(spec), 10, 64)
	return n, err == nil && n > 0
}

// serveFooter answers a suffix range of xorb h with the last n bytes (at most) of its footer, with
// the hashes of the chunks outside the allowed ranges zeroed (signedFooter).
func (s *Server) serveFooter(w http.ResponseWriter, r *http.Request, h hash.Hash, n uint64, allowed []casapi.ByteRange) {
	foot, err := s.cfg.Store.XorbFooter(r.Context(), h)
	if err != nil {
		s.fail(w, r, "xorb footer", err)
		return
	}
	if len(foot.BoundaryEnds) == 0 {
		writeError(w, http.StatusInternalServerError, "xorb footer lists no chunks")
		return
	}
	b := signedFooter(foot, allowed).AppendTo(nil)
	recordsLen := uint64(foot.BoundaryEnds[len(foot.BoundaryEnds)-1])
	total := recordsLen + uint64(len(b))
	b = b[uint64(len(b))-min(n, uint64(len(b))):]
	w.Header().Set("Content-Type", contentTypeOctets)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", total-uint64(len(b)), total-1, total))
	w.Header().Set("Cache-Control", "private, max-age="+strconv.Itoa(int(s.cfg.URLTTL/time.Second)))
	w.WriteHeader(http.StatusPartialContent)
	_, _ = w.Write(b)
}

// signedFooter is foot as a URL granting the byte ranges allowed may see it: the hash of every
// chunk whose record is not wholly inside one of them is zero. Offsets stay: the keyed
// global-dedupe answer gives every chunk's size anyway, and a client needs them to fetch single
// chunks of its ranges.
func signedFooter(foot *xorb.Footer, allowed []casapi.ByteRange) *xorb.Footer {
	out := *foot
	out.ChunkHashes = make([]hash.Hash, len(foot.ChunkHashes))
	var start uint64
	for i, end := range foot.BoundaryEnds {
		rec := casapi.ByteRange{Start: start, End: uint64(end) - 1}
		start = uint64(end)
		if i < len(out.ChunkHashes) && within(rec, allowed) {
			out.ChunkHashes[i] = foot.ChunkHashes[i]
		}
	}
	return &out
}

// recordsView exposes bytes [0, n) of a stored xorb object (its chunk records; the footer after them
// stays hidden) as the io.ReadSeeker http.ServeContent wants. When the store hands out an OS file,
// the view keeps its syscall.Conn so the kernel's sendfile serves a single range without copying
// through user space; otherwise it is an io.SectionReader.
func recordsView(f store.ReadAtCloser, n int64) io.ReadSeeker {
	rs, ok1 := f.(io.ReadSeeker)
	sc, ok2 := f.(syscall.Conn)
	if !ok1 || !ok2 {
		return io.NewSectionReader(f, 0, n)
	}
	return &fileView{rs: rs, Conn: sc, size: n}
}

type fileView struct {
	syscall.Conn // for sendfile (bounded by http.ServeContent's io.CopyN)
	rs           io.ReadSeeker
	size, pos    int64
}

func (v *fileView) Read(p []byte) (int, error) {
	if v.pos >= v.size {
		return 0, io.EOF
	}
	if int64(len(p)) > v.size-v.pos {
		p = p[:v.size-v.pos]
	}
	n, err := v.rs.Read(p)
	v.pos += int64(n)
	return n, err
}

func (v *fileView) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += v.pos
	case io.SeekEnd:
		off += v.size
	default:
		return 0, errors.New("seek: bad whence")
	}
	if off < 0 || off > v.size {
		return 0, errors.New("seek: position outside the xorb records")
	}
	if _, err := v.rs.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	v.pos = off
	return off, nil
}
