package store

import (
	"context"
	"fmt"
	"path"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Isolation between repositories. The store keeps one copy of every xorb and file, whoever
// uploaded it; what a repository may do with them is recorded per repository:
//
//	ns/<namespace>/files/<file hash>   the file is registered in the repository: it may be
//	                                   reconstructed and its size read there
//	ns/<namespace>/up/<xorb hash>      the repository uploaded the xorb (its upload record,
//	                                   uploads.go, which the usage reads too): it holds every
//	                                   chunk of it
//	ns/<namespace>/shown/<xorb hash>   the repository was shown the xorb's chunks through a keyed
//	                                   global-dedupe answer (or, in a store upgraded from format 2,
//	                                   one of its files named the xorb before records were kept)
//	users/<user>/up/<xorb hash>        the user uploaded the xorb, through any repository
//
// A repository's shard may name a xorb's chunks only when the repository uploaded or was shown the
// xorb, or the user registering it uploaded the xorb (the same person's push of a file to a second
// repository, deduplicated against their own earlier upload): the rule the Hub holds, under which
// raw chunk hashes of a xorb never leave the server for a client that did not send its bytes
// (keyed answers hide them). Knowing chunk hashes is no proof of holding the data: they can leak.
//
// The namespace "" is the whole store: the embedded store's one namespace, and the requests an
// open server (no users) takes without a token. Nothing is recorded for it and nothing is refused
// to it.
//
// Grants are never revoked (gc removes xorbs, not grants: a grant of a xorb removed and uploaded
// again by someone else was earned by holding the same bytes).

// Access is who asks: the repository a request acts in and the user it acts for.
type Access struct {
	Repo string // the namespace; "" is the whole store
	User string // the user; "" when there is none to record
}

// whole reports whether a may see the whole store.
func (a Access) whole() bool { return a.Repo == "" }

func memberName(ns string, file hash.Hash) string {
	return "ns/" + nsDir(ns) + "/files/" + file.String()
}
func shownName(ns string, x hash.Hash) string    { return "ns/" + nsDir(ns) + "/shown/" + x.String() }
func userUpName(user string, x hash.Hash) string { return "users/" + nsDir(user) + "/up/" + x.String() }

// grantCacheBytes bounds the cache of access entries seen (about 160 bytes each).
const grantCacheBytes = 8 << 20

// grant entries hold the hash they name (the file or xorb), sealed like every index entry.
const magicGrant = "XSG1"

func marshalGrant(h hash.Hash) []byte { return sealRecord(append([]byte(magicGrant), h[:]...)) }

// hasGrant reports whether the access entry name (a grant or an upload record) exists, from the
// cache of entries seen (they are never removed) or the backend.
func (s *Store) hasGrant(ctx context.Context, name string) (bool, error) {
	if _, ok := s.grants.get(name); ok {
		return true, nil
	}
	ok, err := s.be.Exists(ctx, name)
	if err != nil {
		return false, fmt.Errorf("access check: %w", err)
	}
	if ok {
		s.grants.put(name, struct{}{})
	}
	return ok, nil
}

// writeAccess creates the access entries of entries not known to exist, in one batch, and reports
// per entry whether this call created it (exactly one of several writers of an entry does).
func (s *Store) writeAccess(ctx context.Context, entries ...blob.NewBlob) ([]bool, error) {
	created := make([]bool, len(entries))
	var blobs []blob.NewBlob
	var at []int
	for i, e := range entries {
		if ok, err := s.hasGrant(ctx, e.Name); err != nil {
			return created, err
		} else if !ok {
			blobs, at = append(blobs, e), append(at, i)
		}
	}
	if len(blobs) == 0 {
		return created, nil
	}
	made, err := s.be.CreateBatch(ctx, blobs)
	if err != nil {
		return created, fmt.Errorf("recording access to %s: %w", path.Base(blobs[0].Name), err)
	}
	for j, b := range blobs {
		created[at[j]] = made[j]
		s.grants.put(b.Name, struct{}{})
	}
	return created, nil
}

// CanReference reports whether a shard registered by a may name chunks of xorb x: a uploaded it
// (the repository or the user), or the repository was shown it through a keyed answer. The whole
// store (Repo "") may name any.
func (s *Store) CanReference(ctx context.Context, a Access, x hash.Hash) (bool, error) {
	_, ok, err := s.reference(ctx, a, x)
	return ok, err
}

// reference reports whether a's repository uploaded xorb x (its upload record) and whether a may
// name x's chunks (CanReference), asking each access entry at most once.
func (s *Store) reference(ctx context.Context, a Access, x hash.Hash) (uploaded, allowed bool, err error) {
	if a.whole() {
		return false, true, nil
	}
	if uploaded, err = s.hasGrant(ctx, uploadName(a.Repo, x)); uploaded || err != nil {
		return uploaded, uploaded, err
	}
	names := []string{shownName(a.Repo, x)}
	if a.User != "" {
		names = append(names, userUpName(a.User, x))
	}
	for _, n := range names {
		if ok, err := s.hasGrant(ctx, n); ok || err != nil {
			return false, ok, err
		}
	}
	return false, false, nil
}

// UploadedBy reports whether repository repo uploaded xorb x, so that every reader of repo may be
// given all of it (a presigned URL of the whole object). The whole store ("") holds every xorb.
func (s *Store) UploadedBy(ctx context.Context, repo string, x hash.Hash) (bool, error) {
	if repo == "" {
		return true, nil
	}
	return s.hasGrant(ctx, uploadName(repo, x))
}

// HasFile reports whether file is registered in repository repo ("": anywhere in the store).
func (s *Store) HasFile(ctx context.Context, repo string, file hash.Hash) (bool, error) {
	if repo == "" {
		ok, err := s.be.Exists(ctx, fileName(file))
		if err != nil {
			return false, fmt.Errorf("file %s: %w", file, err)
		}
		return ok, nil
	}
	return s.hasGrant(ctx, memberName(repo, file))
}

// inRepo is nil when file is registered in repo, else ErrNotFound (a file of another repository
// is answered as one that does not exist).
func (s *Store) inRepo(ctx context.Context, repo string, file hash.Hash) error {
	if repo == "" {
		return nil // the file record's own read tells
	}
	ok, err := s.HasFile(ctx, repo, file)
	if err != nil {
		return err
	}
	if !ok {
		return missing{"file", file}
	}
	return nil
}

// errNotYours is the refusal of a shard naming a xorb its repository may not reference. It names
// only the xorb the client sent.
func errNotYours(x hash.Hash) error {
	return invalid("xorb %s was not uploaded to this repository: upload it (the server keeps one copy of each xorb)", x)
}
