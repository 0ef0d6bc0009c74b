package leader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// recentDownloads are the large downloads this process completed, offered as a span.Local to
// the ones after them. git-lfs moves a downloaded file into .git/lfs/objects only after the agent
// answers, so the next version of a file fetched in the same run (git lfs fetch --all, a clone of a
// history) could not yet find it there through the chunk index. Each verified file is linked under
// git-lfs's temp directory (a hard link: no copy, and it survives git-lfs's rename) until the
// process ends.
//
// Safe for concurrent use. The zero value is ready.
type recentDownloads struct {
	mu     sync.Mutex
	byXorb map[hash.Hash][]span.Span
	links  []string
}

// add links the verified file at path as link and offers its terms (spans of the download's own
// output, Path "") from there.
func (r *recentDownloads) add(path, link string, terms []span.Span) error {
	if err := os.Link(path, link); err != nil {
		return fmt.Errorf("linking a recent download: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byXorb == nil {
		r.byXorb = map[hash.Hash][]span.Span{}
	}
	r.links = append(r.links, link)
	for _, sp := range terms {
		if sp.Path == "" {
			sp.Path = link
		}
		r.byXorb[sp.Xorb] = append(r.byXorb[sp.Xorb], sp)
	}
	return nil
}

// Spans implements span.Local.
func (r *recentDownloads) Spans(xs []hash.Hash) []span.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span.Span
	for _, x := range xs {
		out = append(out, r.byXorb[x]...)
	}
	return out
}

// close removes the links.
func (r *recentDownloads) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, l := range r.links {
		if err := os.Remove(l); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	r.links, r.byXorb = nil, nil
	return errors.Join(errs...)
}

// recentLink is where a recent download of oid is linked in tmp.
func recentLink(tmp, oid string) string {
	return filepath.Join(tmp, fmt.Sprintf("xet-recent-%s-%d", oid, os.Getpid()))
}
