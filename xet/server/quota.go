package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Quotas are storage limits per repository: what a repository's files reference after dedupe
// (store.Usage.Stored). A repository at or over its quota is refused new uploads (507); a batch
// whose new objects, counted at their full size, would take it over is refused whole (507), and
// one object larger than the quota is refused with 413. Refusals come before any bytes of the
// upload are accepted. Zero means no limit.
type Quotas struct {
	// Default applies to every repository no rule names.
	Default int64
	// Repos are the rules of a quotas file, in its order: the first whose pattern matches wins.
	Repos []QuotaRule
	// Owners limit what the repositories under NAME/ (a user's own, or an organization's) take
	// together: "user:NAME SIZE" lines of a quotas file, Pattern the name.
	Owners []QuotaRule
}

// QuotaRule is one line of a quotas file: a repository pattern (path.Match, "*" within one
// segment) and its limit in bytes (0: none).
type QuotaRule struct {
	Pattern string
	Bytes   int64
}

// Limit is the quota of repository ns (0: none).
func (q *Quotas) Limit(ns string) int64 {
	if q == nil {
		return 0
	}
	for _, r := range q.Repos {
		if ok, _ := path.Match(r.Pattern, ns); ok {
			return r.Bytes
		}
	}
	return q.Default
}

// ownerLimit is the quota of the repositories under owner/ together (0: none).
func (q *Quotas) ownerLimit(owner string) int64 {
	if q == nil {
		return 0
	}
	for _, r := range q.Owners {
		if r.Pattern == owner {
			return r.Bytes
		}
	}
	return 0
}

// ParseQuotas reads a quotas file: one "PATTERN SIZE" per line for repositories, "user:NAME SIZE"
// for the repositories under NAME/ together (SIZE as ParseSize reads it, or "none"); blank lines
// and lines starting with # are skipped.
func ParseQuotas(r io.Reader) (*Quotas, error) {
	q := &Quotas{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"REPOSITORY-PATTERN SIZE\", got %q", n, line)
		}
		if _, err := path.Match(f[0], ""); err != nil {
			return nil, fmt.Errorf("line %d: pattern %q: %w", n, f[0], err)
		}
		var b int64
		if f[1] != "none" {
			var err error
			if b, err = ParseSize(f[1]); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
		if name, ok := strings.CutPrefix(f[0], "user:"); ok {
			if name == "" || strings.Contains(name, "/") {
				return nil, fmt.Errorf("line %d: %q: want user:NAME, a name without /", n, f[0])
			}
			q.Owners = append(q.Owners, QuotaRule{name, b})
			continue
		}
		q.Repos = append(q.Repos, QuotaRule{f[0], b})
	}
	return q, sc.Err()
}

// ParseSize reads a byte count: a number with an optional unit B, KB, MB, GB, TB (powers of 1000)
// or KiB, MiB, GiB, TiB (powers of 1024), case-insensitive.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v >= 0) || v*float64(mult) >= 1<<62 { // !(v >= 0): NaN too
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with KiB, MiB, GiB, TiB (or KB, MB, GB, TB)", s)
	}
	return int64(v * float64(mult)), nil
}

// formatSize is n in the largest binary unit that divides it into at least 1.
func formatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// UsageStore is what quotas need of the store: a repository's usage (store.Store.RepoUsage's
// Stored bytes).
type UsageStore interface {
	RepoStoredBytes(ctx context.Context, ns string) (uint64, error)
	// OwnerStoredBytes is what the repositories under owner/ take together.
	OwnerStoredBytes(ctx context.Context, owner string) (uint64, error)
}

// usageCache keeps each repository's usage for usageTTL, adding what uploads store meanwhile
// (add): another instance's uploads are seen within usageTTL.
type usageCache struct {
	mu    sync.Mutex
	m     map[string]usageEntry // by repository, and by "user:" + owner
	store UsageStore
}

type usageEntry struct {
	bytes uint64
	at    time.Time
}

const usageTTL = time.Minute

func (c *usageCache) get(ctx context.Context, ns string) (uint64, error) {
	c.mu.Lock()
	e, ok := c.m[ns]
	c.mu.Unlock()
	if ok && time.Since(e.at) < usageTTL {
		return e.bytes, nil
	}
	var b uint64
	var err error
	if owner, ok := strings.CutPrefix(ns, "user:"); ok {
		b, err = c.store.OwnerStoredBytes(ctx, owner)
	} else {
		b, err = c.store.RepoStoredBytes(ctx, ns)
	}
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.m[ns] = usageEntry{b, time.Now()}
	c.mu.Unlock()
	return b, nil
}

// add counts n bytes just stored in ns (and its owner) until the usage is read again (usageTTL):
// reading a repository's usage reads all its entries, too much to do after each upload. The bytes
// are what was stored before dedupe within the store, so the count errs on the side of the quota.
// Safe on a nil cache.
func (c *usageCache) add(ns string, n int64) {
	if c == nil || n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := []string{ns}
	if owner, _, ok := strings.Cut(ns, "/"); ok {
		keys = append(keys, "user:"+owner)
	}
	for _, k := range keys {
		if e, ok := c.m[k]; ok {
			e.bytes += uint64(n)
			c.m[k] = e
		}
	}
}

// withinQuota answers 507 (or 413 when adding alone is over a quota) and returns false when
// repository ns, or the repositories of its owner together, may not take adding more bytes: at
// or over the quota, or would be with them.
func (s *Server) withinQuota(w http.ResponseWriter, r *http.Request, ns string, adding int64) bool {
	if s.quota == nil {
		return true
	}
	status, msg, err := s.overQuota(r, ns, "repository "+ns, false, s.cfg.Quotas.Limit(ns), adding)
	if owner, _, ok := strings.Cut(ns, "/"); ok && err == nil && status == 0 {
		status, msg, err = s.overQuota(r, "user:"+owner, "the repositories of "+owner, true, s.cfg.Quotas.ownerLimit(owner), adding)
	}
	switch {
	case err != nil:
		s.fail(w, r, "quota", err)
		return false
	case status == 0:
		return true
	}
	s.metrics.quotaRefused()
	if strings.Contains(r.URL.Path, lfsInfix) {
		writeLFSError(w, status, msg)
	} else {
		writeError(w, status, msg)
	}
	return false
}

// overQuota is the refusal (status and message; 0 when none) of adding bytes to what key (a
// repository, or "user:" + an owner) holds under limit; subject names it in the message.
func (s *Server) overQuota(r *http.Request, key, subject string, plural bool, limit, adding int64) (int, string, error) {
	if limit <= 0 {
		return 0, "", nil
	}
	used, err := s.quota.get(r.Context(), key)
	if err != nil {
		return 0, "", err
	}
	is, its := "is", "its"
	if plural {
		is, its = "are", "their"
	}
	switch {
	case adding > limit:
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("an object of %s is larger than the %s quota of %s on %s",
			formatSize(adding), formatSize(limit), subject, r.Host), nil
	case int64(used) >= limit:
		return http.StatusInsufficientStorage, fmt.Sprintf("%s %s over %s %s quota on %s (%s %s)",
			subject, is, its, formatSize(limit), r.Host, map[bool]string{false: "it uses", true: "they use"}[plural], formatSize(int64(used))), nil
	case int64(used)+adding > limit:
		return http.StatusInsufficientStorage, fmt.Sprintf("%s %s over %s %s quota on %s with this push (%s %s, the push adds up to %s)",
			subject, is, its, formatSize(limit), r.Host, map[bool]string{false: "it uses", true: "they use"}[plural], formatSize(int64(used)), formatSize(adding)), nil
	}
	return 0, "", nil
}
