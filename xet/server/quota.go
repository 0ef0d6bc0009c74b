package server

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// Quotas are storage limits per repository, and per owner across the owner's repositories: what
// they cost the store (store.Usage.Stored: the xorbs they uploaded, whole, and the chunk ranges
// their files reference in other xorbs). A repository at or over its quota is refused new uploads
// (507); a batch whose new objects, counted at the sizes the client gives, would take it over is
// refused whole (507), and one object larger than the quota is refused with 413. Those are early
// refusals on the client's word; what is stored is counted as it arrives (quotacheck.go): a xorb
// or basic upload by the bytes received, refused (507) once they would pass the quota, and a shard
// by the chunk ranges it adds. Zero means no limit.
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
