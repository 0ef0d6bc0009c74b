package server

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
)

func TestSignedURLChecks(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	signed := []casapi.ByteRange{{Start: 0, End: 50468}, {Start: 100000, End: 120000}}
	u := e.srv.urls.Sign(e.base, r.xorbHash, signed, time.Minute)

	// Inside: 206 with the bytes.
	res := e.do("GET", u, nil, "Range", "bytes=10-50468")
	if res.status != 206 || !bytes.Equal(res.body, r.xorbBody[10:50469]) || res.header.Get("Content-Range") != "bytes 10-50468/170626" {
		t.Fatalf("inside: %d %v", res.status, res.header)
	}
	// Missing Range: 403.
	if res := e.do("GET", u, nil); res.status != 403 || !strings.Contains(errorMessage(t, res), "Range") {
		t.Fatalf("no range: %v", res)
	}
	// Outside the signed ranges (straddling the end of one, or in the gap): 403.
	for _, rg := range []string{"bytes=50000-50469", "bytes=60000-60001", "bytes=0-10,130000-130001", "bytes=0-10,-100", "bytes=100000-"} {
		if res := e.do("GET", u, nil, "Range", rg); res.status != 403 {
			t.Fatalf("%s: %v", rg, res)
		}
	}
	// Overlapping ranges that would add up to more than the object: refused, never the whole object.
	wide := e.srv.urls.Sign(e.base, r.xorbHash, []casapi.ByteRange{{Start: 0, End: 170625}}, time.Minute)
	if res := e.do("GET", wide, nil, "Range", "bytes=0-170000,1-170001"); res.status != 416 {
		t.Fatalf("overlapping ranges: %v", res)
	}
	// If-Range must not turn a ranged answer into a whole one.
	res = e.do("GET", u, nil, "Range", "bytes=0-9", "If-Range", `"some-etag"`)
	if res.status != 206 || len(res.body) != 10 {
		t.Fatalf("If-Range: %d, %d bytes", res.status, len(res.body))
	}
	// Tampered: other ranges, other xorb, other expiry, bad signature.
	pu, _ := url.Parse(u)
	q := pu.Query()
	tamper := func(k, v string) string {
		q2 := url.Values{}
		for kk, vv := range q {
			q2[kk] = vv
		}
		q2.Set(k, v)
		p2 := *pu
		p2.RawQuery = q2.Encode()
		return p2.String()
	}
	for name, bad := range map[string]string{
		"ranges": tamper("ranges", "0-170625"),
		"exp":    tamper("exp", "9999999999"),
		"sig":    tamper("sig", "AAAA"),
		"nosig":  tamper("sig", ""),
		"xorb":   strings.Replace(u, r.xorbHash.String(), r.fileHash.String(), 1),
	} {
		if res := e.do("GET", bad, nil, "Range", "bytes=0-10"); res.status != 403 {
			t.Fatalf("tampered %s: %v", name, res)
		}
	}
	// Expired: 403 naming it.
	e.clock.Advance(2 * time.Minute)
	res = e.do("GET", u, nil, "Range", "bytes=0-10")
	if res.status != 403 || !strings.Contains(errorMessage(t, res), "expired") {
		t.Fatalf("expired: %v", res)
	}
	// A signed URL of a xorb that is not stored: 404.
	missing := e.srv.urls.Sign(e.base, r.fileHash, signed, time.Minute)
	if res := e.do("GET", missing, nil, "Range", "bytes=0-10"); res.status != 404 {
		t.Fatalf("missing xorb: %v", res)
	}
	// Range past the records: 416.
	past := e.srv.urls.Sign(e.base, r.xorbHash, []casapi.ByteRange{{Start: 200000, End: 300000}}, time.Minute)
	if res := e.do("GET", past, nil, "Range", "bytes=200000-200001"); res.status != 416 {
		t.Fatalf("past end: %v", res)
	}
	// URL signatures never reach the logs.
	if strings.Contains(e.logs.String(), q.Get("sig")) {
		t.Fatal("signature in logs")
	}
}

// The plan's URLs carry the ranges of the plan, and the server's base: --public-url when set, the
// request's Host otherwise.
func TestPlanURLsUsePublicURL(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PublicURL = "https://xet.example.com/" })
	r := loadRef(t)
	e.uploadRef(r)
	res := e.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil)
	p := decodeJSON[casapi.ReconstructionV2](t, res.body)
	f := p.Xorbs[r.xorbHash]
	if len(f) != 1 || !strings.HasPrefix(f[0].URL, "https://xet.example.com/xorbs/default/"+r.xorbHash.String()+"?") {
		t.Fatalf("plan URLs %+v", f)
	}
	if strings.Contains(string(res.body), `\u0026`) {
		t.Fatal("URL ampersands are HTML-escaped")
	}
	e2 := newEnv(t, nil)
	e2.uploadRef(r)
	res = e2.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil)
	p = decodeJSON[casapi.ReconstructionV2](t, res.body)
	if u := p.Xorbs[r.xorbHash][0].URL; !strings.HasPrefix(u, e2.base+"/xorbs/default/") {
		t.Fatalf("URL %q does not use the request host %s", u, e2.base)
	}
	_ = http.StatusOK
}
