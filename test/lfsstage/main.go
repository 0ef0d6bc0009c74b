// Command lfsstage stages files in a git repository as `git add` through git-lfs's clean filter
// would (the object in .git/lfs/objects, its pointer blob in the index) without passing their bytes
// through git-lfs: the set-up of test/scale.sh, which committed 13 GiB through the filter in row 2
// and 2 × 50 versions of 256 MiB in row 3 (about 150 MB/s here, a copy of every byte).
//
// Run it at the top of a work tree; then commit. The files it stages are not in the work tree, so
// the commit does not filter them again (an index entry it writes has no stat data, and git would
// otherwise hash the work tree's file through the clean filter to refresh it). A step that needs the
// bytes reads the object, whose path each mode prints.
//
//	lfsstage random SEED BYTES PATH   BYTES random bytes (AES-CTR, seeded by SEED: the same bytes
//	                                  every run) written as the object, hashed on the way, staged
//	                                  at PATH
//	lfsstage file SRC PATH            SRC staged at PATH; the object is a hard link to SRC
//	lfsstage tree DIR                 every file under DIR staged at its path relative to DIR, the
//	                                  objects hard links (prints nothing)
//
// git-lfs's objects directory is the default one (lfs.storage is not read).
package main

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lfspointer"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lfsstage:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	gitDir, err := git(nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return err
	}
	r := repo{gitDir: strings.TrimSpace(string(gitDir))}
	switch {
	case len(args) == 4 && args[0] == "random":
		size, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("random: %q is not a count of bytes", args[2])
		}
		e, err := r.random(args[1], size, args[3])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, r.object(e.oid))
		return r.stage([]entry{e})
	case len(args) == 3 && args[0] == "file":
		e, err := r.file(args[1], args[2])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, r.object(e.oid))
		return r.stage([]entry{e})
	case len(args) == 2 && args[0] == "tree":
		var entries []entry
		err := filepath.WalkDir(args[1], func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(args[1], p)
			if err != nil {
				return err
			}
			e, err := r.file(p, filepath.ToSlash(rel))
			entries = append(entries, e)
			return err
		})
		if err != nil {
			return err
		}
		return r.stage(entries)
	}
	return errors.New("usage: lfsstage random SEED BYTES PATH | file SRC PATH | tree DIR")
}

type repo struct{ gitDir string }

// entry is a file to stage: its path in the tree and its object.
type entry struct {
	path string
	oid  string
	size int64
}

// object is the path of oid in git-lfs's objects directory.
func (r repo) object(oid string) string {
	return filepath.Join(r.gitDir, "lfs", "objects", oid[:2], oid[2:4], oid)
}

// random writes size seeded random bytes as an object (a temp file renamed to the name its hash
// gives).
func (r repo) random(seed string, size int64, path string) (entry, error) {
	tmpDir := filepath.Join(r.gitDir, "lfs", "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return entry{}, err
	}
	f, err := os.CreateTemp(tmpDir, "lfsstage-")
	if err != nil {
		return entry{}, err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	// AES-128-CTR's keystream, keyed by the seed: 7 GB/s here, against 1.2 GB/s for math/rand's
	// ChaCha8 and 0.25 GB/s for /dev/urandom. Each block is hashed while it is written (the two
	// cores each take one).
	key := sha256.Sum256([]byte("lfsstage:" + seed))
	block, err := aes.NewCipher(key[:16])
	if err != nil {
		return entry{}, err
	}
	stream := cipher.NewCTR(block, make([]byte, aes.BlockSize))
	h := sha256.New()
	buf := make([]byte, 4<<20)
	for left := size; left > 0; {
		b := buf[:min(int64(len(buf)), left)]
		clear(b)
		stream.XORKeyStream(b, b)
		var wg sync.WaitGroup
		wg.Go(func() { h.Write(b) })
		_, err := f.Write(b)
		wg.Wait()
		if err != nil {
			f.Close()
			return entry{}, err
		}
		left -= int64(len(b))
	}
	if err := f.Close(); err != nil {
		return entry{}, err
	}
	e := entry{path: path, oid: hex.EncodeToString(h.Sum(nil)), size: size}
	obj := r.object(e.oid)
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		return entry{}, err
	}
	return e, os.Rename(f.Name(), obj)
}

// file hashes src and links it as its object (kept when the object is there already).
func (r repo) file(src, path string) (entry, error) {
	f, err := os.Open(src)
	if err != nil {
		return entry{}, err
	}
	h := sha256.New()
	size, err := io.Copy(h, f)
	f.Close()
	if err != nil {
		return entry{}, fmt.Errorf("reading %s: %w", src, err)
	}
	e := entry{path: path, oid: hex.EncodeToString(h.Sum(nil)), size: size}
	obj := r.object(e.oid)
	if _, err := os.Stat(obj); err == nil {
		return e, nil
	}
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		return entry{}, err
	}
	if err := os.Link(src, obj); err != nil {
		return entry{}, fmt.Errorf("linking %s as its object (both must be on one file system): %w", src, err)
	}
	return e, nil
}

// stage writes the entries' pointer blobs (one git fast-import, one pack) and puts them in the
// index. The pack holds no deltas (--depth=0), as git gc packs such blobs: fast-import would
// otherwise chain each pointer to the one before, 50 deep, and a push of 10,000 such pointers then
// took 16 user CPU seconds instead of 3, in git-lfs's scan of them (its own pack reader; `git
// cat-file --batch` reads the same blobs in 0.2 s).
func (r repo) stage(entries []entry) error {
	if len(entries) == 0 {
		return nil
	}
	marks := filepath.Join(r.gitDir, "lfsstage.marks")
	defer os.Remove(marks)
	var in bytes.Buffer
	for i, e := range entries {
		ptr := lfspointer.Pointer{Oid: e.oid, Size: e.size}.Encode()
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(ptr), ptr)
	}
	if _, err := git(&in, "fast-import", "--quiet", "--depth=0", "--export-marks="+marks); err != nil {
		return err
	}
	blobs, err := readMarks(marks, len(entries))
	if err != nil {
		return err
	}
	var info bytes.Buffer
	for i, e := range entries {
		fmt.Fprintf(&info, "100644 %s\t%s\x00", blobs[i], e.path)
	}
	_, err = git(&info, "update-index", "-z", "--add", "--index-info")
	return err
}

// readMarks reads fast-import's marks file: ":N SHA" lines, N from 1 to n.
func readMarks(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blobs := make([]string, n)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mark, sha, ok := strings.Cut(sc.Text(), " ")
		i, err := strconv.Atoi(strings.TrimPrefix(mark, ":"))
		if !ok || err != nil || i < 1 || i > n {
			return nil, fmt.Errorf("fast-import's marks: unexpected line %q", sc.Text())
		}
		blobs[i-1] = sha
	}
	for i, b := range blobs {
		if b == "" {
			return nil, fmt.Errorf("fast-import's marks: no blob for entry %d", i+1)
		}
	}
	return blobs, sc.Err()
}

// git runs git in the current directory with stdin, returning its stdout.
func git(stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
