package server

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	xhash "github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// handleObjectGet answers GET/HEAD /{repo}.git/info/lfs/objects/{oid}: the basic-transfer bridge. The
// file is reconstructed from the store and streamed (Content-Length = its size; a single Range gives
// 206). A whole-file answer is hashed as it streams; if the SHA-256 is not the oid the connection is
// cut, so a client never takes a damaged file for a complete one.
func (s *Server) handleObjectGet(w http.ResponseWriter, r *http.Request, ns, oid string) {
	if _, ok := s.authRepo(w, r, ns, false); !ok {
		return
	}
	file, size, err := lookupObject(r.Context(), s.cfg.Store, ns, oid)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			writeLFSError(w, http.StatusNotFound, "object "+oid+" does not exist in "+ns)
			return
		}
		s.failLFS(w, r, "object", err)
		return
	}
	want, _ := xhash.ParseSHA256(oid)
	s.metrics.bridged("download")
	s.streamFile(w, r, file, size, &want)
}

// streamFile answers GET/HEAD of a whole Xet file (a single Range gives 206). With wantSHA256 set, a
// whole-file answer is hashed as it streams and the connection is cut if it does not match.
func (s *Server) streamFile(w http.ResponseWriter, r *http.Request, file xhash.Hash, size uint64, wantSHA256 *xhash.Hash) {
	status := http.StatusOK
	length := size
	var rng *casapi.ByteRange
	if hdr := r.Header.Get("Range"); hdr != "" && size > 0 {
		rs, err := parseRange(hdr, size)
		switch {
		case errors.Is(err, errUnsatisfiable):
			w.Header().Set("Content-Range", "bytes */"+strconv.FormatUint(size, 10))
			writeLFSError(w, http.StatusRequestedRangeNotSatisfiable, "range not satisfiable")
			return
		case err != nil:
			writeLFSError(w, http.StatusBadRequest, err.Error())
			return
		case len(rs) == 1:
			rng = &rs[0]
			status = http.StatusPartialContent
			length = rs[0].Len()
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", rs[0].Start, rs[0].End, size))
		}
		// Several ranges: answer the whole file (allowed by RFC 9110).
	}
	w.Header().Set("Content-Type", contentTypeOctets)
	w.Header().Set("Content-Length", strconv.FormatUint(length, 10))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set(lfsbatch.HeaderXetHash, file.String())
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	if size == 0 {
		w.WriteHeader(status)
		return
	}
	p, perr := s.cfg.Store.Reconstruct(r.Context(), file, rng)
	if perr != nil {
		w.Header().Del("Content-Length")
		w.Header().Del("Content-Range")
		s.failLFS(w, r, "reconstruct", perr)
		return
	}
	w.WriteHeader(status)
	var out io.Writer = w
	var sum hash.Hash
	if rng == nil && wantSHA256 != nil {
		sum = sha256.New()
		out = io.MultiWriter(w, sum)
	}
	if err := writePlan(r.Context(), s.cfg.Store, out, p, length); err != nil {
		s.log.Error().Err(err).Str("path", r.URL.Path).Msg("bridge download failed mid-stream")
		panic(http.ErrAbortHandler)
	}
	if sum != nil {
		if xhash.FromSHA256([32]byte(sum.Sum(nil))) != *wantSHA256 {
			s.log.Error().Str("path", r.URL.Path).Str("file", file.String()).Msg("bridge download: reconstructed bytes do not match the oid")
			panic(http.ErrAbortHandler)
		}
	}
}

// handleObjectPut answers PUT /{repo}.git/info/lfs/objects/{oid}: a basic-transfer upload. The body
// is chunked and stored as xorbs plus a shard by the Ingester, which registers the file only when its
// SHA-256 is the oid (400 otherwise) and its length the Content-Length.
func (s *Server) handleObjectPut(w http.ResponseWriter, r *http.Request, ns, oid string) {
	who, ok := s.authRepo(w, r, ns, true)
	if !ok {
		return
	}
	sha, err := xhash.ParseSHA256(oid)
	if err != nil {
		writeLFSError(w, http.StatusBadRequest, "bad oid: "+err.Error())
		return
	}
	if s.cfg.Hub != nil {
		s.putLegacy(w, r, ns, oid)
		return
	}
	if s.cfg.Ingest == nil {
		writeLFSError(w, http.StatusNotImplemented, "this server does not accept basic-transfer uploads")
		return
	}
	if r.ContentLength > s.cfg.Limits.Object {
		writeLFSError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("object of %d bytes exceeds the limit of %d", r.ContentLength, s.cfg.Limits.Object))
		return
	}
	if _, size, err := s.cfg.Store.LookupVerifiedSHA256(r.Context(), ns, sha); err == nil && (r.ContentLength < 0 || uint64(r.ContentLength) == size) {
		w.WriteHeader(http.StatusOK) // already stored
		return
	}
	if n := max(r.ContentLength, 0); !s.withinQuota(w, r, ns, n, n) {
		return
	}
	s.metrics.bridged("upload")
	slot, err := s.ingest.acquire(r.Context(), uploader(r, who.name, ns), bodyProgress(r), bodySize(r, s.cfg.Limits.Object))
	if err != nil {
		return
	}
	defer slot.release()
	meter := s.meter(r, ns, http.MaxBytesReader(w, r.Body, s.cfg.Limits.Object))
	defer meter.done()
	_, err = s.cfg.Ingest.Ingest(r.Context(), ns, meter, r.ContentLength, sha.SHA256())
	// What arrived may be stored, as a file or as xorbs no file names (the store records them as
	// the repository's uploads): count it until the usage is read again.
	s.quota.add(usageKeys(ns), uint64(meter.n))
	if err != nil {
		s.failLFS(w, r, "upload", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleVerify answers POST /{repo}.git/info/lfs/verify {"oid","size"}: 200 when the repository has
// the object with that size, 404 when it does not, 422 on a size mismatch.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request, ns string) {
	if _, ok := s.authRepo(w, r, ns, true); !ok {
		return
	}
	var o lfsbatch.Object
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&o); err != nil {
		writeLFSError(w, http.StatusBadRequest, "malformed verify request: "+err.Error())
		return
	}
	_, size, err := lookupObject(r.Context(), s.cfg.Store, ns, o.OID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeLFSError(w, http.StatusNotFound, "object "+o.OID+" was not stored")
	case err != nil:
		s.failLFS(w, r, "verify", err)
	case int64(size) != o.Size:
		writeLFSError(w, http.StatusUnprocessableEntity, fmt.Sprintf("object stored with size %d, not %d", size, o.Size))
	default:
		w.Header().Set("Content-Type", contentTypeLFS)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "{}\n")
	}
}
