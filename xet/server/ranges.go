package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
)

// errUnsatisfiable: every range of a Range header starts at or past the end (416).
var errUnsatisfiable = errors.New("range not satisfiable")

// maxHeaderRanges bounds the ranges accepted in one Range header.
const maxHeaderRanges = 1024

// parseRange parses an HTTP Range header ("bytes=S-E", "bytes=S-", "bytes=-N", comma-separated)
// against a resource of size bytes and returns the inclusive ranges, clamped to the end. Ranges that
// start past the end are dropped; when none is left the error is errUnsatisfiable. Other malformed
// headers get a descriptive error (answered 400 or 416 by the caller).
func parseRange(header string, size uint64) ([]casapi.ByteRange, error) {
	spec, ok := strings.CutPrefix(header, "bytes=")
	if !ok {
		return nil, fmt.Errorf("range %q: only bytes ranges are supported", header)
	}
	parts := strings.Split(spec, ",")
	if len(parts) > maxHeaderRanges {
		return nil, fmt.Errorf("range: %d ranges, at most %d", len(parts), maxHeaderRanges)
	}
	var out []casapi.ByteRange
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		a, b, ok := strings.Cut(p, "-")
		if !ok {
			return nil, fmt.Errorf("range %q: missing '-'", p)
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		var r casapi.ByteRange
		switch {
		case a == "":
			n, err := strconv.ParseUint(b, 10, 64)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("range %q: bad suffix length", p)
			}
			if size == 0 {
				continue
			}
			if n > size {
				n = size
			}
			r = casapi.ByteRange{Start: size - n, End: size - 1}
		default:
			s, err := strconv.ParseUint(a, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("range %q: bad start", p)
			}
			e := uint64(1<<64 - 1)
			if b != "" {
				if e, err = strconv.ParseUint(b, 10, 64); err != nil || e < s {
					return nil, fmt.Errorf("range %q: bad end", p)
				}
			}
			if s >= size {
				continue
			}
			if e >= size {
				e = size - 1
			}
			r = casapi.ByteRange{Start: s, End: e}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errUnsatisfiable
	}
	return out, nil
}

// within reports whether r lies inside one of allowed.
func within(r casapi.ByteRange, allowed []casapi.ByteRange) bool {
	for _, a := range allowed {
		if r.Start >= a.Start && r.End <= a.End {
			return true
		}
	}
	return false
}
