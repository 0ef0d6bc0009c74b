package share

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/git-xet-transfer/git-xet-transfer/internal/rawio"
)

// supported: Linux has the abstract socket namespace and SO_PEERCRED.
const supported = true

// listen binds the abstract socket name ("@..."); it fails when a leader holds it.
func listen(name string) (net.Listener, error) {
	return net.Listen("unix", name)
}

// dial connects to the leader of name and checks that it runs as this user.
func dial(name string) (net.Conn, error) {
	c, err := net.Dial("unix", name)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkPeer refuses a peer that runs as another user: an abstract socket has no file permissions,
// so any local user could bind or connect to the name.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("share: not a unix socket")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("share: the peer's credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("share: the peer runs as user %d, not %d", cred.Uid, os.Getuid())
	}
	return nil
}

// sendPipe sends h with in and out attached (SCM_RIGHTS). The descriptors are taken through
// SyscallConn: os.File.Fd would put them back in blocking mode.
func sendPipe(c net.Conn, h hello, in, out *os.File) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("share: not a unix socket")
	}
	b, err := frame(h)
	if err != nil {
		return err
	}
	inRC, err := in.SyscallConn()
	if err != nil {
		return err
	}
	outRC, err := out.SyscallConn()
	if err != nil {
		return err
	}
	n := 0
	var werr error
	cerr := inRC.Control(func(infd uintptr) {
		werr = outRC.Control(func(outfd uintptr) {
			n, _, werr = uc.WriteMsgUnix(b, syscall.UnixRights(int(infd), int(outfd)), nil)
		})
	})
	if err := errors.Join(cerr, werr); err != nil {
		return err
	}
	if n < len(b) { // the descriptors went with the first bytes
		_, err = fast(c).Write(b[n:])
	}
	return err
}

// recvPipe reads a follower's hello and the two descriptors that come with it, as files in the
// runtime's poller.
func recvPipe(c net.Conn) (h hello, in, out *os.File, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return h, nil, nil, errors.New("share: not a unix socket")
	}
	var hdr [4]byte
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(hdr[:], oob)
	var fds []int
	if oobn > 0 {
		if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if more, perr := syscall.ParseUnixRights(&m); perr == nil {
					fds = append(fds, more...)
				}
			}
		}
	}
	fail := func(err error) (hello, *os.File, *os.File, error) {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return hello{}, nil, nil, err
	}
	if err != nil {
		return fail(err)
	}
	if len(fds) != 2 {
		return fail(errNoPipe)
	}
	if n < len(hdr) {
		if _, err := io.ReadFull(fast(c), hdr[n:]); err != nil {
			return fail(err)
		}
	}
	if err := readBody(fast(c), hdr, &h); err != nil {
		return fail(err)
	}
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
		if err := syscall.SetNonblock(fd, true); err != nil {
			return fail(err)
		}
	}
	return h, os.NewFile(uintptr(fds[0]), fmt.Sprintf("stdin of agent %d", h.Pid)),
		os.NewFile(uintptr(fds[1]), fmt.Sprintf("stdout of agent %d", h.Pid)), nil
}

// fastFile returns f's reads and writes as raw system calls (f is non-blocking, in the poller).
func fastFile(f *os.File) io.ReadWriter {
	if r, err := rawio.New(f); err == nil {
		return r
	}
	return f
}

// fast returns c's reads and writes as raw system calls (internal/rawio): a follower that only
// relays messages then does not wake the runtime's monitor thread for each.
func fast(c net.Conn) io.ReadWriter {
	if sc, ok := c.(syscall.Conn); ok {
		if f, err := rawio.New(sc); err == nil {
			return f
		}
	}
	return c
}
