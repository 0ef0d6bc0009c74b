package summary

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1.00 kB"}, {1234, "1.23 kB"}, {12345, "12.3 kB"},
		{123456, "123 kB"}, {999_499, "999 kB"}, {999_500, "1.00 MB"}, {12_300_000, "12.3 MB"},
		{1_070_000_000, "1.07 GB"}, {1 << 30, "1.07 GB"}, {-5, "0 B"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		part, whole int64
		want        string
	}{
		{989, 1000, "98.9 %"}, {1000, 1000, "100.0 %"}, {99999, 100000, "99.9 %"}, {0, 1000, "0.0 %"},
		{1, 1_000_000, "0.1 %"}, {5, 0, "0.0 %"}, {500, 1000, "50.0 %"},
	} {
		if got := Percent(c.part, c.whole); got != c.want {
			t.Errorf("Percent(%d, %d) = %q, want %q", c.part, c.whole, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct {
		t    Totals
		want string
	}{
		{Totals{Upload: true, Files: 4, Bytes: 1_070_000_000, Deduped: 1_058_230_000, Sent: 12_300_000},
			"xet: 4 files, 1.07 GB; sent 12.3 MB (98.9 % already stored)"},
		{Totals{Files: 1, Bytes: 1_070_000_000, Deduped: 1_058_230_000, Received: 12_300_000},
			"xet: 1 file, 1.07 GB; received 12.3 MB (98.9 % already local)"},
		{Totals{Upload: true, Files: 2, Bytes: 2000, New: 1000, Deduped: 1000},
			"xet: 2 files, 2.00 kB; stored 1.00 kB new (50.0 % already stored)"},
		{Totals{Files: 2, Bytes: 2000, New: 2000},
			"xet: 2 files, 2.00 kB; copied 2.00 kB from the store (0.0 % already local)"},
	} {
		if got := Line(c.t); got != c.want {
			t.Errorf("Line(%+v) =\n %q, want\n %q", c.t, got, c.want)
		}
	}
}

// The transport counts the body bytes each way, as a server counts what it receives.
func TestTransportCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write([]byte(strings.Repeat("y", 2*len(b))))
	}))
	defer srv.Close()
	var tally Tally
	c := &http.Client{Transport: tally.Transport(nil)}
	for range 3 {
		res, err := c.Post(srv.URL, "text/plain", strings.NewReader(strings.Repeat("x", 1000)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if got := tally.Totals(); got.Sent != 3000 || got.Received != 6000 {
		t.Fatalf("sent %d, received %d; want 3000 and 6000", got.Sent, got.Received)
	}
}

// The line takes the row of git-lfs's open progress line: from its start, the rest of the row
// blanked (git-lfs pads its line to the width), a line end; a line wider than the row is not cut.
func TestFramed(t *testing.T) {
	if got, want := framed("xet: 1 file", 16), "\rxet: 1 file    \n"; got != want {
		t.Errorf("framed = %q, want %q", got, want)
	}
	if got, want := framed("xet: 1 file, 2.00 kB", 16), "\rxet: 1 file, 2.00 kB\n"; got != want {
		t.Errorf("framed = %q, want %q", got, want)
	}
}
