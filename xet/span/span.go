// Package span is the vocabulary of chunks already on this machine: a Span says which chunks of a
// xorb a local file holds, and where; a Local finds the spans of some xorbs. Whoever knows of local
// files (the chunk index of .git/lfs/objects, an interrupted download's kept part, the downloads a
// leader completed) offers them as a Local; whoever writes a Xet file (xet/download, the mount)
// copies the chunks they name instead of fetching them. It imports nothing of the project but
// xet/hash, so the caches that offer spans need not import the code that reads them.
package span

import "github.com/git-xet-transfer/git-xet-transfer/xet/hash"

// Local finds chunks of xorbs that are already in files on this machine (earlier versions of a
// file, the verified part of an interrupted download). It is a hint, never trusted: every chunk
// read from a span is hashed and compared with the span's entry (and, in a term only partly local,
// with the xorb footer's hash of that chunk) before it is written, local bytes that do not verify
// are fetched instead, and the whole file is verified (file hash, SHA-256) as when nothing is
// local.
type Local interface {
	// Spans returns spans holding chunks of any of xorbs (in any order; they may overlap).
	Spans(xorbs []hash.Hash) []Span
}

// Span says that a local file holds, from byte Pos on, chunks [Start, Start+len(Chunks)) of Xorb,
// one after the other, with the hashes and sizes of Chunks. Path "" in download.Request.OnTerm
// means the download's own output.
type Span struct {
	Path   string
	Pos    int64
	Xorb   hash.Hash
	Start  uint32
	Chunks []hash.Entry
	// XorbEnd, when not 0, is where the chunk after the span starts in the xorb's serialized
	// chunks: a resumed download fetches the rest of the term from there (download.Request.OnPart).
	XorbEnd uint64
}

// Bytes is the length of the span in the file.
func (s Span) Bytes() int64 {
	var n int64
	for _, e := range s.Chunks {
		n += int64(e.Size)
	}
	return n
}

// Locals offers the spans of several sources, in order.
type Locals []Local

// Spans implements Local.
func (l Locals) Spans(xs []hash.Hash) []Span {
	var out []Span
	for _, s := range l {
		out = append(out, s.Spans(xs)...)
	}
	return out
}
