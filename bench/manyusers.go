package main

// The many-users benchmark (issue 36, item 11): what the gateway's cache of
// upstream answers saves when many people load the same pages with one API
// key. Closed-loop clients, all with the simulator's demo key, each load
// the Overview and the Dashboard in turn, the simulator adding a latency to
// every call, on two gateways on one simulator: one with the cache off,
// one at the defaults (the cache on). They take turns in rounds, in
// reverse order every other round, as the contenders of the throughput
// runs do; the upstream calls of each window are counted from the
// simulator's access log.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// The gateways of the benchmark.
const (
	muUncached = "uncached"
	muCached   = "cached"
)

// Goals of issue 36, item 11: the cached gateway ÷ the uncached one, per
// page load.
const (
	goalManyCalls = 0.05 // upstream calls
	goalManyP50   = 0.10 // median latency
	goalManyCPU   = 0.33 // the gateway's CPU
)

// manyUsersPages are the pages each client loads in turn.
var manyUsersPages = []string{"Overview", "Dashboard"}

// manyUsersGateway is one way of running the gateway in the benchmark.
type manyUsersGateway struct {
	Name  string   `json:"name"`
	What  string   `json:"what"`
	Cache bool     `json:"cache"`
	Args  []string `json:"args,omitempty"` // beyond startGateway's
}

var manyUsersGateways = []manyUsersGateway{
	{Name: muUncached, What: "`-cache off`, as every other gateway of the harness"},
	{Name: muCached, What: "the defaults: `-cache on` (given, over the harness's `COSTGW_CACHE=off`), `-cache-ttl` of " +
		"listBudgets 30 s, getBudget and getBudgetActuals 1 min, the Explorer's 5 min, `-key-recheck 30s`, " +
		"`-cache-max-bytes 64MiB` (so the automatic memory limit is 64 MiB higher)",
		Cache: true, Args: []string{"-cache", "on"}},
}

// manyUsersReport is what the many-users benchmark measured.
type manyUsersReport struct {
	runInfo
	LoadAvgStart string             `json:"load_avg_start"`
	LoadAvgEnd   string             `json:"load_avg_end"`
	Clients      int                `json:"clients"`
	Key          string             `json:"key"`
	Pages        []string           `json:"pages"`
	Latency      time.Duration      `json:"upstream_latency"` // injected per upstream call
	Warmup       time.Duration      `json:"warmup"`
	Duration     time.Duration      `json:"duration"` // of each gateway, over all its rounds
	Rounds       int                `json:"rounds"`
	Gateways     []manyUsersGateway `json:"gateways"`
	// Results are each gateway's rounds added up, RoundResults each round.
	Results      []manyUsersResult `json:"results"`
	RoundResults []manyUsersResult `json:"round_results"`
	// Checks are each gateway's answers checked over the whole benchmark,
	// warm-ups included.
	Checks []answerCheck `json:"checks"`
	Goals  []goalRow     `json:"goals"`
}

// manyUsersResult is what one gateway did in its measured windows.
type manyUsersResult struct {
	Gateway string `json:"gateway"`
	Round   int    `json:"round,omitempty"` // from 1, in RoundResults
	// Load is the load run: its requests are the page loads completed, its
	// CPU the gateway process's, its percentiles over every page.
	Load result `json:"load"`
	// UpstreamCalls are the calls the simulator logged in the windows.
	UpstreamCalls int64 `json:"upstream_calls"`
	// Reported adds up the extensions of the answers of the windows.
	Reported answerTally `json:"reported"`
	Pages    []pageLoads `json:"pages"`

	// Derived, for readers of the JSON.
	CallsPerPageLoad float64 `json:"upstream_calls_per_page_load"`
	CPUPerPageLoadUS float64 `json:"cpu_us_per_page_load"`
}

func (m *manyUsersResult) derive() {
	m.CallsPerPageLoad = m.callsPerPage()
	m.CPUPerPageLoadUS = us(m.Load.CPUPerRequest())
}

// callsPerPage is the simulator's calls per page load completed.
func (m manyUsersResult) callsPerPage() float64 {
	if m.Load.Requests == 0 {
		return 0
	}
	return float64(m.UpstreamCalls) / float64(m.Load.Requests)
}

// pageLoads are one page's loads in the windows.
type pageLoads struct {
	Query string        `json:"query"`
	Loads int           `json:"page_loads"`
	P50   time.Duration `json:"p50"`
	P95   time.Duration `json:"p95"`
}

func pagesOf(names []string, samples map[string][]time.Duration) []pageLoads {
	var out []pageLoads
	for _, n := range names {
		s := slices.Sorted(slices.Values(samples[n]))
		out = append(out, pageLoads{Query: n, Loads: len(s), P50: percentile(s, 0.50), P95: percentile(s, 0.95)})
	}
	return out
}

// answerTally adds up what answers' extensions say of their upstream reads.
type answerTally struct {
	Answers       int64 `json:"answers"`
	UpstreamCalls int64 `json:"upstream_calls"` // extensions.cost.upstreamCalls
	Hits          int64 `json:"cache_hits"`     // extensions.cache
	Misses        int64 `json:"cache_misses"`
	Stale         int64 `json:"stale_answers"`
}

func (t answerTally) plus(o answerTally) answerTally {
	return answerTally{t.Answers + o.Answers, t.UpstreamCalls + o.UpstreamCalls, t.Hits + o.Hits, t.Misses + o.Misses,
		t.Stale + o.Stale}
}

func (t answerTally) minus(o answerTally) answerTally {
	return answerTally{t.Answers - o.Answers, t.UpstreamCalls - o.UpstreamCalls, t.Hits - o.Hits, t.Misses - o.Misses,
		t.Stale - o.Stale}
}

// answerCheck is how many of a gateway's answers had extensions that do
// not add up (answerExt.problem).
type answerCheck struct {
	Gateway      string `json:"gateway"`
	Answers      int64  `json:"answers"`
	Inconsistent int64  `json:"inconsistent"`
	First        string `json:"first_inconsistent,omitempty"`
}

// answerExt is what an answer's extensions say of its upstream reads.
type answerExt struct {
	calls        int64 // cost.upstreamCalls
	cache        bool  // a cache member is there
	hits, misses int64
	stale        bool
}

// readExtensions reads the extensions of a gateway's answer, which it
// writes last.
func readExtensions(answer []byte) (answerExt, error) {
	i := bytes.LastIndex(answer, []byte(`"extensions":`))
	if i < 0 {
		return answerExt{}, errors.New("no extensions in the answer")
	}
	var v struct {
		Extensions struct {
			Cost *struct {
				UpstreamCalls *int64 `json:"upstreamCalls"`
			} `json:"cost"`
			Cache *struct {
				Hits   int64 `json:"hits"`
				Misses int64 `json:"misses"`
				Stale  bool  `json:"stale"`
			} `json:"cache"`
		} `json:"extensions"`
	}
	// From the member to the end of the answer, whose closing brace closes
	// the object opened here.
	if err := json.Unmarshal(append([]byte{'{'}, answer[i:]...), &v); err != nil {
		return answerExt{}, fmt.Errorf("extensions: %w", err)
	}
	x := v.Extensions
	if x.Cost == nil || x.Cost.UpstreamCalls == nil {
		return answerExt{}, errors.New("no extensions.cost.upstreamCalls in the answer")
	}
	e := answerExt{calls: *x.Cost.UpstreamCalls}
	if x.Cache != nil {
		e.cache, e.hits, e.misses, e.stale = true, x.Cache.Hits, x.Cache.Misses, x.Cache.Stale
	}
	return e, nil
}

// problem is what is wrong with the extensions of an answer of q, "" when
// nothing is: without the cache, the page's calls and no cache member;
// with it, each of the page's reads a hit or a miss, and a call for each
// miss (no fault is injected, so there is no retry).
func (e answerExt) problem(q *query, cache bool) string {
	n := int64(q.minCalls())
	switch {
	case !cache && e.cache:
		return fmt.Sprintf("%s: extensions.cache with the cache off", q.Name)
	case !cache && e.calls != n:
		return fmt.Sprintf("%s: %d upstream calls, the page needs %d", q.Name, e.calls, n)
	case cache && !e.cache:
		return fmt.Sprintf("%s: no extensions.cache with the cache on", q.Name)
	case cache && e.hits+e.misses != n:
		return fmt.Sprintf("%s: %d hits + %d misses, the page reads %d", q.Name, e.hits, e.misses, n)
	case cache && e.calls != e.misses:
		return fmt.Sprintf("%s: %d upstream calls for %d misses", q.Name, e.calls, e.misses)
	}
	return ""
}

// tallied is a gateway that adds up its answers' extensions and checks them.
type tallied struct {
	contender
	cache bool

	mu    sync.Mutex
	t     answerTally
	check answerCheck
}

func (c *tallied) do(ctx context.Context, q *query, buf *bytes.Buffer) error {
	if err := c.contender.do(ctx, q, buf); err != nil {
		return err
	}
	e, err := readExtensions(buf.Bytes())
	bad := ""
	if err != nil {
		bad = q.Name + ": " + err.Error()
	} else {
		bad = e.problem(q, c.cache)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check.Answers++
	if bad != "" {
		c.check.Inconsistent++
		if c.check.First == "" {
			c.check.First = bad
		}
	}
	if err == nil {
		c.t.Answers++
		c.t.UpstreamCalls += e.calls
		c.t.Hits += e.hits
		c.t.Misses += e.misses
		if e.stale {
			c.t.Stale++
		}
	}
	return nil
}

func (c *tallied) tally() answerTally {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// logSize is the length of the simulator's access log so far.
func logSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// countCallLines counts the simulator's access-log lines of calls between
// the offsets from and to of the file at path.
func countCallLines(path string, from, to int64) (int64, error) {
	if to <= from {
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, err
	}
	var n int64
	sc := bufio.NewScanner(io.LimitReader(f, to-from))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte("msg=request")) {
			n++
		}
	}
	return n, sc.Err()
}

// runManyUsers runs the many-users benchmark on a simulator of its own,
// which adds cfg.manyUsersLatency to each call.
func runManyUsers(ctx context.Context, cfg config, b binaries) (*manyUsersReport, error) {
	rep := &manyUsersReport{runInfo: startRun(cfg), LoadAvgStart: loadAvg(),
		Clients: cfg.manyUsersClients, Key: sim.DemoKey, Pages: manyUsersPages, Latency: cfg.manyUsersLatency,
		Warmup: cfg.warmup, Duration: cfg.manyUsersDuration, Rounds: cfg.manyUsersRounds, Gateways: manyUsersGateways}
	costsim, err := startSeededSim(ctx, b, cfg.manyUsersLatency)
	if err != nil {
		return nil, err
	}
	defer costsim.stop()
	var pages []*query
	for _, n := range manyUsersPages {
		pages = append(pages, queryByName(n))
	}

	var gws []*tallied
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for _, g := range manyUsersGateways {
		p, url, err := startGateway(ctx, "gateway "+g.Name, b.gateway, costsim.url, nil, g.Args...)
		if err != nil {
			return nil, fmt.Errorf("the gateway %s: %w", g.Name, err)
		}
		procs = append(procs, p)
		c, err := newGraphQL(g.Name, url, p.pid(), false, costsim.fx)
		if err != nil {
			return nil, err
		}
		t := &tallied{contender: c, cache: g.Cache}
		for _, q := range pages {
			if _, err := answerOnce(ctx, t, q); err != nil {
				return nil, fmt.Errorf("%s on the gateway %s: %w", q.Name, g.Name, err)
			}
		}
		gws = append(gws, t)
	}

	perRound := map[string][]result{}
	samples := map[string][][]time.Duration{}
	byPage := map[string]map[string][]time.Duration{}
	merged := map[string]*manyUsersResult{}
	for _, g := range gws {
		byPage[g.name()] = map[string][]time.Duration{}
		merged[g.name()] = &manyUsersResult{Gateway: g.name()}
	}
	for round := range cfg.manyUsersRounds {
		for _, i := range reverseEveryOther(round, len(gws)) {
			g := gws[i]
			var log0, log1 int64
			var t0, t1 answerTally
			mine := map[string][]time.Duration{}
			r, lat := runLoad(ctx, g, loadSpec{pages: pages, concurrency: cfg.manyUsersClients, warmup: cfg.warmup,
				duration: cfg.manyUsersDuration / time.Duration(cfg.manyUsersRounds), latency: cfg.manyUsersLatency,
				measureRSS: true, simPid: costsim.proc.pid(),
				atStart:  func() { log0, t0 = logSize(costsim.log), g.tally() },
				atEnd:    func() { log1, t1 = logSize(costsim.log), g.tally() },
				answered: func(q *query, d time.Duration) { mine[q.Name] = append(mine[q.Name], d) }})
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			calls, err := countCallLines(costsim.log.Name(), log0, log1)
			if err != nil {
				return nil, fmt.Errorf("count the simulator's calls: %w", err)
			}
			_ = costsim.log.Truncate(0)
			x := manyUsersResult{Gateway: g.name(), Round: round + 1, Load: r, UpstreamCalls: calls,
				Reported: t1.minus(t0), Pages: pagesOf(manyUsersPages, mine)}
			x.derive()
			rep.RoundResults = append(rep.RoundResults, x)
			logf("many users %-8s round %d: %6d page loads, %7d upstream calls (%s a page load), p50 %-9v CPU %.0f µs a page load, errors %d",
				g.name(), round+1, r.Requests, calls, small(x.CallsPerPageLoad), r.P50.Round(10*time.Microsecond), x.CPUPerPageLoadUS, r.Errors)
			m := merged[g.name()]
			m.UpstreamCalls += calls
			m.Reported = m.Reported.plus(x.Reported)
			perRound[g.name()] = append(perRound[g.name()], r)
			samples[g.name()] = append(samples[g.name()], lat)
			for n, s := range mine {
				byPage[g.name()][n] = append(byPage[g.name()][n], s...)
			}
		}
	}
	for _, g := range gws {
		m := merged[g.name()]
		m.Load = merge(perRound[g.name()], samples[g.name()])
		m.Pages = pagesOf(manyUsersPages, byPage[g.name()])
		m.derive()
		rep.Results = append(rep.Results, *m)
		g.mu.Lock()
		c := g.check
		g.mu.Unlock()
		c.Gateway = g.name()
		rep.Checks = append(rep.Checks, c)
		logf("many users %-8s %6d page loads (%.1f a second), %7d upstream calls (%s a page load; the answers report %d), "+
			"p50 %-9v CPU %.0f µs a page load, peak RSS %s, %d of %d answers inconsistent",
			g.name(), m.Load.Requests, m.Load.RPS(), m.UpstreamCalls, small(m.CallsPerPageLoad), m.Reported.UpstreamCalls,
			m.Load.P50.Round(10*time.Microsecond), m.CPUPerPageLoadUS, mib(m.Load.PeakRSS), c.Inconsistent, c.Answers)
	}
	rep.Finished, rep.LoadAvgEnd = time.Now(), loadAvg()
	rep.Goals = manyUsersGoals(rep)
	for _, g := range rep.Goals {
		logf("goal: %s: %s: %s", g.Goal, g.Measured, g.verdict())
	}
	return rep, nil
}

// find returns the figures of a gateway.
func (r *manyUsersReport) find(gateway string) (manyUsersResult, bool) {
	for _, x := range r.Results {
		if x.Gateway == gateway {
			return x, true
		}
	}
	return manyUsersResult{}, false
}

// manyUsersGoals computes the goal lines of issue 36, item 11.
func manyUsersGoals(r *manyUsersReport) []goalRow {
	at := fmt.Sprintf("%d clients with one key, %v per upstream call", r.Clients, r.Latency)
	goals := []struct {
		what, unit string
		bound      float64
		v          func(manyUsersResult) float64
		text       func(float64) string
	}{
		{"upstream calls per page load", "", goalManyCalls, manyUsersResult.callsPerPage,
			small},
		{"p50 latency per page load", "", goalManyP50, func(m manyUsersResult) float64 { return float64(m.Load.P50) },
			func(x float64) string { return ms(time.Duration(x)) }},
		{"gateway CPU per page load", " CPU-µs", goalManyCPU, func(m manyUsersResult) float64 { return us(m.Load.CPUPerRequest()) },
			func(x float64) string { return fmt.Sprintf("%.0f", x) }},
	}
	c, ok1 := r.find(muCached)
	u, ok2 := r.find(muUncached)
	var rows []goalRow
	for _, g := range goals {
		goal := fmt.Sprintf("%s, cached ÷ uncached ≤ %.2f, %s", g.what, g.bound, at)
		if !ok1 || !ok2 || c.Load.Requests == 0 || u.Load.Requests == 0 || g.v(u) == 0 {
			rows = append(rows, notMeasured(goal, "no figures in this run"))
			continue
		}
		x := g.v(c) / g.v(u)
		rows = append(rows, goalRow{Goal: goal, Met: x <= g.bound,
			Measured: fmt.Sprintf("%s: cached %s%s, uncached %s%s", small(x), g.text(g.v(c)), g.unit, g.text(g.v(u)), g.unit)})
	}
	return rows
}

// small writes a ratio with three decimals, or with two significant
// digits when it is under 0.01 (a cache's calls per page load): 0.000036.
func small(x float64) string {
	if x == 0 || math.Abs(x) >= 0.01 || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.*f", 1-int(math.Floor(math.Log10(math.Abs(x)))), x)
}

// manyUsersProblems are what must hold of any run, a smoke run's above
// all: each gateway loaded pages in its window, the simulator saw the
// uncached one's calls, and every answer's extensions add up.
func manyUsersProblems(r *manyUsersReport) []string {
	var out []string
	for _, x := range r.Results {
		if x.Load.Requests == 0 {
			out = append(out, fmt.Sprintf("many users: %s: no page load completed in the window", x.Gateway))
		}
		if x.Load.Errors > 0 && r.Smoke {
			out = append(out, fmt.Sprintf("many users: %s: %d errors, first: %s", x.Gateway, x.Load.Errors, x.Load.FirstError))
		}
		if x.Gateway == muUncached && x.Load.Requests > 0 && x.UpstreamCalls == 0 {
			out = append(out, "many users: uncached: the simulator logged no upstream call")
		}
	}
	for _, c := range r.Checks {
		if c.Inconsistent > 0 {
			out = append(out, fmt.Sprintf("many users: %s: %d of %d answers have extensions that do not add up, first: %s",
				c.Gateway, c.Inconsistent, c.Answers, c.First))
		}
	}
	return out
}

// renderManyUsers writes the section of the many-users benchmark.
func renderManyUsers(b *strings.Builder, r *manyUsersReport) {
	if r == nil {
		return
	}
	p := r.openSection(b, "Many users (issue 36)", "a moment per gateway with a few clients")
	p("%s; load average (1, 5 and 15 minutes) %s at the start, %s at the end.\n", r.span(), r.LoadAvgStart, r.LoadAvgEnd)
	p("%d clients, all with one API key (`%s`, organization one), each load in turn the %s (a page load\n",
		r.Clients, r.Key, strings.Join(r.Pages, " and the "))
	p("is one GraphQL request: without a cache the Overview makes 101 upstream calls and the Dashboard 4), in a closed\n")
	p("loop, client *i* starting at page *i* mod %d so that both are loaded alike. The simulator adds %v to every\n", len(r.Pages), r.Latency)
	p("call. Two gateways, each a process of its own on that one simulator, both started before the first is\n")
	p("measured, take turns: %v each in %d round(s), in reverse order every other round, each round warming up for\n", r.Duration, r.Rounds)
	p("at least %v and until every client has had an answer. The cached gateway keeps its cache from round to round;\n", r.Warmup)
	p("its entries expire after their TTLs and are fetched again.\n\n")
	p("| gateway | settings |\n|---|---|\n")
	for _, g := range r.Gateways {
		p("| %s | %s |\n", g.Name, g.What)
	}
	p("\nUpstream calls are counted by the simulator: the lines its access log gained in the windows. The calls the\n")
	p("answers report (`extensions.cost.upstreamCalls`) and their cache hits and misses (`extensions.cache`) are added\n")
	p("up beside them, from the answers of the windows. CPU per page load is the gateway process's CPU time (user +\n")
	p("system, from `/proc`) in the windows ÷ the page loads completed in them; p50 is over every page load, each page's\n")
	p("is below. Peak RSS is the gateway's VmHWM in its windows.\n\n")

	// From the figures, by this code, as goals13 is for the other goals.
	renderGoalTable(b, manyUsersGoals(r))

	p("| gateway | page loads | page loads/s | upstream calls | calls ÷ page load | calls the answers report | cache hits / misses | p50 | p95 | p99 | CPU-µs/page load | sim CPU-µs/page load | peak RSS | errors |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		hm := "–"
		if x.Reported.Hits+x.Reported.Misses > 0 {
			hm = fmt.Sprintf("%d / %d", x.Reported.Hits, x.Reported.Misses)
		}
		p("| %s | %d | %.0f | %d | %s | %d | %s | %s | %s | %s | %.0f | %.0f | %s | %d |\n", x.Gateway, x.Load.Requests, x.Load.RPS(),
			x.UpstreamCalls, small(x.CallsPerPageLoad), x.Reported.UpstreamCalls, hm, ms(x.Load.P50), ms(x.Load.P95), ms(x.Load.P99),
			x.CPUPerPageLoadUS, us(x.Load.SimCPUPerRequest()), mib(x.Load.PeakRSS), x.Load.Errors)
	}
	p("\n| gateway | page | page loads | p50 | p95 |\n|---|---|---|---|---|\n")
	for _, x := range r.Results {
		for _, pl := range x.Pages {
			p("| %s | %s | %d | %s | %s |\n", x.Gateway, pl.Query, pl.Loads, ms(pl.P50), ms(pl.P95))
		}
	}
	if len(r.RoundResults) > len(r.Results) {
		p("\nRound by round:\n\n| round | gateway | page loads | upstream calls | calls ÷ page load | p50 | CPU-µs/page load |\n")
		p("|---|---|---|---|---|---|---|\n")
		for _, x := range r.RoundResults {
			p("| %d | %s | %d | %d | %s | %s | %.0f |\n", x.Round, x.Gateway, x.Load.Requests, x.UpstreamCalls,
				small(x.CallsPerPageLoad), ms(x.Load.P50), x.CPUPerPageLoadUS)
		}
	}
	p("\nEvery answer's extensions are checked as they arrive, warm-ups included: without the cache, the page's calls\n")
	p("and no `extensions.cache`; with it, each of the page's reads a hit or a miss, and one call for each miss.\n\n")
	p("| gateway | answers checked | inconsistent | first |\n|---|---|---|---|\n")
	for _, c := range r.Checks {
		first := c.First
		if first == "" {
			first = "–"
		}
		p("| %s | %d | %d | %s |\n", c.Gateway, c.Answers, c.Inconsistent, first)
	}
	p("\n")
}
