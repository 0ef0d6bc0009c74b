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
	// What would make the line one the users file refuses is refused before the password is read.
	switch {
	case fl.NArg() > 0:
		fmt.Fprintf(stderr, "xet-server hash-password: unexpected argument %q (the user is --user NAME; the password comes on stdin)\n", fl.Arg(0))
		return 2
	case *access != "" && *user == "":
		fmt.Fprintln(stderr, "xet-server hash-password: --access goes with --user")
		return 2
	case *user != "":
		if err := server.CheckUserFields(*user, *access); err != nil {
			fmt.Fprintln(stderr, "xet-server hash-password:", err)
			return 2
		}
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
	if *user == "" {
		fmt.Fprintln(stdout, h)
		return 0
	}
	usersLine, err := server.UsersLine(*user, h, *access)
	if err != nil {
		fmt.Fprintln(stderr, "xet-server hash-password:", err)
		return 1
	}
	fmt.Fprintln(stdout, usersLine)
	return 0
}
