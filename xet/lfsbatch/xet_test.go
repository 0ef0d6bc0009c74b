package lfsbatch

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// What a server builds is what a client reads back: every field, the other headers kept for the
// refresh call.
func TestXetActionRoundTrip(t *testing.T) {
	for name, x := range map[string]*XetAction{
		"upload, our server": {CasURL: "https://cas.example:8443/base", Token: "tok", Exp: time.Unix(1900000000, 0),
			SessionID: "sess", Href: "https://lfs.example/api/models/o/r/xet-write-token/main",
			Auth: map[string]string{"Authorization": "Bearer refresh"}, VerifiesSHA256: true,
			BatchURL: "https://cas.example:8443/base/v1/batches/0123"},
		"download, Hub style": {CasURL: "http://127.0.0.1:1234", Token: "tok", Exp: time.Unix(1, 0), SessionID: "s",
			Href: "http://127.0.0.1/refresh", Auth: map[string]string{}, XetHash: strings.Repeat("ab", 32)},
		"download, our server": {CasURL: "http://127.0.0.1:1234", Token: "tok", SessionID: "s", Href: "http://127.0.0.1/refresh",
			Auth: map[string]string{}, XetHash: strings.Repeat("cd", 32), VerifiesSHA256: true, SHA256Verified: true},
		"only the CAS": {CasURL: "http://h", Auth: map[string]string{}},
	} {
		t.Run(name, func(t *testing.T) {
			// Through JSON, as the action travels.
			b, err := json.Marshal(x.Action(3600))
			if err != nil {
				t.Fatal(err)
			}
			var a Action
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			if a.ExpiresIn != 3600 || a.ExpiresAt != "" {
				t.Errorf("expires_in %d, expires_at %q", a.ExpiresIn, a.ExpiresAt)
			}
			got, err := ParseXetAction(&a)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, x) {
				t.Errorf("parsed %+v\nbuilt   %+v", got, x)
			}
		})
	}
}

// Strict in what we write: no header for a field that is unset, and the promise only when made.
func TestXetActionWritesOnlyWhatIsSet(t *testing.T) {
	a := (&XetAction{CasURL: "http://h"}).Action(0)
	if len(a.Header) != 1 || a.Header[HeaderCasURL] != "http://h" {
		t.Errorf("headers %v, want only %s", a.Header, HeaderCasURL)
	}
	b, _ := json.Marshal(a)
	if strings.Contains(string(b), "expires") {
		t.Errorf("wrote %s", b)
	}
}

// Shapes other servers send: the Hub's answer (only X-Xet-* headers, expires_at, fields we do not
// know), lowercase header names, a padded expiry.
func TestParseOtherServersActions(t *testing.T) {
	body := `{"transfer":"xet","objects":[{"oid":"` + strings.Repeat("0", 64) + `","size":5,"authenticated":true,
		"actions":{"upload":{"href":"https://huggingface.co/api/models/o/r/xet-write-token/main",
		"header":{"X-Xet-Cas-Url":"https://cas-server.xethub.hf.co","X-Xet-Access-Token":"tok",
		"X-Xet-Token-Expiration":"1760000000","X-Xet-Session-Id":"01J"},
		"expires_at":"2025-10-09T08:53:20Z","future_field":{"x":1}}}}],"hash_algo":"sha256","extra":[1]}`
	var resp Response
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	a := resp.Objects[0].Actions["upload"]
	if a.ExpiresAt != "2025-10-09T08:53:20Z" || a.ExpiresIn != 0 {
		t.Errorf("expires_at %q expires_in %d", a.ExpiresAt, a.ExpiresIn)
	}
	x, err := ParseXetAction(a)
	if err != nil {
		t.Fatal(err)
	}
	want := &XetAction{CasURL: "https://cas-server.xethub.hf.co", Token: "tok", Exp: time.Unix(1760000000, 0), SessionID: "01J",
		Href: "https://huggingface.co/api/models/o/r/xet-write-token/main", Auth: map[string]string{}}
	if !reflect.DeepEqual(x, want) {
		t.Errorf("parsed %+v, want %+v", x, want)
	}

	lower := &Action{Header: map[string]string{"x-xet-cas-url": "http://h", "x-xet-access-token": "t",
		"x-xet-token-expiration": " 42 ", "x-xet-verifies-sha256": "TRUE", "x-xet-hash": "hh", "authorization": "Basic a"}}
	x, err = ParseXetAction(lower)
	if err != nil {
		t.Fatal(err)
	}
	if x.CasURL != "http://h" || x.Token != "t" || x.Exp.Unix() != 42 || !x.VerifiesSHA256 || x.XetHash != "hh" ||
		len(x.Auth) != 1 || x.Auth["authorization"] != "Basic a" {
		t.Errorf("lowercase names: %+v", x)
	}
}

// Only an explicit "true" lets uploads skip hashing the file, or downloads leave its hash to git-lfs.
func TestVerifiesSHA256OnlyOnTrue(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "True": true, "TRUE": true, "1": false, "yes": false, "false": false, "": false, " true": false} {
		a := &Action{Header: map[string]string{HeaderCasURL: "http://h", HeaderVerifiesSHA256: v}}
		if x, err := ParseXetAction(a); err != nil || x.VerifiesSHA256 != want || x.SHA256Verified {
			t.Errorf("%s %q: %+v, %v; want %v", HeaderVerifiesSHA256, v, x, err, want)
		}
		a = &Action{Header: map[string]string{HeaderCasURL: "http://h", HeaderSHA256Verified: v}}
		if x, err := ParseXetAction(a); err != nil || x.SHA256Verified != want || x.VerifiesSHA256 {
			t.Errorf("%s %q: %+v, %v; want %v", HeaderSHA256Verified, v, x, err, want)
		}
	}
}

// The errors say what the server left out or got wrong, and never echo credentials.
func TestParseXetActionErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		a    *Action
		want []string
	}{
		"no action":    {nil, []string{"no action"}},
		"no CAS URL":   {&Action{Header: map[string]string{HeaderAccessToken: "secret"}}, []string{HeaderCasURL, "not a Xet server", "plain LFS"}},
		"empty header": {&Action{}, []string{HeaderCasURL, "did not say where its CAS is"}},
		"ftp CAS":      {&Action{Header: map[string]string{HeaderCasURL: "ftp://user:secret@h/?sig=secret"}}, []string{"ftp://h/", "not an http(s) URL"}},
		"no host":      {&Action{Header: map[string]string{HeaderCasURL: "http:///path"}}, []string{"not an http(s) URL"}},
		"not a URL":    {&Action{Header: map[string]string{HeaderCasURL: "http://[::1"}}, []string{"not a URL"}},
		"bad expiry": {&Action{Header: map[string]string{HeaderCasURL: "http://h", HeaderTokenExpiration: "2025-10-09T08:53:20Z"}},
			[]string{HeaderTokenExpiration, "not unix seconds", "2025-10-09"}},
		"long expiry": {&Action{Header: map[string]string{HeaderCasURL: "http://h", HeaderTokenExpiration: strings.Repeat("9", 5000)}},
			[]string{"not unix seconds"}},
	} {
		t.Run(name, func(t *testing.T) {
			x, err := ParseXetAction(tc.a)
			if err == nil {
				t.Fatalf("accepted: %+v", x)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") || len(err.Error()) > 500 {
				t.Errorf("error leaks or is unbounded: %q", err)
			}
		})
	}
}

func TestFile(t *testing.T) {
	h := strings.Repeat("0a", 32)
	if f, err := (&XetAction{XetHash: h}).File(); err != nil || f.String() != h {
		t.Errorf("File: %v, %v", f, err)
	}
	for v, want := range map[string]string{"": "no " + HeaderXetHash, "zz": HeaderXetHash + " header:"} {
		if _, err := (&XetAction{XetHash: v}).File(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("XetHash %q: %v, want an error saying %q", v, err, want)
		}
	}
}

func TestHeaderCaseInsensitive(t *testing.T) {
	h := map[string]string{"x-xet-hash": "a", "X-XET-HASH": "b"}
	for range 20 { // map order varies: the answer must not
		if v := Header(h, HeaderXetHash); v != "b" {
			t.Fatalf("Header = %q, want the least spelling's value", v)
		}
	}
	h[HeaderXetHash] = "c"
	if v := Header(h, HeaderXetHash); v != "c" {
		t.Errorf("Header = %q, want the exact spelling's value", v)
	}
	if v := Header(h, "Authorization"); v != "" {
		t.Errorf("absent header = %q", v)
	}
}

// What clients write: the fields git-lfs sends, nothing unset.
func TestRequestWritesOnlyWhatIsSet(t *testing.T) {
	b, err := json.Marshal(Request{Operation: "upload", Transfers: []string{"xet"}, Objects: []Object{{OID: "ab", Size: 1}}, HashAlgo: "sha256"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"operation":"upload","transfers":["xet"],"objects":[{"oid":"ab","size":1}],"hash_algo":"sha256"}`; string(b) != want {
		t.Errorf("wrote %s\nwant  %s", b, want)
	}
	b, _ = json.Marshal(Result{OID: "ab", Size: 1})
	if want := `{"oid":"ab","size":1}`; string(b) != want {
		t.Errorf("a stored object: wrote %s, want %s", b, want)
	}
}

// A parser fed anything never panics, keeps its errors short, and what it accepts survives a round
// trip through Action.
func FuzzParseXetAction(f *testing.F) {
	f.Add([]byte(`{"href":"http://h/r","header":{"X-Xet-Cas-Url":"http://h","X-Xet-Token-Expiration":"5"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		var a Action
		if json.Unmarshal(data, &a) != nil {
			return
		}
		x, err := ParseXetAction(&a)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if !strings.HasPrefix(x.CasURL, "http") {
			t.Fatalf("accepted CAS URL %q", x.CasURL)
		}
		again, err := ParseXetAction(x.Action(a.ExpiresIn))
		if err != nil {
			t.Fatalf("built action does not parse: %v", err)
		}
		if !reflect.DeepEqual(again, x) {
			t.Fatalf("round trip:\n%+v\n%+v", again, x)
		}
	})
}
