package mount

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mount is a mounted revision.
type Mount struct {
	dir    string
	server *fuse.Server
	res    *resolver
	served chan struct{} // closed when the serving ended (unmounted)
}

// attrTimeout: the kernel may keep what it learned of names and attributes this long; nothing of
// a revision's tree changes.
const attrTimeout = time.Hour

// Start mounts o.Tree at o.Dir and serves it. A mount left at o.Dir by a process that died is
// cleaned up first; a live mount there is an error.
func Start(o Options) (*Mount, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := prepare(dir); err != nil {
		return nil, err
	}
	s := &fsys{o: o, res: newResolver(o.Find), when: o.Tree.Time()}
	root := &dirNode{s: s, path: "", tree: o.Tree.Root()}
	to := attrTimeout
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:  o.Name,
			Name:    strings.TrimPrefix(FSType, "fuse."),
			Options: []string{"ro", "default_permissions"},
			// Reads of up to 1 MiB cross in one request (kernels since 4.20).
			MaxWrite:      1 << 20,
			DisableXAttrs: true,
			Logger:        log.New(io.Discard, "", 0),
		},
		EntryTimeout: &to, AttrTimeout: &to, NegativeTimeout: &to,
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
		Logger: log.New(io.Discard, "", 0),
	}
	server, err := fs.Mount(dir, root, opts)
	if err != nil {
		s.res.close()
		return nil, fmt.Errorf("mounting at %s: %w", dir, explainMountError(err))
	}
	m := &Mount{dir: dir, server: server, res: s.res, served: make(chan struct{})}
	go func() { // ends when the file system is unmounted; Stop waits for it
		server.Wait()
		close(m.served)
	}()
	return m, nil
}

// Done is closed when the file system is no longer mounted.
func (m *Mount) Done() <-chan struct{} { return m.served }

// Stop unmounts the file system and waits for its serving to end. With files open in it the
// unmount is lazy: the name goes at once, and what is open fails (ENOTCONN) once this process
// exits; Stop then returns without waiting for them.
func (m *Mount) Stop() error {
	defer m.res.close()
	select {
	case <-m.served:
		return nil
	default:
	}
	if err := fusermount(m.dir, false); err != nil {
		if !strings.Contains(err.Error(), "busy") {
			return fmt.Errorf("unmounting %s: %w", m.dir, err)
		}
		if err := fusermount(m.dir, true); err != nil {
			return fmt.Errorf("unmounting %s lazily (files are open in it): %w", m.dir, err)
		}
		return nil
	}
	select {
	case <-m.served:
	case <-time.After(time.Second):
		return fmt.Errorf("unmounted %s, but its serving did not end", m.dir)
	}
	return nil
}

// prepare makes sure dir can be mounted on: it exists (made when missing) and is not mounted; a
// mount of ours whose process died is cleaned up. Nothing under a mount point is touched before
// its state is known: a mount whose process does not answer would hang the caller.
func prepare(dir string) error {
	if mi, ok := mounted(dir); ok {
		switch state := liveness(dir); {
		case mi.fstype != FSType:
			return fmt.Errorf("%s is already a mount point (%s of %s)", dir, mi.fstype, mi.source)
		case state == dead:
			if err := fusermount(dir, true); err != nil {
				return fmt.Errorf("%s is a mount whose process died, and cleaning it up failed: %w", dir, err)
			}
		case state == hung:
			return fmt.Errorf("%s is a mount whose process does not answer: unmount it (git xet-transfer unmount %s)", dir, dir)
		default:
			return fmt.Errorf("%s is already mounted (%s): unmount it first (git xet-transfer unmount %s)", dir, mi.source, dir)
		}
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// Unmount unmounts the mount of ours at dir: a live one (its process then exits), or one whose
// process died or does not answer (lazily). Another kind of mount is refused.
func Unmount(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	mi, ok := mounted(dir)
	switch {
	case !ok:
		return fmt.Errorf("%s is not mounted", dir)
	case mi.fstype != FSType:
		return fmt.Errorf("%s is a %s mount, not one of git-xet-transfer's", dir, mi.fstype)
	}
	if liveness(dir) != alive {
		return fusermount(dir, true)
	}
	if err := fusermount(dir, false); err != nil {
		if strings.Contains(err.Error(), "busy") {
			return fmt.Errorf("%s is busy: a file in it is open (see `fuser -m %s`); close it and try again", dir, dir)
		}
		return err
	}
	return nil
}

// A mount's state, as its statfs says.
type mountState int

const (
	alive mountState = iota
	dead             // its process died: "transport endpoint is not connected"
	hung             // its process does not answer
)

// livenessWait is how long a mount's process has to answer a statfs.
const livenessWait = 2 * time.Second

// liveness asks the mount at dir for its statfs, which the kernel always passes to the file
// system's process (a stat may be answered from the kernel's cache). A process that does not
// answer leaves the goroutine asking blocked until it does (or the mount goes): the callers are
// commands that exit.
func liveness(dir string) mountState {
	res := make(chan error, 1)
	go func() {
		var st syscall.Statfs_t
		res <- syscall.Statfs(dir, &st)
	}()
	select {
	case err := <-res:
		if errors.Is(err, syscall.ENOTCONN) {
			return dead
		}
		return alive
	case <-time.After(livenessWait):
		return hung
	}
}

// fusermount runs fusermount3 (or fusermount) -u on dir, -z (lazy) when asked.
func fusermount(dir string, lazy bool) error {
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	var lastErr error
	for _, bin := range []string{"fusermount3", "fusermount"} {
		path, err := exec.LookPath(bin)
		if err != nil {
			lastErr = err
			continue
		}
		out, err := exec.Command(path, append(args, dir)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s %s: %w: %s", bin, strings.Join(args, " "), dir, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		return syscall.Unmount(dir, flags)
	}
	return fmt.Errorf("unmounting %s needs fusermount3 (Debian and Ubuntu: apt-get install fuse3): %w", dir, lastErr)
}

// explainMountError adds what a user can do to the errors of a failed mount.
func explainMountError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "fusermount") && strings.Contains(msg, "not found"):
		return fmt.Errorf("%w (install fuse3: apt-get install fuse3)", err)
	case strings.Contains(msg, "/dev/fuse"):
		return fmt.Errorf("%w (is the fuse kernel module loaded, and /dev/fuse usable by you?)", err)
	}
	return err
}

// mountInfo is a line of /proc/self/mountinfo.
type mountInfo struct {
	fstype, source string
}

// mounted reports what is mounted at dir.
func mounted(dir string) (mountInfo, bool) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return mountInfo{}, false
	}
	var found mountInfo
	ok := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, s := range f {
			if s == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) || unescapeMount(f[4]) != dir {
			continue
		}
		found, ok = mountInfo{fstype: f[sep+1], source: unescapeMount(f[sep+2])}, true // the last one is on top
	}
	return found, ok
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space, and so on).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
