package sim

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/costgw/gateway/upstream/ops"
)

// Scopes an operation can require.
const (
	scopeCostRead          = "cost:read"
	scopeBudgetsRead       = "budgets:read"
	scopeBudgetsWrite      = "budgets:write"
	scopeReportsRead       = "reports:read"
	scopeReportsWrite      = "reports:write"
	scopeNotificationsRead = "notifications:read"
)

// route is one row of the route table.
type route struct {
	method  string
	op      string
	scope   string
	handler func(*call) response
}

// pattern is a path pattern with the routes (one per method) that share it.
type pattern struct {
	segs   []string // literal segments, or "{name}" wildcards
	routes []*route
}

// router is an explicit route table. It is used instead of http.ServeMux
// because the simulator must answer unknown paths and methods with the JSON
// error envelope, never Go's plain-text defaults, and must know the operation
// id before anything else runs (requests are counted on arrival).
type router struct {
	patterns []*pattern
}

// match is the outcome of routing one request.
type match struct {
	route  *route            // nil when no operation matches
	params map[string]string // wildcard values, unescaped
	allow  []string          // methods of the matched path when the method did not match
}

func newRouter() *router {
	rt := &router{}
	add := func(method, path, op, scope string, h func(*call) response) {
		segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
		for _, p := range rt.patterns {
			if strings.Join(p.segs, "/") == strings.Join(segs, "/") {
				p.routes = append(p.routes, &route{method, op, scope, h})
				return
			}
		}
		rt.patterns = append(rt.patterns, &pattern{segs: segs, routes: []*route{{method, op, scope, h}}})
	}
	get, post, patch, del := http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	add(get, "/v1/recommendations", ops.ListRecommendations, scopeCostRead, listRecommendations)
	add(get, "/v1/anomalies", ops.ListAnomalies, scopeCostRead, listAnomalies)
	add(post, "/v1/explorer/summary", ops.ExplorerSummary, scopeCostRead, explorerSummary)
	add(post, "/v1/explorer/previous-period", ops.ExplorerPreviousPeriod, scopeCostRead, explorerPreviousPeriod)
	add(post, "/v1/explorer/history", ops.ExplorerHistory, scopeCostRead, explorerHistory)
	add(post, "/v1/explorer/heatmap", ops.ExplorerHeatmap, scopeCostRead, explorerHeatmap)
	add(get, "/v1/explorer/dimensions/{key}/values", ops.ExplorerDimensionValues, scopeCostRead, explorerDimensionValues)
	add(get, "/v1/budgets", ops.ListBudgets, scopeBudgetsRead, listBudgets)
	add(post, "/v1/budgets", ops.CreateBudget, scopeBudgetsWrite, createBudget)
	add(get, "/v1/budgets/lookback", ops.BudgetLookbackGet, scopeBudgetsRead, budgetLookbackGet)
	add(post, "/v1/budgets/lookback", ops.BudgetLookbackPost, scopeBudgetsRead, budgetLookbackPost)
	add(get, "/v1/budgets/{id}", ops.GetBudget, scopeBudgetsRead, getBudget)
	add(patch, "/v1/budgets/{id}", ops.UpdateBudget, scopeBudgetsWrite, updateBudget)
	add(del, "/v1/budgets/{id}", ops.DeleteBudget, scopeBudgetsWrite, deleteBudget)
	add(get, "/v1/budgets/{id}/actuals", ops.GetBudgetActuals, scopeBudgetsRead, getBudgetActuals)
	add(get, "/v1/budgets/{id}/planning", ops.GetBudgetPlanning, scopeBudgetsRead, getBudgetPlanning)
	add(get, "/v1/notifications/scheduled", ops.ListScheduledNotifications, scopeNotificationsRead, listScheduledNotifications)
	return rt
}

// match routes an escaped URL path. Among the patterns that match, the most
// specific wins: at the first segment where two differ, a literal beats a
// wildcard (so /v1/budgets/lookback is never read as a budget id).
func (rt *router) match(method, escapedPath string) match {
	if !strings.HasPrefix(escapedPath, "/") {
		return match{}
	}
	raw := strings.Split(escapedPath[1:], "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return match{}
		}
		segs[i] = u
	}
	var best *pattern
	for _, p := range rt.patterns {
		if p.matches(segs) && (best == nil || p.moreSpecific(best)) {
			best = p
		}
	}
	if best == nil {
		return match{}
	}
	params := map[string]string{}
	for i, s := range best.segs {
		if isWildcard(s) {
			params[s[1:len(s)-1]] = segs[i]
		}
	}
	var allow []string
	for _, r := range best.routes {
		if r.method == method {
			return match{route: r, params: params}
		}
		allow = append(allow, r.method)
	}
	return match{allow: allow}
}

func (p *pattern) matches(segs []string) bool {
	if len(segs) != len(p.segs) {
		return false
	}
	for i, s := range p.segs {
		if isWildcard(s) {
			if segs[i] == "" {
				return false
			}
		} else if s != segs[i] {
			return false
		}
	}
	return true
}

// moreSpecific reports whether p beats q for a path both match.
func (p *pattern) moreSpecific(q *pattern) bool {
	for i := range p.segs {
		pw, qw := isWildcard(p.segs[i]), isWildcard(q.segs[i])
		if pw != qw {
			return !pw
		}
	}
	return false
}

func isWildcard(seg string) bool {
	return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

func joinComma(xs []string) string { return strings.Join(xs, ", ") }
