package webui

import (
	"context"
	"net/http"
	"sort"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// indexPage is /ui/: the repositories the viewer may read.
type indexPage struct {
	Viewer string
	Repos  []repoRow
	Owners []ownerRow
}

// repoRow is a repository's usage and quota. Name is the repository's own (a link's query value),
// Shown the same as valid UTF-8 (what the page says).
type repoRow struct {
	Name, Shown string
	Usage       store.Usage
	Quota       quotaUse
}

// quotaUse is a limit and what counts against it.
type quotaUse struct {
	Limit uint64 // 0: none
	Used  uint64
}

// Share is Used over Limit.
func (q quotaUse) Share() float64 {
	if q.Limit == 0 {
		return 0
	}
	return float64(q.Used) / float64(q.Limit)
}

// ownerRow is an owner's quota. Used is read only for a viewer who reads every repository
// (Shown); otherwise the row says the limit alone.
type ownerRow struct {
	Owner string
	Quota quotaUse
	Shown bool
}

// Index serves /ui/: one row per repository who may read, with its usage (the numbers of
// `xet-server stats`) and quota, then the owners' quotas that apply to them.
func (v *View) Index(w http.ResponseWriter, r *http.Request, who Viewer) {
	done, ok := v.slot(r)
	if !ok {
		return
	}
	defer done()
	ctx := r.Context()
	repos, err := v.cfg.Source.Repositories(ctx)
	if err != nil {
		v.failed(w, r, who, err)
		return
	}
	page := indexPage{Viewer: who.Name}
	owners := map[string]int64{}
	for _, repo := range repos {
		if !who.CanRead(repo.Name) {
			continue
		}
		u, err := v.usage(ctx, repo.Name, repo.Entries)
		if err != nil {
			v.failed(w, r, who, err)
			return
		}
		lim := v.cfg.Quota(repo.Name)
		page.Repos = append(page.Repos, repoRow{Name: repo.Name, Shown: display(repo.Name), Usage: u, Quota: quotaUse{Limit: uint64(max(lim.Repo, 0)), Used: u.Stored}})
		if lim.OwnerLimit > 0 {
			owners[lim.Owner] = lim.OwnerLimit
		}
	}
	if page.Owners, err = v.ownerRows(ctx, owners, who); err != nil {
		v.failed(w, r, who, err)
		return
	}
	v.render(w, r, http.StatusOK, "index", page)
}

// ownerRows are the quotas of owners (owner → limit), sorted, with their use for a viewer who
// reads every repository.
func (v *View) ownerRows(ctx context.Context, owners map[string]int64, who Viewer) ([]ownerRow, error) {
	var out []ownerRow
	for owner, limit := range owners {
		row := ownerRow{Owner: display(owner), Quota: quotaUse{Limit: uint64(limit)}, Shown: who.ReadsAll}
		if who.ReadsAll {
			used, err := v.ownerUsed(ctx, owner)
			if err != nil {
				return nil, err
			}
			row.Quota.Used = used
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner < out[j].Owner })
	return out, nil
}
