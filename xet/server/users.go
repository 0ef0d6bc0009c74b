package server

import (
	"bufio"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The users file (--users) holds one user per line; blank lines and lines starting with '#' are
// ignored:
//
//	name:password-hash[:access[:repos]]
//
// name is [A-Za-z0-9._@-]+. access is "write" (the default: read and push) or "read". repos is a
// comma-separated list of path.Match patterns the user may reach ("org/*" matches every repository
// of org); absent means every repository. password-hash is one of:
//
//	$pbkdf2-sha256$ITERATIONS$SALT$KEY   PBKDF2-HMAC-SHA256, SALT and KEY unpadded base64 (what
//	                                     `xet-server hash-password` writes; 600000 iterations)
//	$sha256$SALTHEX$HEX                  SHA-256(salt || password), hex, the salt not empty: only
//	                                     for long random machine passwords (fast, so not for human
//	                                     ones)
//
// bcrypt hashes ($2a$, $2b$, $2y$) are recognised and refused with a clear error: this build has no
// bcrypt implementation (it would need golang.org/x/crypto).

// PBKDF2Iterations is the work factor HashPassword uses.
const PBKDF2Iterations = 600000

// User is one line of the users file.
type User struct {
	Name  string
	Write bool     // may push (write tokens); otherwise read only
	Repos []string // path.Match patterns; nil = every repository
	hash  string
}

// CanAccess reports whether u may reach repository repo, for writing when write is set.
func (u *User) CanAccess(repo string, write bool) bool {
	if write && !u.Write {
		return false
	}
	if u.Repos == nil {
		return true
	}
	for _, p := range u.Repos {
		if ok, _ := path.Match(p, repo); ok {
			return true
		}
	}
	return false
}

// Users is the table of the users file. Login and Lookup are safe for concurrent use with Reload.
// Successful password checks are remembered (keyed by an HMAC of name and password under a random
// per-process key, never the password itself) so the slow PBKDF2 runs once per credential, not per
// request; failed ones are limited (logins.go).
type Users struct {
	path  string
	table atomic.Pointer[map[string]*User]

	mu      sync.Mutex
	cacheK  [32]byte
	goodMAC map[[32]byte]*User

	guard *loginGuard
	dummy string // the hash an unknown name is checked against: a full KDF that never matches
}

const maxPasswordCache = 4096

// LoadUsers reads the users file at p.
func LoadUsers(p string) (*Users, error) {
	u := &Users{path: p, guard: newLoginGuard()}
	var salt, key [32]byte
	for _, b := range [][]byte{u.cacheK[:], salt[:16], key[:]} {
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("users: %w", err)
		}
	}
	u.dummy = "$pbkdf2-sha256$" + strconv.Itoa(PBKDF2Iterations) + "$" + base64.RawStdEncoding.EncodeToString(salt[:16]) +
		"$" + base64.RawStdEncoding.EncodeToString(key[:])
	if err := u.Reload(); err != nil {
		return nil, err
	}
	return u, nil
}

// Reload re-reads the users file; on error the previous table stays in force.
func (u *Users) Reload() error {
	f, err := os.Open(u.path)
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	t, err := ParseUsers(io.LimitReader(f, 16<<20))
	if err != nil {
		return fmt.Errorf("users file %s: %w", u.path, err)
	}
	u.table.Store(&t)
	u.mu.Lock()
	u.goodMAC = nil
	u.mu.Unlock()
	return nil
}

// Len returns the number of users.
func (u *Users) Len() int { return len(*u.table.Load()) }

// Lookup returns the entry of user name in the table in force (nil: not listed).
func (u *Users) Lookup(name string) *User { return (*u.table.Load())[name] }

// ParseUsers parses the text of a users file.
func ParseUsers(r io.Reader) (map[string]*User, error) {
	out := map[string]*User{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 2 || len(f) > 4 {
			return nil, fmt.Errorf("line %d: want name:hash[:access[:repos]]", n)
		}
		name := f[0]
		if err := checkUserName(name); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d: user %q listed twice", n, name)
		}
		if err := checkHashFormat(f[1]); err != nil {
			return nil, fmt.Errorf("line %d (user %s): %w", n, name, err)
		}
		usr := &User{Name: name, Write: true, hash: f[1]}
		if len(f) >= 3 {
			write, err := parseAccess(f[2])
			if err != nil {
				return nil, fmt.Errorf("line %d (user %s): %w", n, name, err)
			}
			usr.Write = write
		}
		if len(f) == 4 && f[3] != "" {
			for _, p := range strings.Split(f[3], ",") {
				if _, err := path.Match(p, ""); err != nil || p == "" {
					return nil, fmt.Errorf("line %d (user %s): bad repository pattern %q", n, name, p)
				}
				usr.Repos = append(usr.Repos, p)
			}
		}
		out[name] = usr
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// UsersLine is the users-file line of user name with a password hash (HashPassword's) and access
// ("" for the default, write; or read), or an error naming what ParseUsers would refuse in it.
func UsersLine(name, hash, access string) (string, error) {
	if err := CheckUserFields(name, access); err != nil {
		return "", err
	}
	if err := checkHashFormat(hash); err != nil {
		return "", err
	}
	if access == "" {
		return name + ":" + hash, nil
	}
	return name + ":" + hash + ":" + access, nil
}

// CheckUserFields says what ParseUsers would refuse in a user's name or access ("", read, write):
// the same rules, checkUserName and parseAccess.
func CheckUserFields(name, access string) error {
	if err := checkUserName(name); err != nil {
		return err
	}
	_, err := parseAccess(access)
	return err
}

// checkUserName is the users file's rule for a name: 1 to 128 of the letters, digits and ._@- (no
// colon, which ends the field; nothing a log or a page would have to quote).
func checkUserName(s string) error {
	ok := s != "" && len(s) <= 128
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)) {
			ok = false
			break
		}
	}
	if !ok {
		return fmt.Errorf("bad user name %q: 1 to 128 of the letters, digits and ._@-", s)
	}
	return nil
}

// parseAccess is the users file's access field: write (also when empty) or read.
func parseAccess(a string) (write bool, err error) {
	switch a {
	case "", "write":
		return true, nil
	case "read":
		return false, nil
	}
	return false, fmt.Errorf("access %q is neither read nor write", a)
}

func checkHashFormat(h string) error {
	switch {
	case strings.HasPrefix(h, "$2a$"), strings.HasPrefix(h, "$2b$"), strings.HasPrefix(h, "$2y$"):
		return fmt.Errorf("bcrypt hashes are not supported by this build; make one with `xet-server hash-password`")
	case strings.HasPrefix(h, "$pbkdf2-sha256$"):
		_, _, _, err := parsePBKDF2(h)
		return err
	case strings.HasPrefix(h, "$sha256$"):
		_, _, err := parseSHA256Hash(h)
		return err
	default:
		return fmt.Errorf("unknown password hash format (want $pbkdf2-sha256$... or $sha256$...)")
	}
}

func parsePBKDF2(h string) (iter int, salt, key []byte, err error) {
	f := strings.Split(h, "$") // "", "pbkdf2-sha256", iter, salt, key
	if len(f) != 5 {
		return 0, nil, nil, fmt.Errorf("pbkdf2 hash: want $pbkdf2-sha256$ITER$SALT$KEY")
	}
	iter, err = strconv.Atoi(f[2])
	if err != nil || iter < 1000 || iter > 100_000_000 {
		return 0, nil, nil, fmt.Errorf("pbkdf2 hash: iterations %q out of range [1000, 1e8]", f[2])
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(f[3])
	key, err2 := base64.RawStdEncoding.DecodeString(f[4])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 || len(key) > 64 {
		return 0, nil, nil, fmt.Errorf("pbkdf2 hash: bad salt or key encoding")
	}
	return iter, salt, key, nil
}

func parseSHA256Hash(h string) (salt, sum []byte, err error) {
	f := strings.Split(h, "$") // "", "sha256", salt, hex
	if len(f) != 4 {
		return nil, nil, fmt.Errorf("sha256 hash: want $sha256$SALTHEX$HEX")
	}
	salt, err1 := hex.DecodeString(f[2])
	sum, err2 := hex.DecodeString(f[3])
	if err1 != nil || err2 != nil || len(sum) != sha256.Size {
		return nil, nil, fmt.Errorf("sha256 hash: bad hex")
	}
	if len(salt) == 0 {
		// Unsalted, equal passwords have equal hashes and one precomputed table serves every server.
		return nil, nil, fmt.Errorf("sha256 hash: empty salt: give each password a random salt ($sha256$SALTHEX$HEX, e.g. 16 random bytes), or use `xet-server hash-password`")
	}
	return salt, sum, nil
}

// HashPassword returns a $pbkdf2-sha256$ hash of password with a fresh random salt.
func HashPassword(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key, err := pbkdf2.Key(sha256.New, password, salt, PBKDF2Iterations, 32)
	if err != nil {
		return "", err
	}
	return "$pbkdf2-sha256$" + strconv.Itoa(PBKDF2Iterations) + "$" +
		base64.RawStdEncoding.EncodeToString(salt) + "$" + base64.RawStdEncoding.EncodeToString(key), nil
}

// verifyPassword checks password against a stored hash in constant time.
func verifyPassword(stored, password string) bool {
	switch {
	case strings.HasPrefix(stored, "$pbkdf2-sha256$"):
		iter, salt, key, err := parsePBKDF2(stored)
		if err != nil {
			return false
		}
		got, err := pbkdf2.Key(sha256.New, password, salt, iter, len(key))
		return err == nil && subtle.ConstantTimeCompare(got, key) == 1
	case strings.HasPrefix(stored, "$sha256$"):
		salt, sum, err := parseSHA256Hash(stored)
		if err != nil {
			return false
		}
		h := sha256.New()
		h.Write(salt)
		h.Write([]byte(password))
		return subtle.ConstantTimeCompare(h.Sum(nil), sum) == 1
	}
	return false
}
