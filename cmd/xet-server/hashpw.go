package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
)

// runHashPassword reads one password line on stdin and prints its $pbkdf2-sha256$ hash, ready for
// the users file: `printf '%s\n' "$PW" | xet-server hash-password --user alice`.
func runHashPassword(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("xet-server hash-password", flag.ContinueOnError)
	fl.SetOutput(stderr)
	user := fl.String("user", "", "print a whole users-file line for this user")
	access := fl.String("access", "", "with --user: read or write (default write)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Fprintln(stderr, "xet-server hash-password:", err)
		return 1
	}
	pw := strings.TrimRight(line, "\r\n")
	if len(pw) < 8 {
		fmt.Fprintln(stderr, "xet-server hash-password: give a password of at least 8 characters on stdin")
		return 2
	}
	h, err := server.HashPassword(pw)
	if err != nil {
		fmt.Fprintln(stderr, "xet-server hash-password:", err)
		return 1
	}
	switch {
	case *user != "" && *access != "":
		fmt.Fprintf(stdout, "%s:%s:%s\n", *user, h, *access)
	case *user != "":
		fmt.Fprintf(stdout, "%s:%s\n", *user, h)
	default:
		fmt.Fprintln(stdout, h)
	}
	return 0
}
