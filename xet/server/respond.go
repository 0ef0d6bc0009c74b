package server

import (
	"context"
	"errors"
	"net/http"
	"syscall"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

const (
	contentTypeJSON   = "application/json"
	contentTypeLFS    = "application/vnd.git-lfs+json"
	contentTypeOctets = "application/octet-stream"
	contentTypeNDJSON = "application/x-ndjson"
)

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_ = casapi.Encode(w, v)
}

// writeError answers a CAS route's failure: {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, casapi.Error{Error: msg})
}

// lfsError is the body of a failed LFS request (git-lfs shows message to the user).
type lfsError struct {
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
}

// writeLFSError answers an LFS route's failure: {"message": msg}.
func writeLFSError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", contentTypeLFS)
	w.WriteHeader(status)
	_ = casapi.Encode(w, lfsError{Message: msg})
}

// statusOf classifies an error of the store or of reading a request body into an HTTP status, and a
// message that is safe to show the client (internal errors are not detailed).
func statusOf(err error) (int, string) {
	var inv *store.InvalidError
	var tooBig *http.MaxBytesError
	var quota *quotaError
	switch {
	case errors.As(err, &quota):
		return quota.status, quota.msg
	case errors.As(err, &inv):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "request body too large"
	case errors.Is(err, errSlowBody):
		return http.StatusRequestTimeout, err.Error()
	case errors.Is(err, errSlotTaken):
		return http.StatusRequestTimeout, errSlotTaken.Error()
	case errors.Is(err, errShortBody):
		return http.StatusBadRequest, errShortBody.Error()
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "not found"
	case errors.Is(err, store.ErrRangeNotSatisfiable), errors.Is(err, errUnsatisfiable):
		return http.StatusRequestedRangeNotSatisfiable, "range not satisfiable"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return http.StatusInsufficientStorage, "server out of storage space"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request canceled"
	default:
		return http.StatusInternalServerError, "internal server error"
	}
}

// fail answers a CAS route's error with statusOf and logs server-side failures with their detail.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	status, msg := statusOf(err)
	var quota *quotaError
	if errors.As(err, &quota) {
		writeError(w, status, msg) // the user's message as it is: not a failure of the server
		return
	}
	if status >= 500 {
		s.log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg(what)
	} else if status != http.StatusNotFound {
		msg = what + ": " + msg
	}
	writeError(w, status, msg)
}

// failLFS is fail for LFS routes ({"message": ...}).
func (s *Server) failLFS(w http.ResponseWriter, r *http.Request, what string, err error) {
	status, msg := statusOf(err)
	var quota *quotaError
	if errors.As(err, &quota) {
		writeLFSError(w, status, msg)
		return
	}
	if status >= 500 {
		s.log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg(what)
	} else {
		msg = what + ": " + msg
	}
	writeLFSError(w, status, msg)
}
