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

// ParseQuotas reads a quotas file: one "PATTERN SIZE" per line (SIZE as ParseSize reads it, or
// "none"); blank lines and lines starting with # are skipped.
func ParseQuotas(r io.Reader) ([]QuotaRule, error) {
	var rules []QuotaRule
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
		rules = append(rules, QuotaRule{f[0], b})
	}
	return rules, sc.Err()
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
}

// usageCache keeps each repository's usage for usageTTL, or until an upload to it is stored
// (forget): another instance's uploads are seen within usageTTL.
type usageCache struct {
	mu   sync.Mutex
	m    map[string]usageEntry
	read func(ctx context.Context, ns string) (uint64, error)
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
	b, err := c.read(ctx, ns)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.m[ns] = usageEntry{b, time.Now()}
	c.mu.Unlock()
	return b, nil
}

// forget drops ns's usage: an upload to it was stored. Safe on a nil cache.
func (c *usageCache) forget(ns string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.m, ns)
	c.mu.Unlock()
}

// withinQuota answers 507 (or 413 when adding alone is over the quota) and returns false when
// repository ns may not take adding more bytes: it is at or over its quota, or would be with them.
func (s *Server) withinQuota(w http.ResponseWriter, r *http.Request, ns string, adding int64) bool {
	limit := s.cfg.Quotas.Limit(ns)
	if s.quota == nil || limit <= 0 {
		return true
	}
	used, err := s.quota.get(r.Context(), ns)
	if err != nil {
		s.fail(w, r, "quota", err)
		return false
	}
	var status int
	var msg string
	switch {
	case adding > limit:
		status = http.StatusRequestEntityTooLarge
		msg = fmt.Sprintf("an object of %s is larger than repository %s's %s quota on %s", formatSize(adding), ns, formatSize(limit), r.Host)
	case int64(used) >= limit:
		status = http.StatusInsufficientStorage
		msg = fmt.Sprintf("repository %s is over its %s quota on %s (it uses %s)", ns, formatSize(limit), r.Host, formatSize(int64(used)))
	case int64(used)+adding > limit:
		status = http.StatusInsufficientStorage
		msg = fmt.Sprintf("repository %s is over its %s quota on %s with this push (it uses %s, the push adds up to %s)",
			ns, formatSize(limit), r.Host, formatSize(int64(used)), formatSize(adding))
	default:
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
