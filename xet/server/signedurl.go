package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// URL signature errors; both answer 403 (as a CDN does), which makes xet-core re-plan.
var (
	ErrURLExpired = errors.New("signed URL expired")
	ErrURLInvalid = errors.New("signed URL signature invalid")
)

// maxSignedRanges bounds the ranges one URL may carry, which keeps URLs under ~8 KiB as the Hub's are.
const maxSignedRanges = 256

// URLSigner signs and checks xorb URLs: /xorbs/default/{hash}?exp=E&ranges=S-E,S-E&sig=SIG where SIG =
// base64url(HMAC-SHA256(key, "xorb" NUL hash NUL ranges NUL exp)). The URL grants exactly the listed
// byte ranges (inclusive) of the xorb's serialized chunk region until unix time E. Safe for concurrent
// use.
type URLSigner struct {
	key []byte
	now func() time.Time
}

// NewURLSigner returns a signer keyed from the server secret.
func NewURLSigner(secret []byte, now func() time.Time) *URLSigner {
	if now == nil {
		now = time.Now
	}
	return &URLSigner{key: deriveKey(secret, "git-xet-transfer xorb-url v1"), now: now}
}

func (u *URLSigner) mac(xorb, ranges, exp string) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("xorb\x00" + xorb + "\x00" + ranges + "\x00" + exp))
	return m.Sum(nil)
}

// Sign returns the URL (under base, e.g. "http://127.0.0.1:8080") for ranges of xorb h, valid for ttl.
func (u *URLSigner) Sign(base string, h hash.Hash, ranges []casapi.ByteRange, ttl time.Duration) string {
	var sb strings.Builder
	for i, r := range ranges {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatUint(r.Start, 10))
		sb.WriteByte('-')
		sb.WriteString(strconv.FormatUint(r.End, 10))
	}
	rs := sb.String()
	exp := strconv.FormatInt(u.now().Add(ttl).Unix(), 10)
	hs := h.String()
	sig := base64.RawURLEncoding.EncodeToString(u.mac(hs, rs, exp))
	// The values hold only digits, '-', ',' and base64url characters: nothing to escape but ','
	// which is valid in a query.
	return base + "/xorbs/" + casapi.PrefixDefault + "/" + hs + "?exp=" + exp + "&ranges=" + rs + "&sig=" + sig
}

// Check verifies the query of a signed URL for xorb h and returns the byte ranges it grants.
func (u *URLSigner) Check(h hash.Hash, q url.Values) ([]casapi.ByteRange, error) {
	exp, rs, sigText := q.Get("exp"), q.Get("ranges"), q.Get("sig")
	if exp == "" || rs == "" || sigText == "" {
		return nil, fmt.Errorf("%w: exp, ranges and sig are required", ErrURLInvalid)
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if err != nil || !hmac.Equal(sig, u.mac(h.String(), rs, exp)) {
		return nil, ErrURLInvalid
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: bad exp", ErrURLInvalid)
	}
	if u.now().Unix() >= e {
		return nil, ErrURLExpired
	}
	parts := strings.Split(rs, ",")
	if len(parts) > maxSignedRanges {
		return nil, fmt.Errorf("%w: too many ranges", ErrURLInvalid)
	}
	out := make([]casapi.ByteRange, 0, len(parts))
	for _, p := range parts {
		a, b, ok := strings.Cut(p, "-")
		s, err1 := strconv.ParseUint(a, 10, 64)
		t, err2 := strconv.ParseUint(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || t < s {
			return nil, fmt.Errorf("%w: bad range %q", ErrURLInvalid, p)
		}
		out = append(out, casapi.ByteRange{Start: s, End: t})
	}
	return out, nil
}

// SignPath returns base+p with a signature valid for ttl, in the shape of the Hub's bridge and CDN
// URLs (X-Amz-Expires, Expires, X-Amz-Signature): SIG = base64url(HMAC-SHA256(key, "path" NUL p NUL
// exp)). The URL grants GET of p (any range of it) until it expires.
func (u *URLSigner) SignPath(base, p string, ttl time.Duration) string {
	exp := strconv.FormatInt(u.now().Add(ttl).Unix(), 10)
	sig := base64.RawURLEncoding.EncodeToString(u.pathMAC(p, exp))
	return base + p + "?X-Amz-Expires=" + strconv.FormatInt(int64(ttl/time.Second), 10) + "&Expires=" + exp + "&X-Amz-Signature=" + sig
}

func (u *URLSigner) pathMAC(p, exp string) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("path\x00" + p + "\x00" + exp))
	return m.Sum(nil)
}

// CheckPath verifies a URL SignPath made for path p.
func (u *URLSigner) CheckPath(p string, q url.Values) error {
	exp, sigText := q.Get("Expires"), q.Get("X-Amz-Signature")
	sig, err := base64.RawURLEncoding.Strict().DecodeString(sigText)
	if exp == "" || err != nil || !hmac.Equal(sig, u.pathMAC(p, exp)) {
		return ErrURLInvalid
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad Expires", ErrURLInvalid)
	}
	if u.now().Unix() >= e {
		return ErrURLExpired
	}
	return nil
}
