package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"runtime"
	"strings"
	"sync"
	"time"
)

// What a failed login may cost. A password check is a PBKDF2 of 600,000 iterations, about a sixth of
// a core-second: unbounded, anyone who can reach the server keeps its cores busy with wrong
// passwords. So a login is admitted to the KDF only
//
//   - once per window for a (user name, source address) pair: a later try in the window is refused
//     (429 and Retry-After) without one. Keyed by source, so that a guesser elsewhere cannot lock
//     the user out; short, so that a user who mistyped gets in with the right password a moment
//     later;
//   - within a budget per source address, whatever names it tries (sourceRate, sourceBurst);
//   - while a KDF slot is free: at most half the cores run KDFs at once (kdfSlots), which bounds
//     the work of guessers at many addresses together.
//
// A credential that passed is remembered (keyed by an HMAC of name, password and hash), so a user's
// later requests cost no KDF and go through none of these limits. An unknown name takes the same
// path and the same KDF as a known one (against a dummy hash), so neither the answer, its time nor
// the limits tell which names exist. Memory is bounded: entries are made only for admitted logins
// and dropped when they no longer limit anything (maxGuardEntries).
const (
	failWindow      = 2 * time.Second
	sourceRate      = 1.0 // KDFs per second a source earns
	sourceBurst     = 8.0 // KDFs a source may spend at once (several users behind one address)
	kdfWait         = 5 * time.Second
	maxGuardEntries = 1 << 14
)

// LoginResult is how a login (Users.Login) ended.
type LoginResult int

const (
	LoginOK        LoginResult = iota
	LoginWrong                 // the name or the password is wrong
	LoginThrottled             // refused before its password was checked: retry after the wait given
	LoginBusy                  // no KDF slot freed within kdfWait
)

// kdfSlots is how many password checks run at once: half the cores, at least one.
func kdfSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// loginGuard holds the limits above. Safe for concurrent use.
type loginGuard struct {
	mu      sync.Mutex
	tries   map[[32]byte]time.Time // HMAC(name, source) → end of the window its last admitted try opened
	budgets map[string]*kdfBudget  // source → the KDFs it may still cost
	slots   chan struct{}          // KDFs running
}

type kdfBudget struct {
	left float64
	at   time.Time
}

func newLoginGuard() *loginGuard {
	return &loginGuard{tries: map[[32]byte]time.Time{}, budgets: map[string]*kdfBudget{}, slots: make(chan struct{}, kdfSlots())}
}

// admit reports whether a login for the (name, source) pair key from source may run a KDF at now,
// and opens the pair's window if so; when not, how long to wait.
func (g *loginGuard) admit(key [32]byte, source string, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if end, ok := g.tries[key]; ok && now.Before(end) {
		return end.Sub(now), false
	}
	b := g.budgets[source]
	if b == nil {
		g.sweep(now)
		b = &kdfBudget{left: sourceBurst, at: now}
		g.budgets[source] = b
	}
	b.left = min(sourceBurst, b.left+now.Sub(b.at).Seconds()*sourceRate)
	b.at = now
	if b.left < 1 {
		return time.Duration((1 - b.left) / sourceRate * float64(time.Second)), false
	}
	b.left--
	g.tries[key] = now.Add(failWindow)
	return 0, true
}

// passed closes the window of a pair whose try passed (or never ran its KDF).
func (g *loginGuard) passed(key [32]byte) {
	g.mu.Lock()
	delete(g.tries, key)
	g.mu.Unlock()
}

// sweep drops, once the maps hold maxGuardEntries, the windows that ended and the budgets that are
// full again (they limit nothing); if that is not enough, everything: the KDF slots still bound the
// work.
func (g *loginGuard) sweep(now time.Time) {
	if len(g.tries)+len(g.budgets) < maxGuardEntries {
		return
	}
	for k, end := range g.tries {
		if !now.Before(end) {
			delete(g.tries, k)
		}
	}
	for src, b := range g.budgets {
		if b.left+now.Sub(b.at).Seconds()*sourceRate >= sourceBurst {
			delete(g.budgets, src)
		}
	}
	if len(g.tries)+len(g.budgets) >= maxGuardEntries {
		clear(g.tries)
		clear(g.budgets)
	}
}

// slot waits for a KDF slot (at most kdfWait, or until ctx ends) and returns its release.
func (g *loginGuard) slot(ctx context.Context) (func(), bool) {
	t := time.NewTimer(kdfWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, true
	case <-ctx.Done():
	case <-t.C:
	}
	return nil, false
}

// Login checks name and password from source (the client's address, Server.clientAddr) at time now
// within the limits above. It returns the user on LoginOK, and the wait before a retry on
// LoginThrottled and LoginBusy.
func (u *Users) Login(ctx context.Context, name, password, source string, now time.Time) (*User, LoginResult, time.Duration) {
	usr := (*u.table.Load())[name]
	stored := u.dummy
	if usr != nil {
		stored = usr.hash
	}
	key := u.mac(name + "\x00" + password + "\x00" + stored)
	u.mu.Lock()
	cached := u.goodMAC[key]
	u.mu.Unlock()
	if usr != nil && cached == usr {
		return usr, LoginOK, 0
	}
	pair := u.mac(name + "\x00" + source)
	if wait, ok := u.guard.admit(pair, source, now); !ok {
		return nil, LoginThrottled, wait
	}
	release, ok := u.guard.slot(ctx)
	if !ok {
		u.guard.passed(pair)
		return nil, LoginBusy, time.Second
	}
	good := verifyPassword(stored, password) && usr != nil
	if !good && !fullKDF(stored) {
		verifyPassword(u.dummy, password) // every failure costs one full KDF, whatever the hash
	}
	release()
	if !good {
		return nil, LoginWrong, 0
	}
	u.guard.passed(pair)
	u.mu.Lock()
	if u.goodMAC == nil || len(u.goodMAC) >= maxPasswordCache {
		u.goodMAC = map[[32]byte]*User{}
	}
	u.goodMAC[key] = usr
	u.mu.Unlock()
	return usr, LoginOK, 0
}

// mac is HMAC-SHA256 of s under the process's random cache key: what the caches keep instead of
// names, passwords and addresses.
func (u *Users) mac(s string) [32]byte {
	m := hmac.New(sha256.New, u.cacheK[:])
	m.Write([]byte(s))
	var k [32]byte
	copy(k[:], m.Sum(nil))
	return k
}

// fullKDF reports whether checking a password against stored costs at least the KDF of
// HashPassword.
func fullKDF(stored string) bool {
	if !strings.HasPrefix(stored, "$pbkdf2-sha256$") {
		return false
	}
	iter, _, _, err := parsePBKDF2(stored)
	return err == nil && iter >= PBKDF2Iterations
}
