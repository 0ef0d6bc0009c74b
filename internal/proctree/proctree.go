// Package proctree stops the programs a process started and no longer waits for.
//
// git-lfs's credential helpers (`git credential fill`, askpass) and its ssh take no context: a
// process that stops while one of them waits for a prompt or a keyring leaves it running, with
// the helper git started under it, after the process itself is gone. Stop ends them.
package proctree

import (
	"time"
)

// Stop ends the processes descended from this one: SIGTERM to each, then, for those still running
// after grace, SIGKILL. It returns how many it signalled. A process that stops calls it last, when
// it waits for nothing it started. Programs that detach on purpose (a new session and a double
// fork, as git's credential-cache daemon does) are no longer descendants by then and are left
// alone. Linux (it reads /proc) and macOS (sysctl kern.proc, as ps); elsewhere (Windows) it stops
// nothing and returns 0.
func Stop(grace time.Duration) int { return stop(grace) }
