package main

// The goal lines of issue 13 ("Performance II: what one request costs the
// gateway in CPU and memory"), each computed from one run, side by side.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Goals of issue 13.
const (
	// goalClients is the concurrency of the CPU and throughput goals.
	goalClients = 50
	// goalCPUVsMesh: the gateway's CPU per request at most a third of Mesh's.
	goalCPUVsMesh = 1.0 / 3
	// goalCPUVsDirect: at most 1.5 × the direct client's.
	goalCPUVsDirect = 1.5
	// goalMultiVsDirect: throughput of multi-call queries at least 0.70 × direct's.
	goalMultiVsDirect = 0.70
	// goalSingleVsFloor: throughput of single-call queries within 20 % of
	// the extra-hop floor's.
	goalSingleVsFloor = 0.80
	// goalOverviewLatency and goalOverviewSlack: the Overview at this
	// upstream latency within this much of the direct client (p50, 1 client).
	goalOverviewLatency = 20 * time.Millisecond
	goalOverviewSlack   = 2 * time.Millisecond
	// goalOverviewQuery is the query of the latency goal.
	goalOverviewQuery = "Overview"
)

// goalRow is one goal line: what is asked, what was measured, and whether it
// is met.
type goalRow struct {
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
	// NotMeasured marks a goal this run has no figure for (a contender or a
	// configuration was left out).
	NotMeasured bool `json:"not_measured,omitempty"`
}

func (g goalRow) verdict() string {
	if g.NotMeasured {
		return "not measured"
	}
	return metMark(g.Met)
}

func notMeasured(goal, why string) goalRow {
	return goalRow{Goal: goal, Measured: why, NotMeasured: true}
}

// refClients is the concurrency the CPU and throughput goals are read at:
// goalClients, or the run's nearest to it (a smoke run has fewer clients).
func (r *report) refClients() int {
	best := 0
	for _, n := range r.Concurrency {
		if best == 0 || abs(n-goalClients) < abs(best-goalClients) {
			best = n
		}
	}
	return best
}

func abs(n int) int { return max(n, -n) }

// multiCall reports whether a query needs more than one upstream call. The
// issue names the Overview and the Dashboard; the BudgetDetail, two calls
// in one tier, is one as well and is held to the same goal.
func multiCall(q *query) bool { return q.minCalls() > 1 }

// perQuery applies f to every query of the run that has a figure and
// reports the figures ("BudgetList 0.95, …"), how many pass, and out of how
// many.
func perQuery(r *report, keep func(*query) bool, f func(qn string) (float64, bool), pass func(float64) bool) (list string, met, n int) {
	var parts []string
	for _, qn := range r.Queries {
		if keep != nil && !keep(queryByName(qn)) {
			continue
		}
		x, ok := f(qn)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		n++
		mark := ""
		if pass(x) {
			met++
		} else {
			mark = " ✗"
		}
		parts = append(parts, fmt.Sprintf("%s %.2f%s", qn, x, mark))
	}
	return strings.Join(parts, ", "), met, n
}

func queryNames(keep func(*query) bool) []string {
	var out []string
	for _, q := range queries {
		if keep(&q) {
			out = append(out, q.Name)
		}
	}
	return out
}

// goals13 computes the goal lines of issue 13.
func goals13(r *report) []goalRow {
	var rows []goalRow
	lat := r.Latencies[0]
	n := r.refClients()
	at := fmt.Sprintf("%d clients", n)
	if n != goalClients {
		at += fmt.Sprintf(" (this run has no %d)", goalClients)
	}
	ratioOf := func(a, b string, v func(result) float64) func(string) (float64, bool) {
		return func(qn string) (float64, bool) {
			x, ok1 := r.find(a, qn, n, lat)
			y, ok2 := r.find(b, qn, n, lat)
			if !ok1 || !ok2 || v(y) == 0 || x.Requests == 0 {
				return 0, false
			}
			return v(x) / v(y), true
		}
	}
	cpu := func(x result) float64 { return float64(x.CPUPerRequest()) }
	rps := func(x result) float64 { return x.RPS() }
	row := func(goal string, list string, met, all int) goalRow {
		if all == 0 {
			return notMeasured(goal, "no figures in this run")
		}
		return goalRow{Goal: goal, Measured: fmt.Sprintf("%s (met by %d of %d)", list, met, all), Met: met == all}
	}

	list, met, all := perQuery(r, nil, ratioOf(nameGateway, nameMesh, cpu), func(x float64) bool { return x <= goalCPUVsMesh })
	rows = append(rows, row(fmt.Sprintf("CPU per request, gateway ÷ Mesh ≤ 1/3 on every query, %s", at), list, met, all))
	list, met, all = perQuery(r, nil, ratioOf(nameGateway, nameDirect, cpu), func(x float64) bool { return x <= goalCPUVsDirect })
	rows = append(rows, row(fmt.Sprintf("CPU per request, gateway ÷ direct ≤ 1.5 on every query, %s", at), list, met, all))
	list, met, all = perQuery(r, multiCall, ratioOf(nameGateway, nameDirect, rps), func(x float64) bool { return x >= goalMultiVsDirect })
	rows = append(rows, row(fmt.Sprintf("throughput, gateway ÷ direct ≥ 0.70 on multi-call queries (%s), %s",
		strings.Join(queryNames(multiCall), ", "), at), list, met, all))
	single := func(q *query) bool { return !multiCall(q) }
	list, met, all = perQuery(r, single, ratioOf(nameGateway, nameFloor, rps), func(x float64) bool { return x >= goalSingleVsFloor })
	rows = append(rows, row(fmt.Sprintf("throughput, gateway ÷ the extra-hop floor ≥ 0.80 on single-call queries (%s), %s",
		strings.Join(queryNames(single), ", "), at), list, met, all))

	maxConc := slices.Max(r.Concurrency)
	var parts []string
	met, all = 0, 0
	for _, qn := range r.Queries {
		g, ok := r.find(nameGateway, qn, maxConc, lat)
		if !ok || g.PeakRSS == 0 {
			continue
		}
		all++
		mark := ""
		if g.PeakRSS <= goalPeakRSSBytes {
			met++
		} else {
			mark = " ✗"
		}
		parts = append(parts, fmt.Sprintf("%s %s%s", qn, mib(g.PeakRSS), mark))
	}
	rows = append(rows, row(fmt.Sprintf("peak RSS at %d concurrent clients ≤ 100 MB on every query", maxConc),
		strings.Join(parts, ", "), met, all))

	goal := fmt.Sprintf("%s latency at %v per upstream call ≤ direct + 2 ms (p50, 1 client)", goalOverviewQuery, goalOverviewLatency)
	g, ok1 := r.find(nameGateway, goalOverviewQuery, 1, goalOverviewLatency)
	d, ok2 := r.find(nameDirect, goalOverviewQuery, 1, goalOverviewLatency)
	if ok1 && ok2 && g.Requests > 0 && d.Requests > 0 {
		rows = append(rows, goalRow{Goal: goal, Measured: fmt.Sprintf("gateway %s, direct %s: direct %+.2f ms",
			ms(g.P50), ms(d.P50), float64(g.P50-d.P50)/float64(time.Millisecond)), Met: g.P50 <= d.P50+goalOverviewSlack})
	} else {
		rows = append(rows, notMeasured(goal, "no run of it at this latency"))
	}

	parts, met, all = nil, 0, 0
	for _, qn := range r.Queries {
		c, ok := r.calls(nameGateway, qn)
		if !ok {
			continue
		}
		x := float64(total(c)) / float64(queryByName(qn).minCalls())
		all++
		if x <= goalCallRatio {
			met++
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", qn, x))
	}
	rows = append(rows, row("upstream calls ÷ minimum = 1.00 on every query", strings.Join(parts, ", "), met, all))
	return rows
}

func renderGoalTable(b *strings.Builder, rows []goalRow) {
	fmt.Fprintf(b, "| goal | measured | |\n|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(b, "| %s | %s | %s |\n", row.Goal, row.Measured, row.verdict())
	}
	fmt.Fprintf(b, "\n")
}

// renderGoals writes the goal tables: issue 13's with the per-query CPU and
// throughput behind them, then the first round's.
func renderGoals(b *strings.Builder, r *report) {
	p := printer(b)
	n := r.refClients()
	lat := r.Latencies[0]
	p("## Goals of issue 13: what one request costs\n\n")
	p("Each figure is from this run, every contender measured side by side on the same simulator; ✗ marks a query\n")
	p("that misses. CPU per request is the CPU time (user + system, from `/proc/<pid>/stat`) of the contender's own\n")
	p("processes during the measured window, divided by the requests completed in it: the gateway's process;\n")
	p("for mesh, Hive Gateway's primary and its forked workers together; for direct, the bench process, which is\n")
	p("that client; for the floor, its process. The simulator's CPU is never in it and is shown on its own.\n\n")
	p("**The extra-hop floor** (`floor`, `bench/floor.go`) is the least a gateway can cost: the direct client's\n")
	p("work (the same REST calls with the same upstream client, the same decoding and the same JSON answer) served\n")
	p("by a plain `net/http` handler in a process of its own, so that a request crosses the same two HTTP hops as\n")
	p("through the gateway, with no GraphQL at all. \"Within 20 %% of the floor\" is read as the gateway's\n")
	p("throughput at least 0.80 × the floor's. Multi-call queries are those whose minimum is more than one\n")
	p("upstream call: the issue names the Overview and the Dashboard, and the BudgetDetail (two calls, one tier)\n")
	p("is held to the same goal.\n\n")
	renderGoalTable(b, goals13(r))
	if r.Overhead != nil {
		p("The goal of the telemetry-overhead benchmark (issue 11) is under [Telemetry overhead](#telemetry-overhead-issue-11).\n")
	}
	if r.ManyUsers != nil {
		p("The goals of the many-users benchmark (issue 36) are under [Many users](#many-users-issue-36).\n")
	}
	if r.Hostile != nil {
		p("The goals of the hostile-traffic benchmark (issue 14) are under [Hostile traffic](#hostile-traffic-issue-14).\n")
	}
	if r.Overhead != nil || r.ManyUsers != nil || r.Hostile != nil {
		p("\n")
	}

	p("### CPU per request at %d clients\n\n", n)
	p("CPU-µs per request of each contender's own processes (fewer is better); `simulator` is the simulator's\n")
	p("CPU per gateway request in the same window, the upstream work that every contender causes alike.\n")
	p("Every concurrency is in [Throughput and tail latency](#throughput-and-tail-latency).\n\n")
	p("| query | gateway | direct | floor | mesh | simulator | gateway ÷ mesh | gateway ÷ direct | gateway ÷ floor |\n")
	p("|---|---|---|---|---|---|---|---|---|\n")
	for _, qn := range r.Queries {
		g, ok := r.find(nameGateway, qn, n, lat)
		if !ok {
			continue
		}
		cell := r.cells(qn, n, lat, cpuFigure)
		gs, gv := cell(nameGateway)
		ds, dv := cell(nameDirect)
		fs, fv := cell(nameFloor)
		mstr, mv := cell(nameMesh)
		p("| %s | %s | %s | %s | %s | %.0f | %s | %s | %s |\n", qn, gs, ds, fs, mstr, us(g.SimCPUPerRequest()),
			ratio(gv, mv), ratio(gv, dv), ratio(gv, fv))
	}
	p("\n### Throughput at %d clients, and the floor\n\n", n)
	p("Requests per second; `floor ÷ direct` is what the extra hop alone costs, `gateway ÷ floor` what GraphQL\n")
	p("costs on top of it.\n\n")
	p("| query | upstream calls | gateway | direct | floor | mesh | gateway ÷ direct | gateway ÷ floor | floor ÷ direct |\n")
	p("|---|---|---|---|---|---|---|---|---|\n")
	for _, qn := range r.Queries {
		g, ok := r.find(nameGateway, qn, n, lat)
		if !ok {
			continue
		}
		cell := r.cells(qn, n, lat, rpsFigure)
		ds, dv := cell(nameDirect)
		fs, fv := cell(nameFloor)
		mstr, _ := cell(nameMesh)
		p("| %s | %d | %.0f | %s | %s | %s | %s | %s | %s |\n", qn, queryByName(qn).minCalls(), g.RPS(), ds, fs, mstr,
			ratio(g.RPS(), dv), ratio(g.RPS(), fv), ratio(fv, dv))
	}
	p("\n## Goals of the first round\n\n")
	renderGoalTable(b, earlierGoals(r))
	p("Throughput goals are checked at every query and concurrency of the throughput runs; \"worst\" is the\n")
	p("least favourable of them. Why a goal is missed is discussed under [Findings](#findings).\n\n")
}
