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
