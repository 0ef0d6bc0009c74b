package proctree

import (
	"golang.org/x/sys/unix"
)

// sZomb is a process's state once it has ended and waits for its parent (SZOMB, sys/proc.h).
const sZomb = 5

// mayHaveChildren is true: macOS has no cheap per-thread list of children, and the process table
// is one sysctl.
func mayHaveChildren() bool { return true }

// snapshot reads the process table (sysctl kern.proc.all, what ps reads), leaving out zombies.
// On an error it is empty: nothing is signalled.
func snapshot() []proc {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	procs := make([]proc, 0, len(kps))
	for i := range kps {
		p := &kps[i]
		if p.Proc.P_pid > 0 && p.Proc.P_stat != sZomb {
			procs = append(procs, proc{int(p.Proc.P_pid), int(p.Eproc.Ppid)})
		}
	}
	return procs
}

// running reports whether pid is a process that has not ended (a zombie has).
func running(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && int(kp.Proc.P_pid) == pid && kp.Proc.P_stat != sZomb
}
