// Package summary is the one line an interactive user sees after a transfer run of git-lfs
// through the agent: how many files, their logical size, the bytes that really crossed the
// network, and the share that was already there. It holds the figures (Tally, filled by the leader
// of a push's agents and by the client's HTTP transport), the line's wording (Line), and where it
// may be written: the controlling terminal, only when git-lfs's own output goes there
// (terminal_*.go). Nothing here reads git config or the environment: the command decides whether
// to print.
package summary

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Tally adds up what one agent process did for a transfer run: the transfers it answered (its
// own and those it served as the leader) and the bytes its HTTP requests carried. Safe for
// concurrent use; the zero value is ready.
type Tally struct {
	files, bytes, deduped, newBytes atomic.Int64
	sent, received                  atomic.Int64
	upload                          atomic.Bool // a run goes one way: the direction of its transfers
}

// Transfer records one completed upload (or download) of size logical bytes, deduped of them
// already there (stored on the CAS for an upload, held locally for a download) and newBytes
// stored or fetched.
func (t *Tally) Transfer(upload bool, size, deduped, newBytes int64) {
	if upload {
		t.upload.Store(true)
	}
	t.files.Add(1)
	t.bytes.Add(size)
	t.deduped.Add(deduped)
	t.newBytes.Add(newBytes)
}

// Totals are a Tally's figures at one moment.
type Totals struct {
	Upload   bool  // the run's direction
	Files    int64 // transfers completed
	Bytes    int64 // their logical size
	Deduped  int64 // bytes of them already stored (upload) or already local (download)
	New      int64 // chunk bytes not already there (before compression)
	Sent     int64 // HTTP request body bytes
	Received int64 // HTTP response body bytes
}

// Totals returns the figures so far.
func (t *Tally) Totals() Totals {
	return Totals{Upload: t.upload.Load(), Files: t.files.Load(), Bytes: t.bytes.Load(), Deduped: t.deduped.Load(),
		New: t.newBytes.Load(), Sent: t.sent.Load(), Received: t.received.Load()}
}

// Line is the summary of t, without a line end, e.g.
//
//	xet: 4 files, 1.07 GB; sent 12.3 MB (98.9 % already stored)
//	xet: 4 files, 1.07 GB; received 12.3 MB (98.9 % already local)
//
// The first size is the files' logical size; the second what went over the network (HTTP bodies).
// A run that used no network (the embedded store of a local remote) says how many bytes were new
// instead.
func Line(t Totals) string {
	files := "files"
	if t.Files == 1 {
		files = "file"
	}
	head := fmt.Sprintf("xet: %d %s, %s; ", t.Files, files, Bytes(t.Bytes))
	share := Percent(t.Deduped, t.Bytes)
	network := t.Sent+t.Received > 0
	switch {
	case t.Upload && network:
		return head + fmt.Sprintf("sent %s (%s already stored)", Bytes(t.Sent), share)
	case t.Upload:
		return head + fmt.Sprintf("stored %s new (%s already stored)", Bytes(t.New), share)
	case network:
		return head + fmt.Sprintf("received %s (%s already local)", Bytes(t.Received), share)
	default:
		return head + fmt.Sprintf("copied %s from the store (%s already local)", Bytes(t.New), share)
	}
}

// Bytes is n in decimal units with three significant digits, as git-lfs's progress shows sizes:
// 999 B, 1.00 kB, 12.3 MB, 123 MB, 1.07 GB.
func Bytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", max(n, 0))
	}
	units := []string{"kB", "MB", "GB", "TB", "PB", "EB"}
	v := float64(n) / 1000
	u := 0
	// Rounding decides the unit: 999,950 bytes show as 1.00 MB, not 1000 kB.
	for v >= 999.5 && u < len(units)-1 {
		v /= 1000
		u++
	}
	switch {
	case v >= 99.95:
		return fmt.Sprintf("%.0f %s", v, units[u])
	case v >= 9.995:
		return fmt.Sprintf("%.1f %s", v, units[u])
	}
	return fmt.Sprintf("%.2f %s", v, units[u])
}

// Percent is part of whole with one decimal, "98.9 %". It says 100.0 % only when part is all of
// whole, and 0.0 % only when part is nothing: a push that sent something never reads as all
// stored.
func Percent(part, whole int64) string {
	if whole <= 0 {
		return "0.0 %"
	}
	p := 100 * float64(part) / float64(whole)
	switch {
	case part >= whole:
		p = 100
	case p >= 99.95:
		p = 99.9
	case part > 0 && p < 0.05:
		p = 0.1
	case part <= 0:
		p = 0
	}
	return fmt.Sprintf("%.1f %%", p)
}

// framed is line as Print writes it over the row of an open progress line of width columns: from
// the row's start, the rest of the row blanked (git-lfs pads its progress line to the width), a
// line end.
func framed(line string, width int) string {
	pad := max(width-1-len(line), 0)
	return "\r" + line + strings.Repeat(" ", pad) + "\n"
}
