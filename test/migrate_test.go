package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent/migrate"
	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/server"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// lfsTestServer is git-lfs's reference server (github.com/git-lfs/lfs-test-server) on loopback, with
// one user.
type lfsTestServer struct {
	url     string // http://127.0.0.1:PORT
	content string // its object directory
}

const ltsUser, ltsPass = "olduser", "oldpass"

func startLFSTestServer(t *testing.T) *lfsTestServer {
	t.Helper()
	return startLFSTestServerAs(t, "")
}

// startLFSTestServerAs is lfs-test-server on loopback whose URLs name the host name (with its
// port) instead of its address ("" = the address).
func startLFSTestServerAs(t *testing.T, name string) *lfsTestServer {
	t.Helper()
	bin, err := exec.LookPath("lfs-test-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("lfs-test-server is required under CI=true (test/install-lfs-test-server.sh builds it)")
		}
		t.Skip("lfs-test-server is not installed (test/install-lfs-test-server.sh builds it)")
	}
	addr := servertest.FreeAddr(t)
	host := addr
	if name != "" {
		_, port, _ := net.SplitHostPort(addr)
		host = net.JoinHostPort(name, port)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "LFS_LISTEN=tcp://"+addr, "LFS_HOST="+host, "LFS_SCHEME=http",
		"LFS_ADMINUSER=admin", "LFS_ADMINPASS=adminpass", "LFS_CONTENTPATH="+filepath.Join(dir, "content"),
		"LFS_METADB="+filepath.Join(dir, "lfs.db"))
	var logb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &lfsTestServer{url: "http://" + host, content: filepath.Join(dir, "content")}
	ok := testutil.Eventually(10*time.Second, func() bool {
		req, _ := http.NewRequest("POST", "http://"+addr+"/mgmt/add", strings.NewReader("name="+ltsUser+"&password="+ltsPass))
		req.SetBasicAuth("admin", "adminpass")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode < 400
	})
	if !ok {
		t.Fatalf("lfs-test-server did not start:\n%s", logb.String())
	}
	return s
}

// legacyHistory is a repository whose LFS objects were pushed with plain git-lfs to the old server:
// commits editing 1 % of two files (random and a float32 tensor) each, small files added over time,
// and files git-lfs does not take for pointers. It returns the work tree and the bare remote.
func legacyHistory(t *testing.T, e *env, lts *lfsTestServer, commits int) (work, remote string) {
	t.Helper()
	e.git("", "lfs", "install")
	e.git("", "config", "--global", "credential.helper", "store")
	writeFile(t, filepath.Join(e.home, ".git-credentials"), []byte(strings.Replace(lts.url, "://", "://"+ltsUser+":"+ltsPass+"@", 1)+"\n"))
	work, remote = e.localRepo(repoOpts{})
	e.git(work, "config", "lfs.url", lts.url+"/")
	e.git(work, "config", "lfs.locksverify", "false")
	big := testutil.RandomBytes(4<<20, 11)
	ten := tensor(1 << 20)
	// Not pointers, though they look alike: git-lfs leaves them alone, and so must migrate.
	writeFile(t, filepath.Join(work, "fake-pointer.txt"), []byte("version https://git-lfs.github.com/spec/v1\noid sha256:nothex\nsize 12\n"))
	writeFile(t, filepath.Join(work, "big-text.txt"), []byte("version https://git-lfs.github.com/spec/v1\n"+strings.Repeat("x", 2000)))
	for c := 0; c < commits; c++ {
		copy(big[(c*397_000)%(4<<20-50_000):], testutil.RandomBytes(42_000, uint64(100+c)))
		copy(ten[(c*131_000)%(4<<20-20_000):], testutil.RandomBytes(10_000, uint64(200+c)))
		writeFile(t, filepath.Join(work, "model.bin"), big)
		writeFile(t, filepath.Join(work, "weights", "tensor.bin"), ten)
		for i := 0; i < 5; i++ {
			writeFile(t, filepath.Join(work, "small", fmt.Sprintf("c%02d-%d.bin", c, i)), testutil.RandomBytes(1000+i*900, uint64(1000+c*10+i)))
		}
		e.git(work, "add", ".")
		e.git(work, "commit", "-qm", fmt.Sprintf("version %d", c))
	}
	e.git(work, "push", "-q", "origin", "main")
	return work, remote
}

// migrate runs `git-xet-transfer migrate args...` in dir and returns its output and exit code.
func (e *env) migrate(dir string, args ...string) (string, int) {
	e.t.Helper()
	return e.migrateWith(filepath.Join(binDir, "git-xet-transfer"), dir, nil, args...)
}

// migrateWith is migrate run by the binary bin with extra environment variables.
func (e *env) migrateWith(bin, dir string, vars []string, args ...string) (string, int) {
	e.t.Helper()
	c := e.cmd(dir, bin, append([]string{"migrate"}, args...)...)
	c.Env = append(c.Env, vars...)
	out, err := c.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("migrate: %v", err)
	}
	return string(out), code
}

// buildCrashingAgent builds git-xet-transfer with the build tag xetcrash, the only build that
// kills itself at the point migrate.CrashEnv names, and returns its path.
func buildCrashingAgent(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the crash points use SIGKILL (unix)")
	}
	bin := filepath.Join(t.TempDir(), "git-xet-transfer")
	if out, err := exec.Command("go", "build", "-tags", "xetcrash", "-o", bin, "../cmd/git-xet-transfer").CombinedOutput(); err != nil {
		t.Fatalf("building git-xet-transfer with the crash points: %v\n%s", err, out)
	}
	return bin
}

var (
	reMigrated = regexp.MustCompile(`(?:migrated|would migrate[^:]*): (\d+) objects`)
	reStored   = regexp.MustCompile(`stored on the target: [^(]*\((\d+) bytes`)
	reObjects  = regexp.MustCompile(`: (\d+) LFS objects, `)
)

func figure(t *testing.T, re *regexp.Regexp, out string) int64 {
	t.Helper()
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// everyVersionClones checks out every commit of main in a fresh clone (through the agent) and in the
// original, and compares the trees.
func everyVersionClones(t *testing.T, e *env, work, clone string) {
	t.Helper()
	revs := strings.Fields(e.git(work, "rev-list", "main"))
	for _, c := range revs {
		e.git(work, "checkout", "-q", c)
		e.git(clone, "checkout", "-q", c)
		sameTree(t, work, clone)
	}
	e.git(work, "checkout", "-q", "main")
	t.Logf("compared %d versions", len(revs))
}

// A history pushed with plain git-lfs to lfs-test-server migrates to the embedded store of its local
// remote: objects missing or corrupt locally come from the old server (verified), versions dedupe
// against each other, every version of every file clones through the agent afterwards, and a second
// run uploads nothing.
func TestMigrateToEmbeddedStore(t *testing.T) {
	lts := startLFSTestServer(t)
	e := newEnv(t)
	work, remote := legacyHistory(t, e, lts, 6)
	// One object only on the old server, one corrupt locally.
	lfsDir := filepath.Join(work, ".git", "lfs", "objects")
	var files []string
	filepath.WalkDir(lfsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 40 {
		t.Fatalf("%d local objects", len(files))
	}
	os.Remove(files[0])
	b, _ := os.ReadFile(files[1])
	b[len(b)/2] ^= 0xff
	os.WriteFile(files[1], b, 0o644)

	dry, code := e.migrate(work, "--dry-run", "--to", remote)
	if code != 0 {
		t.Fatalf("dry run: %d\n%s", code, dry)
	}
	if _, err := os.Stat(filepath.Join(remote, "xet")); err == nil {
		t.Fatalf("the dry run created the target store")
	}
	out, code := e.migrate(work, "--to", remote)
	if code != 0 {
		t.Fatalf("migrate: %d\n%s", code, out)
	}
	t.Logf("migrate:\n%s", out)
	n, logical, stored := figure(t, reMigrated, out), figure(t, reObjects, out), figure(t, reStored, out)
	if n != logical || n != figure(t, reObjects, dry) {
		t.Errorf("migrated %d of %d objects; the dry run counted %d", n, logical, figure(t, reObjects, dry))
	}
	if est := figure(t, reStored, dry); est < stored*90/100 || est > stored*110/100 { // the issue: within 10 %
		t.Errorf("dry-run estimate %d bytes, real %d", est, stored)
	}
	if ok, _ := verifyLocalObjects(files[1]); !ok {
		t.Errorf("the corrupt local object was not replaced by the old server's copy")
	}
	again, code := e.migrate(work, "--to", remote)
	if code != 0 || figure(t, reMigrated, again) != 0 {
		t.Errorf("second run: %d\n%s", code, again)
	}

	e.install()
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", remote, clone)
	everyVersionClones(t, e, work, clone)
	if n := len(e.logLines(`"op":"download"`, `"mode":"embedded"`)); n == 0 {
		t.Errorf("the clone did not read the embedded store")
	}
}

// verifyLocalObjects reports whether the file at path holds the object its name says.
func verifyLocalObjects(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return fmt.Sprintf("%x", sha256Sum(b)) == filepath.Base(path), nil
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

// snapshot is what must not change in a dry run: the repository's config, status, refs and LFS
// objects, and every file under the target's data directory.
func snapshot(t *testing.T, e *env, work, data string) string {
	t.Helper()
	var b strings.Builder
	cfg, _ := os.ReadFile(filepath.Join(work, ".git", "config"))
	b.Write(cfg)
	b.WriteString(e.git(work, "status", "--porcelain"))
	b.WriteString(e.git(work, "show-ref"))
	for _, root := range []string{filepath.Join(work, ".git", "lfs"), filepath.Join(work, ".git", "xet"), data} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				fi, _ := d.Info()
				fmt.Fprintf(&b, "%s %d\n", p, fi.Size())
			}
			return nil
		})
	}
	return b.String()
}

// Migration to xet-server: a pointer whose object exists nowhere (a pointer with an extension line,
// as git-lfs writes them) is reported by path, commit and oid, the rest migrates, the exit status
// says it was partial and the repository is not switched; the dry run before changes nothing;
// every version clones through the agent from xet-server.
func TestMigrateToXetServerPartial(t *testing.T) {
	lts := startLFSTestServer(t)
	s := startServer(t, "")
	e := newEnv(t)
	work, remote := legacyHistory(t, e, lts, 3)
	ghost := strings.Repeat("ab", 32)
	writeFile(t, filepath.Join(work, "ghost.ptr"), []byte("version https://git-lfs.github.com/spec/v1\n"+
		"ext-0-foo sha256:"+strings.Repeat("cd", 32)+"\noid sha256:"+ghost+"\nsize 12345\n"))
	e.git(work, "add", "ghost.ptr")
	e.git(work, "commit", "-qm", "a pointer to nothing")
	commit := strings.TrimSpace(e.git(work, "rev-parse", "HEAD"))
	target := s.url + "/org/migrated.git/info/lfs"

	before := snapshot(t, e, work, s.data)
	dry, code := e.migrate(work, "--dry-run", "--to", target)
	if code != 0 {
		t.Fatalf("dry run: %d\n%s", code, dry)
	}
	if after := snapshot(t, e, work, s.data); after != before {
		t.Errorf("the dry run changed the repository or the target")
	}

	out, code := e.migrate(work, "--to", target)
	t.Logf("migrate:\n%s", out)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (partial)", code)
	}
	if !strings.Contains(out, "FAILED "+ghost+" (path ghost.ptr, commit "+commit[:12]+")") {
		t.Errorf("the missing object is not reported by oid, path and commit")
	}
	if n, all := figure(t, reMigrated, out), figure(t, reObjects, out); n != all-1 {
		t.Errorf("migrated %d of %d objects, want all but the missing one", n, all)
	}
	if v, _ := e.gitErr(work, "config", "--local", "--get", "remote.origin.lfsurl"); strings.TrimSpace(v) != "" {
		t.Errorf("a partial migration switched the remote to %s", v)
	}
	if n := figure(t, reObjects, dry); n != figure(t, reObjects, out) {
		t.Errorf("dry run counted %d objects, the migration %d", n, figure(t, reObjects, out))
	}

	e.pushWithoutLFS(work) // the pointer to nothing cannot be pushed with its object
	e.install()
	clone := filepath.Join(e.home, "clone")
	e.git("", "clone", "-q", "--no-checkout", remote, clone)
	e.git(clone, "config", "lfs.url", target)
	everyVersionClones(t, e, work, clone)
	if n := len(e.logLines(`"op":"download"`, `"mode":"batch"`)); n == 0 {
		t.Errorf("the clone did not download through xet-server")
	}
}

// A migration killed with SIGKILL after the walk, after a xorb (before its session's shard) and
// after a session's shard, then run again, succeeds: nothing is uploaded twice (each xorb is
// POSTed to the server once across both runs) and every object reconstructs from the target.
func TestMigrateKilledAndResumed(t *testing.T) {
	crashing := buildCrashingAgent(t)
	lts := startLFSTestServer(t)
	e := newEnv(t)
	work, remote := legacyHistory(t, e, lts, 4)
	for _, point := range []string{"walk", "xorb", "shard"} {
		t.Run(point, func(t *testing.T) {
			lb := &logbuf.Buffer{}
			s := startServer(t, "", func(c *server.Config) { c.Log = zerolog.New(lb) })
			target := s.url + "/org/" + point + ".git/info/lfs"
			out, code := e.migrateWith(crashing, work, []string{migrate.CrashEnv + "=" + point}, "--to", target, "--session-size", "3")
			if code != -1 {
				t.Fatalf("the run to be killed at %s ended with %d:\n%s", point, code, out)
			}
			out, code = e.migrate(work, "--to", target, "--session-size", "3", "--verify", "all")
			if code != 0 {
				t.Fatalf("the run after the kill: %d\n%s", code, out)
			}
			if figure(t, reMigrated, out)+figure(t, regexp.MustCompile(`(\d+) were already on the target`), out) != figure(t, reObjects, out) {
				t.Errorf("objects do not add up:\n%s", out)
			}
			posts := map[string]int{}
			for _, l := range strings.Split(lb.String(), "\n") {
				if strings.Contains(l, `"method":"POST"`) && strings.Contains(l, `"path":"/v1/xorbs/`) {
					i := strings.Index(l, `"path":"`)
					posts[l[i:i+90]]++
				}
			}
			for p, n := range posts {
				if n > 1 {
					t.Errorf("%s was uploaded %d times", p, n)
				}
			}
			// The run switched the repository to this target; the next subtest starts from the old server.
			e.git(work, "config", "lfs.url", lts.url+"/")
			e.git(work, "config", "--unset", "remote.origin.lfsurl")
			if report, ok, err := store.Fsck(context.Background(), s.data, store.FsckOptions{}); err != nil || !ok {
				t.Errorf("store check after the kill and the rerun: %v\n%s", err, report)
			}
			if point == "xorb" && !strings.Contains(out, "not sent again") {
				t.Errorf("the resumed run did not find the xorbs of the killed one:\n%s", out)
			}
			if point == "shard" {
				e.install()
				clone := filepath.Join(e.home, "clone-"+point)
				e.git("", "clone", "-q", "--no-checkout", remote, clone)
				e.git(clone, "config", "lfs.url", target)
				everyVersionClones(t, e, work, clone)
			}
		})
	}
}
