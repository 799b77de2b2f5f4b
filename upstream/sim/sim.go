package sim

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/costgw/gateway/upstream/ops"
)

// The demo API keys. Each belongs to one organization; see docs/simulator.md.
const (
	// DemoKey has every scope on organization one.
	DemoKey = "demo-key"
	// ReadOnlyKey has the read scopes on organization one; its writes answer
	// 403 forbidden_scope.
	ReadOnlyKey = "demo-readonly-key"
	// OtherOrgKey has every scope on organization two, whose data is disjoint
	// from organization one's, so tests can check tenant isolation.
	OtherOrgKey = "demo-other-org-key"
	// UnentitledKey belongs to organization three, whose plan has no public
	// API: every call with it answers 403 forbidden_entitlement.
	UnentitledKey = "demo-unentitled-key"
)

// Collection names accepted by [Server.IDs].
const (
	// CollectionBudgets names the budgets, oldest first.
	CollectionBudgets = "budgets"
	// CollectionRecommendations names the recommendations, biggest savings first.
	CollectionRecommendations = "recommendations"
	// CollectionAnomalies names the anomalies, most recent first.
	CollectionAnomalies = "anomalies"
	// CollectionNotifications names the scheduled notifications, oldest first.
	CollectionNotifications = "notifications"
)

// defaultAsOf returns the data date used when Options.AsOf is zero.
func defaultAsOf() time.Time { return time.Date(2026, time.November, 20, 0, 0, 0, 0, time.UTC) }

// Options configures a simulator. The zero value is a working configuration.
type Options struct {
	// Seed drives every generated record; 0 means 1.
	Seed uint64
	// AsOf is the last day with cost data (only its UTC date counts); zero
	// means 2026-11-20.
	AsOf time.Time
	// Now is the clock for write timestamps and idempotency expiry; nil means
	// time.Now. Tests pass a fake clock to make timestamps predictable.
	Now func() time.Time
	// Latency is the initial injected latency; see [Server.SetLatency].
	Latency Latency
	// Faults is the initial fault injection; see [Server.SetFaults].
	Faults Faults
}

// Latency is added to every request before anything else is checked. The
// wait ends early when the caller goes away.
type Latency struct {
	// Fixed is added to every request.
	Fixed time.Duration
	// Jitter adds a uniformly drawn extra delay in [0, Jitter).
	Jitter time.Duration
	// SpikeRate is the probability in [0,1] that a request also waits Spike.
	SpikeRate float64
	// Spike is the extra delay of a spike.
	Spike time.Duration
}

// Faults injects failures at given rates, drawn from a seeded generator.
// Rates are clamped to [0,1]. At most one fault hits a request: when the rates
// add up to more than 1, the earlier kinds win in the order Error500, Error503,
// RateLimit429, DropBefore, DropAfter.
type Faults struct {
	// Error500 answers 500 internal_error.
	Error500 float64
	// Error503 answers 503 service_unavailable with Retry-After.
	Error503 float64
	// RateLimit429 answers 429 rate_limited with Retry-After.
	RateLimit429 float64
	// DropBefore closes the connection (via http.Hijacker) before the
	// operation runs, so nothing is written or committed.
	DropBefore float64
	// DropAfter runs the operation (a write commits) and then closes the
	// connection without sending the response.
	DropAfter float64
	// RetryAfter is sent as whole seconds (rounded up, min 1) on 429 and 503;
	// zero means 1s.
	RetryAfter time.Duration
	// Ops lists the operation ids the faults apply to; empty means all
	// requests, including ones that match no operation.
	Ops []string
}

// Server is the simulator: an http.Handler serving the Cost Management API
// for the seeded organizations one, two and three. It is safe for concurrent
// use.
type Server struct {
	asOf   time.Time
	now    func() time.Time
	keys   map[string]*apiKey // immutable after New
	orgs   []*org             // immutable slice; each org guards its own state
	router *router            // immutable after New
	ids    *idRegistry        // ids handed out, so none repeats across organizations

	counts map[string]*atomic.Int64 // one counter per operation id; the map is immutable
	total  atomic.Int64

	ctl    control     // latency, faults and their generator
	keyCtl keyControls // keys revoked and throttled at run time
}

// New builds a simulator and its seeded data for organizations one, two and
// three.
func New(opts Options) *Server {
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	asOf := defaultAsOf()
	if !opts.AsOf.IsZero() {
		y, m, d := opts.AsOf.UTC().Date()
		asOf = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Server{
		asOf:   asOf,
		now:    now,
		router: newRouter(),
		ids:    &idRegistry{seen: map[string]struct{}{}},
		counts: map[string]*atomic.Int64{},
	}
	for _, op := range Operations() {
		s.counts[op] = new(atomic.Int64)
	}
	s.ctl.init(seed)
	s.ctl.setLatency(opts.Latency)
	s.ctl.setFaults(opts.Faults)
	s.orgs, s.keys = buildOrgs(seed, asOf, s.ids)
	return s
}

// Operations returns every operation id the simulator serves, in route table
// order.
func Operations() []string {
	return []string{
		ops.ListRecommendations, ops.ListAnomalies,
		ops.ExplorerSummary, ops.ExplorerPreviousPeriod, ops.ExplorerHistory, ops.ExplorerHeatmap, ops.ExplorerDimensionValues,
		ops.ListBudgets, ops.CreateBudget, ops.BudgetLookbackGet, ops.BudgetLookbackPost,
		ops.GetBudget, ops.UpdateBudget, ops.DeleteBudget, ops.GetBudgetActuals, ops.GetBudgetPlanning,
		ops.ListScheduledNotifications,
	}
}

// AsOf returns the last day with cost data, at midnight UTC.
func (s *Server) AsOf() time.Time { return s.asOf }

// SetLatency replaces the injected latency. It is safe at any time,
// concurrently with requests; requests already waiting keep their delay.
func (s *Server) SetLatency(l Latency) { s.ctl.setLatency(l) }

// SetFaults replaces the fault injection. It is safe at any time,
// concurrently with requests.
func (s *Server) SetFaults(f Faults) { s.ctl.setFaults(f) }

// Calls returns how many requests for the operation id arrived since New or
// the last ResetCounts. A request is counted on arrival, before latency,
// faults and credentials, so a request that failed still counts.
func (s *Server) Calls(op string) int64 {
	c, ok := s.counts[op]
	if !ok {
		return 0
	}
	return c.Load()
}

// Counts returns the non-zero request counts by operation id, so a test can
// compare the whole map at once.
func (s *Server) Counts() map[string]int64 {
	m := map[string]int64{}
	for op, c := range s.counts {
		if n := c.Load(); n != 0 {
			m[op] = n
		}
	}
	return m
}

// TotalCalls returns how many requests arrived, including ones that matched
// no operation (unknown path or method), so "no upstream call at all" can be
// asserted.
func (s *Server) TotalCalls() int64 { return s.total.Load() }

// ResetCounts sets every request counter to zero.
func (s *Server) ResetCounts() {
	for _, c := range s.counts {
		c.Store(0)
	}
	s.total.Store(0)
}

// IDs returns the ids of a collection ("budgets", "recommendations",
// "anomalies" or "notifications") of the key's organization, in list order,
// so tests can check that paging returns exactly the data set. It returns nil
// for an unknown key or collection.
func (s *Server) IDs(apiKey, collection string) []string {
	k, ok := s.keys[apiKey]
	if !ok {
		return nil
	}
	o := k.org
	switch collection {
	case CollectionBudgets:
		o.mu.RLock()
		defer o.mu.RUnlock()
		return idsOf(o.budgets, func(b *budget) string { return b.id })
	case CollectionRecommendations:
		return idsOf(o.recommendations, func(r recommendation) string { return r.RecommendationID })
	case CollectionAnomalies:
		return idsOf(o.anomalies, func(a anomaly) string { return a.AnomalyID })
	case CollectionNotifications:
		return idsOf(o.notifications, func(n notification) string { return n.ID })
	}
	return nil
}

// idsOf returns the id of each element of s, in order.
func idsOf[T any](s []T, id func(T) string) []string {
	ids := make([]string, 0, len(s))
	for _, x := range s {
		ids = append(ids, id(x))
	}
	return ids
}

// OperationID returns the operation id that a request with this method and
// URL path would run, or "" when none matches. Access logs use it.
func (s *Server) OperationID(method, path string) string {
	m := s.router.match(method, path)
	if m.route == nil {
		return ""
	}
	return m.route.op
}

// idRegistry remembers every generated id so that none repeats, across
// organizations and across writes.
type idRegistry struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// claim records id and reports whether it was new.
func (r *idRegistry) claim(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.seen[id]; dup {
		return false
	}
	r.seen[id] = struct{}{}
	return true
}

// ServeHTTP answers one API request, in the order docs/simulator.md fixes:
// count, latency, faults, credentials, route, entitlement, scope, operation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.serveControl(w, r) // not an operation of the contract: not counted
		return
	}
	m := s.router.match(r.Method, r.URL.EscapedPath())
	s.total.Add(1)
	op := ""
	if m.route != nil {
		op = m.route.op
		s.counts[op].Add(1)
	}
	p := s.ctl.plan(op)
	if p.delay > 0 && !sleep(r, p.delay) {
		return // the caller went away; there is nobody to answer
	}
	reqID := newRequestID()
	var resp response
	switch p.fault {
	case fault500:
		resp = errorResponse(reqID, http.StatusInternalServerError, "internal_error", "Internal server error")
	case fault503:
		resp = errorResponse(reqID, http.StatusServiceUnavailable, "service_unavailable", "The service is temporarily unavailable; retry later")
		resp.setHeader("Retry-After", p.retryAfter)
	case fault429:
		resp = errorResponse(reqID, http.StatusTooManyRequests, "rate_limited", "Rate limit exceeded; retry after "+p.retryAfter+" seconds")
		resp.setHeader("Retry-After", p.retryAfter)
	case faultDropBefore:
		s.drop(w, reqID)
		return
	default:
		resp = s.handle(r, m, reqID)
	}
	if p.fault == faultDropAfter {
		// The operation ran (a write is committed); the caller never learns.
		s.drop(w, reqID)
		return
	}
	resp.write(w, reqID)
}

// handle runs the checks after faults and then the operation.
func (s *Server) handle(r *http.Request, m match, reqID string) response {
	k, bad := s.authenticate(r, reqID)
	if bad != nil {
		return *bad
	}
	if wait := s.keyCtl.throttle(k.key, time.Now()); wait > 0 {
		resp := errorResponse(reqID, http.StatusTooManyRequests, "rate_limited", "Rate limit exceeded for this API key")
		resp.setHeader("Retry-After", retryAfterSeconds(wait))
		return resp
	}
	if m.route == nil {
		if len(m.allow) > 0 {
			resp := errorResponse(reqID, http.StatusMethodNotAllowed, "method_not_allowed",
				"Method "+r.Method+" is not allowed on this path")
			resp.setHeader("Allow", joinComma(m.allow))
			return resp
		}
		return errorResponse(reqID, http.StatusNotFound, "not_found", "No such resource")
	}
	if !k.org.entitled {
		return errorResponse(reqID, http.StatusForbidden, "forbidden_entitlement",
			"The organization's plan does not include the public API")
	}
	if !k.scopes[m.route.scope] {
		return errorResponse(reqID, http.StatusForbidden, "forbidden_scope",
			"API key is missing required scope: "+m.route.scope)
	}
	c := &call{s: s, r: r, key: k, org: k.org, params: m.params, reqID: reqID}
	return m.route.handler(c)
}

// drop closes the connection without a response. When the writer cannot be
// hijacked (HTTP/2, or an in-process transport that calls ServeHTTP with a
// recorder) there is no connection to close; the nearest observable outcome
// is a 500 whose result the caller cannot trust, so that is what it gets.
func (s *Server) drop(w http.ResponseWriter, reqID string) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		errorResponse(reqID, http.StatusInternalServerError, "internal_error",
			"Connection dropped (injected fault)").write(w, reqID)
		return
	}
	_ = conn.Close()
}

// sleep waits d or until the request's context ends, reporting whether the
// full wait happened.
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
