//go:build unix

package summary

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// writeTimeout bounds the write to the terminal: a terminal whose output is stopped (Ctrl-S) must
// not keep the agent, and git-lfs with it, from ending.
const writeTimeout = time.Second

// Print writes line to the controlling terminal, on a line of its own, when the user is looking
// at it: the process has one, its process group is the terminal's foreground group (a push
// started in the background stays silent rather than be stopped by SIGTTOU), and git-lfs (the
// parent) writes its own stderr there. Anything else (CI, a script, stderr redirected) writes
// nothing. The line starts with a carriage return and is padded to the terminal's width: git-lfs
// leaves its progress line open, ended by a carriage return, until the agents have exited, and
// then writes its final line over that row; the summary takes the row, and git-lfs's final line
// comes on the next. err says why nothing was written (for the log).
func Print(line string) error {
	// O_NONBLOCK puts the descriptor in the runtime's poller, so the write can have a deadline;
	// opening /dev/tty never waits (no controlling terminal: ENXIO at once).
	f, err := os.OpenFile("/dev/tty", os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("no controlling terminal: %w", err)
	}
	defer f.Close()
	if err := looking(int(f.Fd())); err != nil {
		return err
	}
	width := 80
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		width = int(ws.Col)
	}
	_ = f.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = f.WriteString(framed(line, width))
	return err
}

// looking reports (nil) whether the terminal tty is where the user sees git-lfs's output: this
// process's group is its foreground group, and git-lfs's stderr is this controlling terminal
// (where /proc says so; elsewhere the first test alone decides).
func looking(tty int) error {
	fg, err := unix.IoctlGetInt(tty, unix.TIOCGPGRP)
	if err != nil {
		return fmt.Errorf("the terminal's foreground group: %w", err)
	}
	if fg != unix.Getpgrp() {
		return errors.New("not in the terminal's foreground (a background job)")
	}
	ctty, ok := procStat("self")
	if !ok {
		return nil
	}
	st, err := gitLFSStderr()
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || uint64(st.Rdev) != ctty.tty {
		return errors.New("git-lfs's stderr is not the terminal")
	}
	return nil
}

// gitLFSStderr is what git-lfs's stderr is: that of the nearest ancestor whose stderr is not this
// process's (git-lfs reads the agent's stderr through a pipe, and may start the agent through a
// shell, which shares that pipe).
func gitLFSStderr() (unix.Stat_t, error) {
	var own unix.Stat_t
	if err := unix.Fstat(2, &own); err != nil {
		return own, fmt.Errorf("this process's stderr: %w", err)
	}
	pid := os.Getppid()
	for range 4 {
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d/fd/2", pid), &st); err != nil {
			return st, fmt.Errorf("git-lfs's stderr: %w", err)
		}
		if st.Dev != own.Dev || st.Ino != own.Ino {
			return st, nil
		}
		s, ok := procStat(strconv.Itoa(pid))
		if !ok {
			break
		}
		pid = s.ppid
	}
	return unix.Stat_t{}, errors.New("git-lfs's stderr: not found among the agent's ancestors")
}

// stat is what procStat reads of /proc/PID/stat.
type stat struct {
	ppid int
	tty  uint64 // the controlling terminal's device number (tty_nr), 0 for none
}

// procStat reads /proc/PID/stat (pid "self" for this process); ok is false where /proc does not
// tell. tty_nr is the device number in the kernel's encoding of Stat_t.Rdev on Linux.
func procStat(pid string) (stat, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return stat{}, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from its end.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 5 { // state, ppid, pgrp, session, tty_nr
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	tty, err2 := strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil {
		return stat{}, false
	}
	return stat{ppid: ppid, tty: tty}, true
}
