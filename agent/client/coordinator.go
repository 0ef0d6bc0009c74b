package client

import (
	"context"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Coordinator is what the client asks, in the middle of a transfer, of the leader of the agent
// processes of a push or fetch (agent/leader), which serves the others' transfers through this
// client too: the versions of a file that one push carries reach different processes together,
// and only the leader sees them all. Solo is the coordinator of a process on its own.
type Coordinator interface {
	// Leading reports whether this process leads: it then runs on every core, and gives turns.
	Leading() bool
	// UploadTurn waits for the turn of an upload of the file at path (size bytes) to the endpoint
	// named endpoint, once the upload is sure to send data there; done ends the turn. It fails
	// only when ctx ends first.
	UploadTurn(ctx context.Context, endpoint, path string, size int64) (done func(), err error)
	// DownloadTurn waits for the turn of a download from endpoint whose plan names xorbs; done
	// ends it. It fails only when ctx ends first. The client asks it only while Leading.
	DownloadTurn(ctx context.Context, endpoint string, xorbs []hash.Hash) (done func(), err error)
	// Recent offers the chunks of the downloads the leader's process completed (git-lfs moves a
	// file into .git/lfs/objects, where the chunk index finds it, only after the agent answered).
	Recent() span.Local
	// Downloaded tells it of a verified download: the file at path of object oid, in git-lfs's
	// temp directory tmp, whose terms lie where terms say (Path "": path).
	Downloaded(path, tmp, oid string, terms []span.Span)
}

// Solo is the Coordinator of a process on its own: no turns, no recent downloads.
type Solo struct{}

func (Solo) Leading() bool { return false }

func (Solo) UploadTurn(context.Context, string, string, int64) (func(), error) { return func() {}, nil }

func (Solo) DownloadTurn(context.Context, string, []hash.Hash) (func(), error) {
	return func() {}, nil
}

func (Solo) Recent() span.Local { return span.Locals(nil) }

func (Solo) Downloaded(string, string, string, []span.Span) {}
