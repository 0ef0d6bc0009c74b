package download

import "os"

// writebackStep: a large output's write-back to disk is started after each this many bytes
// written, and once more when the last is written (startWriteback).
const writebackStep = 8 << 20

// writeback starts the write-back of a large output while the download writes it. Left alone,
// the kernel starts writing a file's dirty pages only when they are 30 s old or the machine's dirty
// memory passes its threshold, so a whole download would wait in the page cache and the sync that
// follows it (git-lfs's caller, a user, a checkout) would write all of it at once. Started as the
// bytes arrive, the disk writes while the download decodes and hashes, and that sync finds little
// left to write. Nothing waits for it: it is a request to the kernel, not a flush (an fsync is
// still what makes the file durable), and a failed request only leaves it to the kernel.
//
// Concurrency: wrote may be called from any goroutine (the sink calls it under its mutex); the
// requests run on a goroutine of their own, so no writer waits for the disk's queue.
type writeback struct {
	f       *os.File
	pending int64 // bytes written since the last request, under the sink's mu
	kick    chan struct{}
	done    chan struct{}
}

// startWriteback asks the kernel to start writing f's dirty pages (the whole file: pages already
// being written or clean are skipped). A variable so that tests can count the requests.
var startWriteback = startWritebackOS

func newWriteback(f *os.File) *writeback {
	w := &writeback{f: f, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for range w.kick {
			startWriteback(w.f)
		}
	}()
	return w
}

// wrote counts n bytes written and, every writebackStep, asks for a request without waiting
// (one asked while another runs is folded into the next).
func (w *writeback) wrote(n int64) {
	w.pending += n
	if w.pending < writebackStep {
		return
	}
	w.pending = 0
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// close asks for a last request when written is true (the rest of the output), and ends the
// goroutine once its requests are made. Safe to call once.
func (w *writeback) close(written bool) {
	if written {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	close(w.kick)
	<-w.done
}
