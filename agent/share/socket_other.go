//go:build !linux

package share

import (
	"errors"
	"io"
	"net"
	"os"
)

// supported: sharing needs Linux's abstract sockets; elsewhere every process uploads itself.
const supported = false

var errUnsupported = errors.New("share: not supported on this platform")

func listen(string) (net.Listener, error)                { return nil, errUnsupported }
func dial(string) (net.Conn, error)                      { return nil, errUnsupported }
func checkPeer(net.Conn) error                           { return errUnsupported }
func fast(c net.Conn) io.ReadWriter                      { return c }
func sendPipe(net.Conn, hello, *os.File, *os.File) error { return errUnsupported }
func recvPipe(net.Conn) (hello, *os.File, *os.File, error) {
	return hello{}, nil, nil, errUnsupported
}
func fastFile(f *os.File) io.ReadWriter { return f }
