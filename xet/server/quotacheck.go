package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// quotaCheck is one quota an upload to a repository counts against: the repository's own, or its
// owner's (store.Owner: the Hub's OWNER/NAME, datasets/OWNER/NAME and spaces/OWNER/NAME alike).
type quotaCheck struct {
	key      string // in the usage cache: the repository, or "user:" + the owner
	subject  string // in a refusal: "repository org/x", "the repositories of alice"
	plural   bool
	limit    int64
	used     uint64 // as last seen
	arriving int64
}

// quotaChecks are the quotas that apply to uploads to ns (none: no limit).
func (s *Server) quotaChecks(ns string) []quotaCheck {
	if s.quota == nil {
		return nil
	}
	var qs []quotaCheck
	if l := s.cfg.Quotas.Limit(ns); l > 0 {
		qs = append(qs, quotaCheck{key: ns, subject: "repository " + ns, limit: l})
	}
	if owner := store.Owner(ns); owner != "" {
		if l := s.cfg.Quotas.ownerLimit(owner); l > 0 {
			qs = append(qs, quotaCheck{key: "user:" + owner, subject: "the repositories of " + owner, plural: true, limit: l})
		}
	}
	return qs
}

// usageKeys are the usage-cache keys of ns's usage: what an upload stored there adds to.
func usageKeys(ns string) []string {
	if owner := store.Owner(ns); owner != "" {
		return []string{ns, "user:" + owner}
	}
	return []string{ns}
}

// quotaError is a refusal for a quota (413 or 507), with the message the user sees.
type quotaError struct {
	status int
	msg    string
}

func (e *quotaError) Error() string { return e.msg }

// refusal is q's refusal of adding bytes (nil: within the quota), of which largest is the largest
// object (a batch's objects; a single upload is its own largest); host names the server.
func (q *quotaCheck) refusal(host string, adding, largest int64) *quotaError {
	is, its, uses := "is", "its", "it uses"
	if q.plural {
		is, its, uses = "are", "their", "they use"
	}
	used := int64(q.used) + q.arriving
	switch {
	case largest > q.limit:
		return &quotaError{http.StatusRequestEntityTooLarge, fmt.Sprintf("an object of %s is larger than the %s quota of %s on %s",
			formatSize(largest), formatSize(q.limit), q.subject, host)}
	case used >= q.limit:
		return &quotaError{http.StatusInsufficientStorage, fmt.Sprintf("%s %s over %s %s quota on %s (%s %s)",
			q.subject, is, its, formatSize(q.limit), host, uses, formatSize(used))}
	case used+adding > q.limit:
		return &quotaError{http.StatusInsufficientStorage, fmt.Sprintf("%s %s over %s %s quota on %s with this push (%s %s, the push adds up to %s)",
			q.subject, is, its, formatSize(q.limit), host, uses, formatSize(used), formatSize(adding))}
	}
	return nil
}

// checkQuota reads the usage under each of checks and returns the first refusal of adding bytes,
// largest the largest object of them (nil: none).
func (s *Server) checkQuota(ctx context.Context, host string, checks []quotaCheck, adding, largest int64) (*quotaError, error) {
	for i := range checks {
		q := &checks[i]
		used, arriving, err := s.quota.get(ctx, q.key)
		if err != nil {
			return nil, err
		}
		q.used, q.arriving = used, arriving
		if qe := q.refusal(host, adding, largest); qe != nil {
			return qe, nil
		}
	}
	return nil, nil
}

// withinQuota answers the refusal (507, or 413 when the largest object alone is over a quota) and returns false
// when repository ns, or the repositories of its owner together, may not take adding more bytes:
// at or over the quota, or would be with them. It is the early refusal, before an upload's bytes
// are read; meter and chargeShard count what is actually stored.
func (s *Server) withinQuota(w http.ResponseWriter, r *http.Request, ns string, adding, largest int64) bool {
	qe, ok := s.quotaRefusal(w, r, ns, adding, largest)
	if ok && qe != nil {
		s.refuseQuota(w, r, qe)
		return false
	}
	return ok
}

// quotaRefusal is withinQuota's refusal without answering it (nil: within the quotas), for a
// route that reads its body before it refuses; what is no quota's refusal (a name too long to
// count, a usage it could not read) it answers itself, returning ok false.
func (s *Server) quotaRefusal(w http.ResponseWriter, r *http.Request, ns string, adding, largest int64) (qe *quotaError, ok bool) {
	checks := s.quotaChecks(ns)
	if len(checks) == 0 {
		return nil, true
	}
	if checks[len(checks)-1].plural && !store.NameKept(ns) {
		s.refuseQuota(w, r, &quotaError{http.StatusBadRequest, fmt.Sprintf(
			"repository name %.40s… is too long to count against its owner's quota (at most 150 bytes)", ns)})
		return nil, false
	}
	qe, err := s.checkQuota(r.Context(), r.Host, checks, adding, largest)
	if err != nil {
		s.fail(w, r, "quota", err)
		return nil, false
	}
	return qe, true
}

// refuseQuota answers a quota refusal on an LFS or a CAS route.
func (s *Server) refuseQuota(w http.ResponseWriter, r *http.Request, qe *quotaError) {
	s.metrics.quotaRefused()
	if strings.Contains(r.URL.Path, lfsInfix) {
		writeLFSError(w, qe.status, qe.msg)
	} else {
		writeError(w, qe.status, qe.msg)
	}
}

// quotaMeter counts an upload's bytes as they arrive against the quotas of its repository: each
// read reserves what it brought (usageCache.reserve), and the read that would take a quota over
// fails with the refusal (507), so nothing of the upload is stored. Chunked bodies are counted as
// any other. done gives the reservation back.
type quotaMeter struct {
	s      *Server
	r      io.Reader
	checks []quotaCheck
	host   string
	n      int64 // bytes received and reserved
	// resent: the body is of a xorb the usage counts already (countedXorb), so its bytes are not
	// counted as they arrive; admitRaw still counts its raw bytes should the store find that gc
	// deleted it meanwhile.
	resent bool
}

// meter is body counted against ns's quotas (itself when none applies).
func (s *Server) meter(r *http.Request, ns string, body io.Reader) *quotaMeter {
	return &quotaMeter{s: s, r: body, checks: s.quotaChecks(ns), host: r.Host}
}

func (m *quotaMeter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if n > 0 && len(m.checks) > 0 && !m.resent {
		if q := m.s.quota.reserve(m.checks, int64(n)); q != nil {
			m.s.metrics.quotaRefused()
			// largest 0: a read's size is not an object's, and one read may hold a whole body.
			return 0, q.refusal(m.host, int64(n), 0)
		}
		m.n += int64(n)
	}
	return n, err
}

// countedXorb reports whether a quota applies to repository ns and its usage counts xorb h whole
// already: the repository uploaded it (its upload record) and the store keeps it, in gc's trash
// too (store.CountsXorb: what the usage counts, not only what is stored). Sending it again adds
// nothing to the usage, so its body is not counted against the quota: a client retrying an upload
// whose answer it lost, or pushing the same data again (a day after gc moved it aside), at or near
// its quota, is answered as its first upload was. Should gc delete the xorb meanwhile, the store
// asks admitRaw for its raw bytes (store.PutXorbAdmitted). Without a quota it looks nothing up.
func (s *Server) countedXorb(ctx context.Context, ns string, h hash.Hash) (bool, error) {
	if len(s.quotaChecks(ns)) == 0 {
		return false, nil
	}
	return s.cfg.Store.CountsXorb(ctx, ns, h)
}

// admitRaw reserves what a xorb's raw bytes add beyond the body's bytes reserved so far, failing
// with the refusal (507) when a quota would pass with them: a xorb counts by its raw bytes (what
// the usage reads), and compressed records may hold many times their length raw.
func (m *quotaMeter) admitRaw(raw uint64) error {
	extra := int64(raw) - m.n
	if len(m.checks) == 0 || extra <= 0 {
		return nil
	}
	if q := m.s.quota.reserve(m.checks, extra); q != nil {
		m.s.metrics.quotaRefused()
		return q.refusal(m.host, extra, 0) // largest 0: a xorb is not an object
	}
	m.n += extra
	return nil
}

// done gives back the bytes the meter reserved; what was stored is added by the caller.
func (m *quotaMeter) done() {
	if len(m.checks) > 0 {
		m.s.quota.unreserve(m.checks, m.n)
	}
}

// shardCharge is what a shard being registered adds to its repository's usage, reserved while it
// registers (chargeShard).
type shardCharge struct {
	s      *Server
	ns     string
	checks []quotaCheck
	adds   uint64
}

// chargeShard bounds what registering body as c adds (store.ShardAdds: the chunk ranges it names
// in xorbs c's repository did not upload) and reserves it, answering the refusal (507; 413 when
// its largest file alone is larger than a quota, never the whole shard: it names a batch) or the
// error itself when it may not (ok false). A shard the registration would refuse (over the caps,
// naming a xorb the repository may not name) gets that refusal here, before it is counted. early
// is the refusal of the repository at or over a quota before the body was read (takeShard); a
// shard that adds nothing is taken through it. Nil charge: no quota applies, or nothing is
// reserved.
func (s *Server) chargeShard(w http.ResponseWriter, r *http.Request, c Claims, body []byte, early *quotaError) (*shardCharge, bool) {
	ns := c.Namespace
	checks := s.quotaChecks(ns)
	if len(checks) == 0 {
		return nil, true
	}
	adds, largest, err := s.quota.store.ShardAdds(r.Context(), s.access(c), body)
	if err != nil {
		s.fail(w, r, "shard upload", err)
		return nil, false
	}
	if adds == 0 {
		// Registering it adds nothing to the usage (its files served already, or their chunks in
		// xorbs the repository uploaded, which count whole): taken whatever the usage is. A
		// registration retried after its answer was lost, or the shard of a push whose xorbs took
		// the repository exactly to its quota, is answered as it would be below it.
		return nil, true
	}
	if early != nil {
		s.refuseQuota(w, r, early)
		return nil, false
	}
	if _, err := s.checkQuota(r.Context(), r.Host, checks, 0, 0); err != nil { // fresh usage in the cache
		s.fail(w, r, "quota", err)
		return nil, false
	}
	if q := s.quota.reserve(checks, int64(adds)); q != nil {
		s.refuseQuota(w, r, q.refusal(r.Host, int64(adds), int64(largest)))
		return nil, false
	}
	return &shardCharge{s: s, ns: ns, checks: checks, adds: adds}, true
}

// done ends the reservation; a shard registered (ok) adds to the usage.
func (c *shardCharge) done(ok bool) {
	if c == nil {
		return
	}
	c.s.quota.unreserve(c.checks, int64(c.adds))
	if ok {
		c.s.quota.add(usageKeys(c.ns), c.adds)
	}
}
