// Command git-xet-transfer is a Git LFS custom transfer agent for the Xet storage protocol, and the
// tools around it. Run with no arguments (as git-lfs does) it speaks the custom-transfer protocol on
// stdin/stdout; the subcommands below are for people.
package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand: it gets its arguments (after the name) and the standard streams, and
// returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"install", "configure git-lfs to use this agent [--local|--global|--system]", runInstall},
		{"uninstall", "remove what install wrote [--local|--global|--system]", runUninstall},
		{"status", "show the configuration, caches, stores and versions", runStatus},
		{"migrate", "move this repository's LFS objects to Xet, without rewriting history (see migrate --help)", runMigrate},
		{"fsck", "check an embedded Xet store: no entry naming a missing xorb or file [--store DIR] [--clean-temp] [--verify-data [--repair]]", runFsck},
		{"track", "same as `git lfs track` (choose the files stored through LFS/Xet)", runTrack},
		{"transfer", "run the transfer agent (what git-lfs runs; same as no command)", runAgent},
		{"version", "print the version", runVersion},
		{"hash", "print Xet file hashes (or chunk lists with --chunks) of files", runHash},
		{"inspect", "describe a xorb or shard file as JSON", runInspect},
		{"mount", "show a revision's files at DIR, LFS files read through Xet on demand [--rev REV] [--cache-size SIZE] [--background] DIR (Linux)", runMount},
		{"unmount", "unmount what mount mounted at DIR (also one whose process died)", runUnmount},
		{"log", "per commit and LFS path: the bytes shared with the previous version, and the new ones [--json] [REV-RANGE] [-- PATH…]", runLog},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runAgent(nil, stdin, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	if args[0] == "--version" { // as git --version and xet-server --version
		return runVersion(args[1:], stdin, stdout, stderr)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "git-xet-transfer: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: git-xet-transfer [command] [arguments]")
	fmt.Fprintln(w, "With no command it runs as the Git LFS custom transfer agent. Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}
