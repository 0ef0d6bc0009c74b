//go:build !linux

package mount

// Mount is a mounted revision (Linux only).
type Mount struct{}

// Start mounts o.Tree at o.Dir: not on this platform.
func Start(o Options) (*Mount, error) { return nil, ErrNotSupported }

// Done is closed when the file system is no longer mounted.
func (m *Mount) Done() <-chan struct{} { return nil }

// Stop unmounts the file system.
func (m *Mount) Stop() error { return ErrNotSupported }

// Unmount unmounts the mount of ours at dir: not on this platform.
func Unmount(dir string) error { return ErrNotSupported }
