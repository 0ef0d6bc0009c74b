package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
)

// maxListedObjects bounds the objects of a batch listing the client takes (a batch request holds
// at most 100 from git-lfs, 1000 on our server).
const maxListedObjects = 1000

// batchLister is a CAS client that reads batch listings (cas.HTTP).
type batchLister interface {
	BatchListing(ctx context.Context, id string) (*casapi.BatchListing, error)
}

// ListingKey is the batch listing obj's xet action names (lfsbatch.HeaderBatchURL: our server's
// extension), the same for every object of one LFS batch answer; "" when it names none.
func ListingKey(obj agent.Object) string {
	if obj.Action == nil {
		return ""
	}
	return lfsbatch.Header(obj.Action.Header, lfsbatch.HeaderBatchURL)
}

// BatchListing returns the objects of the LFS batch answer obj's action belongs to, read from the
// listing it names at its CAS, each with an action of its own (obj's, with the object's Xet hash
// for a download): what git-lfs will hand this process's group next. Only a listing at the
// action's own CAS is asked for, with the CAS token of the action's endpoint (the listing's
// repository, user and scope); each listed object is checked as an LFS object (oid, size) and the
// listing as the operation of this process. An error when there is none or it cannot be read: the
// caller goes on without it.
func (x *Client) BatchListing(ctx context.Context, obj agent.Object) ([]agent.Object, error) {
	objs, _, _, err := x.readListing(ctx, obj)
	return objs, err
}

// readListing is BatchListing, with the listing as the server sent it and the endpoint it came from.
func (x *Client) readListing(ctx context.Context, obj agent.Object) ([]agent.Object, *casapi.BatchListing, *endpoint, error) {
	key := ListingKey(obj)
	if key == "" {
		return nil, nil, nil, errors.New("the action names no batch listing")
	}
	ba, err := parseBatchAction(obj.Action)
	if err != nil {
		return nil, nil, nil, err
	}
	id, ok := strings.CutPrefix(key, strings.TrimRight(ba.CasURL, "/")+"/v1/batches/")
	if !ok || id == "" || strings.ContainsAny(id, "/?#") {
		return nil, nil, nil, errors.New("the batch listing is not at the action's CAS")
	}
	e := x.batchEndpoint(ctx, ba)
	lister, ok := e.cas.(batchLister)
	if !ok {
		return nil, nil, nil, errors.New("the CAS client reads no batch listings")
	}
	l, err := lister.BatchListing(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if l.Operation != x.init.Operation {
		return nil, nil, nil, fmt.Errorf("a batch listing of a %s, not a %s", l.Operation, x.init.Operation)
	}
	if len(l.Objects) > maxListedObjects {
		return nil, nil, nil, fmt.Errorf("a batch listing of %d objects, at most %d", len(l.Objects), maxListedObjects)
	}
	objs, err := listedObjects(obj, l)
	return objs, l, e, err
}

// listedObjects is the objects of listing l, each with obj's action and its own Xet hash.
func listedObjects(obj agent.Object, l *casapi.BatchListing) ([]agent.Object, error) {
	objs := make([]agent.Object, 0, len(l.Objects))
	for _, o := range l.Objects {
		if _, err := lfsobject.ParseOid(o.OID); err != nil || o.Size < 0 {
			return nil, fmt.Errorf("a batch listing names an object %.80q of size %d", o.OID, o.Size)
		}
		a := *obj.Action
		a.Header = maps.Clone(obj.Action.Header)
		delete(a.Header, lfsbatch.HeaderXetHash)
		if o.XetHash != "" {
			a.Header[lfsbatch.HeaderXetHash] = o.XetHash
		}
		objs = append(objs, agent.Object{Oid: o.OID, Size: o.Size, Action: &a})
	}
	return objs, nil
}
