package webui

import (
	"context"
	"net/http"
	"strconv"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// repoPage is /ui/repo?name=NAME&page=N: one repository.
type repoPage struct {
	Viewer string
	repoRow
	Owner *ownerRow // the owner's quota, when one applies
	Chart *chart    // nil: no history recorded
	// The objects: Recorded with a history record, Earlier without (registered before records
	// were kept); Rows is page Page of Pages.
	Recorded, Earlier int
	Rows              []objectRow
	Page, Pages       int
}

// objectRow is one object of the list.
type objectRow struct {
	N      int // 1-based position in the list
	OID    string
	Size   uint64
	Record *store.Registration // nil: registered before records were kept
}

// maxPageParam bounds the page number read from a query (a larger one is no page), maxNameParam
// a repository name (the server takes none longer).
const (
	maxPageParam = 1 << 30
	maxNameParam = 512
)

// Repo serves /ui/repo?name=NAME[&page=N]: the repository's usage and quota, the chart of its
// history, and page N of its objects (oldest registration first, then those registered before
// history was kept, by oid). A repository the viewer may not read is not found, as one that does
// not exist.
func (v *View) Repo(w http.ResponseWriter, r *http.Request, who Viewer) {
	ctx := r.Context()
	q := r.URL.Query()
	ns := q.Get("name")
	page := 1
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxPageParam {
			v.badRequest(w, r, who, "page: want a page number (1, 2, …)")
			return
		}
		page = n
	}
	if ns == "" || len(ns) > maxNameParam || !who.CanRead(ns) {
		v.notFound(w, r, who)
		return
	}
	done, ok := v.slot(r)
	if !ok {
		return
	}
	defer done()
	objs, err := v.cfg.Source.RepoObjects(ctx, ns)
	if err != nil {
		v.failed(w, r, who, err)
		return
	}
	if objs.Entries == 0 {
		v.notFound(w, r, who)
		return
	}
	p, err := v.repoPage(ctx, ns, objs, page, who)
	if err != nil {
		v.failed(w, r, who, err)
		return
	}
	if p == nil {
		v.notFound(w, r, who)
		return
	}
	v.render(w, r, http.StatusOK, "repo", p)
}

// repoPage gathers page number page of repository ns (nil: no such page).
func (v *View) repoPage(ctx context.Context, ns string, objs *store.RepoObjects, page int, who Viewer) (*repoPage, error) {
	total := len(objs.History) + len(objs.Earlier)
	pages := max(1, (total+v.cfg.PageSize-1)/v.cfg.PageSize)
	if page > pages {
		return nil, nil
	}
	u, err := v.usageOf(ctx, ns, objs)
	if err != nil {
		return nil, err
	}
	lim := v.cfg.Quota(ns)
	p := &repoPage{Viewer: who.Name, repoRow: repoRow{Name: ns, Shown: display(ns), Usage: u, Quota: quotaUse{Limit: uint64(max(lim.Repo, 0)), Used: u.Stored}},
		Chart: buildChart(objs.History), Recorded: len(objs.History), Earlier: len(objs.Earlier), Page: page, Pages: pages}
	if lim.OwnerLimit > 0 {
		rows, err := v.ownerRows(ctx, map[string]int64{lim.Owner: lim.OwnerLimit}, who)
		if err != nil {
			return nil, err
		}
		p.Owner = &rows[0]
	}
	first := (page - 1) * v.cfg.PageSize
	for i := first; i < min(total, first+v.cfg.PageSize); i++ {
		row := objectRow{N: i + 1}
		if i < len(objs.History) {
			rec := objs.History[i]
			row.OID, row.Size, row.Record = rec.OID.String(), rec.Size, &rec
		} else {
			oid := objs.Earlier[i-len(objs.History)]
			_, size, err := v.cfg.Source.LookupSHA256(ctx, ns, oid)
			if err != nil {
				return nil, err
			}
			row.OID, row.Size = oid.String(), size
		}
		p.Rows = append(p.Rows, row)
	}
	return p, nil
}

// PrevPage and NextPage are the neighbouring page numbers (0: none).
func (p *repoPage) PrevPage() int {
	if p.Page > 1 {
		return p.Page - 1
	}
	return 0
}

func (p *repoPage) NextPage() int {
	if p.Page < p.Pages {
		return p.Page + 1
	}
	return 0
}
