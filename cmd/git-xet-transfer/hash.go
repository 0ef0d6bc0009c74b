package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
)

// runHash implements `git-xet-transfer hash [--chunks] FILE...`.
//
// Without --chunks it prints one line per file: "<xet file hash> <sha256 hex> <size> <path>".
// With --chunks (one file) it prints the file's chunks, one "<chunk hash> <length>" line each: the
// format of xet-core's .chunks reference files. FILE "-" reads stdin. A file that cannot be read is
// reported on stderr (naming it and the cause) and the exit code is 1; the other files are still
// hashed. Usage errors exit with 2.
func runHash(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hash", flag.ContinueOnError)
	fs.SetOutput(stderr)
	chunks := fs.Bool("chunks", false, "print the chunk list (\"<chunk hash> <length>\" per chunk) of one file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: git-xet-transfer hash [--chunks] FILE...   (FILE - reads stdin)")
		fmt.Fprintln(stderr, "Prints \"<xet file hash> <sha256> <size> <path>\" per file, or with --chunks the chunk list of one file.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	files := fs.Args()
	if len(files) == 0 || (*chunks && len(files) != 1) {
		fs.Usage()
		return 2
	}

	out := bufio.NewWriterSize(stdout, 64<<10)
	code := 0
	if *chunks {
		if err := printChunks(out, files[0], stdin); err != nil {
			fmt.Fprintf(stderr, "git-xet-transfer hash: %v\n", err)
			code = 1
		}
	} else {
		for _, path := range files {
			if err := printSummary(out, path, stdin); err != nil {
				fmt.Fprintf(stderr, "git-xet-transfer hash: %v\n", err)
				code = 1
			}
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "git-xet-transfer hash: writing output: %v\n", err)
		return 1
	}
	return code
}

// openInput opens path, or returns stdin for "-". The returned close func is never nil.
func openInput(path string, stdin io.Reader) (io.Reader, func(), error) {
	if path == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err // *PathError names the file and the cause
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: is a directory", path)
	}
	return f, func() { f.Close() }, nil
}

// printSummary writes "<xet file hash> <sha256 hex> <size> <path>" for one file.
func printSummary(w *bufio.Writer, path string, stdin io.Reader) error {
	r, closeFn, err := openInput(path, stdin)
	if err != nil {
		return err
	}
	defer closeFn()
	s, err := chunk.Summarize(r)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	line := make([]byte, 0, 64+1+64+1+20+1+len(path)+1)
	line = append(line, s.FileHash.String()...)
	line = append(line, ' ')
	line = hex.AppendEncode(line, s.SHA256[:])
	line = append(line, ' ')
	line = strconv.AppendInt(line, s.Size, 10)
	line = append(line, ' ')
	line = append(line, path...)
	line = append(line, '\n')
	_, err = w.Write(line)
	return err
}

// printChunks writes "<chunk hash> <length>" per chunk of one file, as the chunks are found.
func printChunks(w *bufio.Writer, path string, stdin io.Reader) error {
	r, closeFn, err := openInput(path, stdin)
	if err != nil {
		return err
	}
	defer closeFn()
	rd := chunk.NewReader(r)
	defer rd.Close()
	var line []byte
	for {
		c, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		line = append(line[:0], c.Hash.String()...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(len(c.Data)), 10)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
}
