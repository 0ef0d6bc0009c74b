//go:build unix

// Package rawio reads and writes non-blocking file descriptors that are in the Go runtime's poller
// with raw system calls, which skip the scheduler's system-call bookkeeping.
//
// Every ordinary system call of a Go program tells the scheduler it is entering one, and the first
// after the process went idle wakes the runtime's monitor thread, which then polls every 20 µs for
// a while. An agent process that only relays one small message after another (agent/share) goes
// through that twice per object, so the monitor's wake-ups and polling are a large part of its
// CPU. A read or write of a non-blocking descriptor never blocks, so it needs none of the
// bookkeeping; when it would block (EAGAIN) the goroutine waits in the poller as usual, and the
// descriptor's deadlines apply.
package rawio

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// FD reads and writes one non-blocking descriptor through its syscall.RawConn (from an *os.File
// opened on a non-blocking descriptor, or a net.Conn).
//
// Concurrency: like the connection it wraps (one reader and one writer at a time).
type FD struct {
	rc syscall.RawConn
	dl readDeadliner // c's own read deadline, when it has one (an *os.File and a net.Conn do)
}

type readDeadliner interface{ SetReadDeadline(time.Time) error }

// New returns the FD of c, which must be non-blocking and in the poller: an *os.File made by
// os.NewFile from a non-blocking descriptor, or a net.Conn.
func New(c syscall.Conn) (*FD, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	dl, _ := c.(readDeadliner)
	return &FD{rc: rc, dl: dl}, nil
}

// SetReadDeadline sets the read deadline of the descriptor (of what New was given): a Read waiting
// in the poller returns an error once it has passed, which is how its owner stops a reader
// goroutine. It fails when that has no deadlines.
func (f *FD) SetReadDeadline(t time.Time) error {
	if f.dl == nil {
		return errors.New("rawio: no read deadline on this descriptor")
	}
	return f.dl.SetReadDeadline(t)
}

// Read reads up to len(p) bytes, waiting in the poller until some are there. It returns io.EOF at
// the end of the stream.
func (f *FD) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := f.rc.Read(func(fd uintptr) bool {
		for {
			n, errno = rawRead(fd, p)
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the poller while the descriptor is full.
func (f *FD) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	err := f.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			var n int
			n, errno = rawWrite(fd, p[done:])
			switch errno {
			case 0:
				done += n
			case syscall.EINTR:
			case syscall.EAGAIN:
				errno = 0
				return false
			default:
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = errno
	}
	return done, err
}
