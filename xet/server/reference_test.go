package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
)

// The reference xorb (10 records of the EV-population CSV) and a shard for its 810,234-byte prefix go
// up through the CAS routes; the file then comes back whole and by ranges through /v2, /v1 and the
// signed URLs, byte for byte.
func TestReferenceUploadAndReconstruct(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Users = testerUsers(t) }) // auth on: tokens required
	r := loadRef(t)
	w := e.token("tester", "org/ev", ScopeWrite, time.Hour)
	rd := e.token("tester", "org/ev", ScopeRead, time.Hour)

	res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody, servertest.Bearer(w)...)
	if res.status != 200 || !decodeJSON[casapi.PutXorbResponse](t, res.body).WasInserted {
		t.Fatalf("first xorb upload: %v", res)
	}
	res = e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody, servertest.Bearer(w)...)
	if res.status != 200 || decodeJSON[casapi.PutXorbResponse](t, res.body).WasInserted {
		t.Fatalf("second xorb upload must say was_inserted=false: %v", res)
	}
	if res := e.do("HEAD", "/v1/xorbs/default/"+r.xorbHash.String(), nil, servertest.Bearer(rd)...); res.status != 200 {
		t.Fatalf("HEAD stored xorb: %v", res)
	}
	if res := e.do("HEAD", "/v1/files/"+r.fileHash.String(), nil, servertest.Bearer(rd)...); res.status != 404 {
		t.Fatalf("HEAD of a file before its shard: %v", res)
	}
	res = e.do("POST", "/v1/shards", r.shard, servertest.Bearer(w)...)
	if res.status != 200 || decodeJSON[casapi.PutShardResponse](t, res.body).Result != casapi.ShardSyncPerformed {
		t.Fatalf("first shard upload: %v", res)
	}
	res = e.do("POST", "/v1/shards", r.shard, servertest.Bearer(w)...)
	if res.status != 200 || decodeJSON[casapi.PutShardResponse](t, res.body).Result != casapi.ShardExists {
		t.Fatalf("second shard upload must say result 0: %v", res)
	}
	res = e.do("HEAD", "/v1/files/"+r.fileHash.String(), nil, servertest.Bearer(rd)...)
	if res.status != 200 || res.header.Get("Content-Length") != "810234" {
		t.Fatalf("HEAD file: %v %v", res, res.header)
	}

	// The namespace of the write token now maps the SHA-256 to the file.
	if f, size, err := e.st.LookupSHA256(t.Context(), "org/ev", hashOfSHA(r.sha)); err != nil || f != r.fileHash || size != 810234 {
		t.Fatalf("LookupSHA256 after shard upload: %v %d %v", f, size, err)
	}

	size := uint64(len(r.content))
	cases := []struct {
		name       string
		hdr        string
		start, end uint64 // inclusive
	}{
		{"whole", "", 0, size - 1},
		{"first byte", "bytes=0-0", 0, 0},
		{"captured 0-200000", "bytes=0-200000", 0, 200000},
		{"middle across chunks", "bytes=123457-654321", 123457, 654321},
		{"last byte", "bytes=810233-810233", 810233, 810233},
		{"open end", "bytes=700000-", 700000, size - 1},
		{"end past EOF clamps", "bytes=800000-999999999", 800000, size - 1},
		{"suffix", "bytes=-1000", size - 1000, size - 1},
	}
	for _, c := range cases {
		want := r.content[c.start : c.end+1]
		for _, v := range []string{"v2", "v1"} {
			t.Run(c.name+"/"+v, func(t *testing.T) {
				hdr := servertest.Bearer(rd)
				if c.hdr != "" {
					hdr = append(hdr, "Range", c.hdr)
				}
				res := e.do("GET", "/"+v+"/reconstructions/"+r.fileHash.String(), nil, hdr...)
				if res.status != 200 {
					t.Fatalf("reconstruction: %v", res)
				}
				var p *casapi.ReconstructionV2
				if v == "v2" {
					p = ptr(decodeJSON[casapi.ReconstructionV2](t, res.body))
				} else {
					v1 := decodeJSON[casapi.ReconstructionV1](t, res.body)
					for h, fis := range v1.FetchInfo {
						for _, fi := range fis {
							if h != r.xorbHash || fi.URLRange.End >= uint64(len(r.xorbBody)) {
								t.Fatalf("v1 fetch_info %s %+v", h, fi)
							}
						}
					}
					p = casapi.FromV1(&v1)
				}
				got := e.fetchPlan(p, c.end-c.start+1)
				if !bytes.Equal(got, want) {
					t.Fatalf("reconstructed %d bytes differ from the reference %d", len(got), len(want))
				}
			})
		}
	}

	// The captured Hub answer for bytes=0-200000 names chunks [0,2), 237171 unpacked bytes and
	// url_range 0-50468 of this very xorb: ours must say the same.
	res = e.do("GET", "/v1/reconstructions/"+r.fileHash.String(), nil, append(servertest.Bearer(rd), "Range", "bytes=0-200000")...)
	v1 := decodeJSON[casapi.ReconstructionV1](t, res.body)
	if len(v1.Terms) != 1 || v1.Terms[0].UnpackedLength != 237171 || v1.Terms[0].Range != (casapi.ChunkRange{Start: 0, End: 2}) ||
		v1.FetchInfo[r.xorbHash][0].URLRange != (casapi.ByteRange{Start: 0, End: 50468}) || v1.OffsetIntoFirstRange != 0 {
		t.Fatalf("v1 plan for bytes=0-200000 differs from the captured Hub answer: %s", res.body)
	}

	// Past the end: 416 on both versions.
	for _, v := range []string{"v1", "v2"} {
		res := e.do("GET", "/"+v+"/reconstructions/"+r.fileHash.String(), nil, append(servertest.Bearer(rd), "Range", "bytes=810234-810300")...)
		if res.status != http.StatusRequestedRangeNotSatisfiable || res.header.Get("Content-Range") != "bytes */"+strconv.Itoa(len(r.content)) {
			t.Fatalf("%s range past EOF: %v %v", v, res, res.header)
		}
	}
}

// One signed URL answers a multi-range request with multipart/byteranges holding exactly the bytes.
func TestSignedURLMultiRange(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	ranges := []casapi.ByteRange{{Start: 0, End: 99}, {Start: 5000, End: 5099}, {Start: 170000, End: 170625}}
	url := e.srv.urls.Sign(e.base, r.xorbHash, ranges, time.Hour)
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Range", "bytes=0-99,5000-5099,170000-170625")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusPartialContent {
		t.Fatalf("status %d", res.StatusCode)
	}
	mr, err := multipartReader(res)
	if err != nil {
		t.Fatal(err)
	}
	for i, rg := range ranges {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if cr := part.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/%d", rg.Start, rg.End, len(r.xorbBody)) {
			t.Fatalf("part %d Content-Range %q", i, cr)
		}
		got := readAll(t, part)
		if !bytes.Equal(got, r.xorbBody[rg.Start:rg.End+1]) {
			t.Fatalf("part %d bytes differ", i)
		}
	}
	if _, err := mr.NextPart(); err == nil {
		t.Fatal("more parts than ranges")
	}
}

func ptr[T any](v T) *T { return &v }
