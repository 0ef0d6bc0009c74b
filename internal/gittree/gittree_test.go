package gittree

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

const pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"

// A commit's tree reads as git wrote it: directories, plain files with their sizes and content,
// LFS pointers as the objects they name, executables, symbolic links; pack files too.
func TestDirAndBlobs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run(t, dir, "init", "-q")
	write := func(name, text string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "hello\n", 0o644)
	write("sub/model.bin", pointer, 0o644)
	write("sub/run.sh", "#!/bin/sh\n", 0o755)
	write("empty", "", 0o644)
	os.Symlink("a.txt", filepath.Join(dir, "link"))
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-qm", "one")
	run(t, dir, "gc", "-q") // into a pack
	tr, err := Open(filepath.Join(dir, "sub"), run(t, dir, "rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := tr.Dir(tr.Root())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]Entry{}
	for _, e := range root {
		kinds[e.Name] = e
	}
	if e := kinds["a.txt"]; e.Kind != File || e.Size != 6 {
		t.Errorf("a.txt: %+v", e)
	}
	if e := kinds["link"]; e.Kind != Symlink || e.Size != 5 {
		t.Errorf("link: %+v", e)
	}
	if e := kinds["empty"]; e.Kind != File || e.Size != 0 {
		t.Errorf("empty: %+v", e)
	}
	sub, err := tr.Dir(kinds["sub"].Hash)
	if err != nil || kinds["sub"].Kind != Dir || len(sub) != 2 {
		t.Fatalf("sub: %+v %v", sub, err)
	}
	if e := sub[0]; e.Name != "model.bin" || e.Kind != LFS || e.Size != 12345 || e.Oid != "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393" {
		t.Errorf("model.bin: %+v", e)
	}
	if e := sub[1]; e.Name != "run.sh" || e.Kind != File || !e.Executable {
		t.Errorf("run.sh: %+v", e)
	}
	b, err := tr.Blob(kinds["a.txt"].Hash, 100)
	if err != nil || string(b) != "hello\n" {
		t.Fatalf("blob: %q %v", b, err)
	}
	if _, err := tr.Blob(kinds["a.txt"].Hash, 3); err == nil {
		t.Fatal("a blob over the limit was read")
	}
	var buf bytes.Buffer
	if err := tr.CopyBlob(kinds["a.txt"].Hash, &buf); err != nil || buf.String() != "hello\n" {
		t.Fatalf("CopyBlob: %q %v", buf.String(), err)
	}
}
