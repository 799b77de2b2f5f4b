package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// machine describes where the run happened.
type machine struct {
	CPUs      int               `json:"cpus"`
	CPUModel  string            `json:"cpu_model"`
	MemTotal  string            `json:"mem_total"`
	Kernel    string            `json:"kernel"`
	Go        string            `json:"go"`
	Node      string            `json:"node,omitempty"`
	Packages  map[string]string `json:"packages,omitempty"` // Mesh's, from its lockfile
	LoadAvg   string            `json:"load_avg"`           // at the start
	GoMaxProc int               `json:"gomaxprocs"`
}

func describeMachine(b binaries) machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), GoMaxProc: runtime.GOMAXPROCS(0)}
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if info, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
				m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if v, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(v))
	}
	m.LoadAvg = loadAvg()
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m.Node = strings.TrimSpace(string(out))
	}
	if lock, err := os.ReadFile(filepath.Join(b.meshDir, "package-lock.json")); err == nil {
		var l struct {
			Packages map[string]struct {
				Version string `json:"version"`
			} `json:"packages"`
		}
		if json.Unmarshal(lock, &l) == nil {
			m.Packages = map[string]string{}
			for _, p := range []string{"@graphql-hive/gateway", "@graphql-mesh/compose-cli", "@omnigraph/openapi", "graphql"} {
				if v, ok := l.Packages["node_modules/"+p]; ok {
					m.Packages[p] = v.Version
				}
			}
		}
	}
	return m
}

// Goals of the issue.
const (
	goalCallRatio    = 1.00
	goalCPFactor     = 1.05
	goalCPSlack      = 2 * time.Millisecond
	goalVsDirect     = 0.70
	goalVsMesh       = 5.0
	goalP95VsMesh    = 0.20
	goalPeakRSSBytes = 100 << 20
)

// find returns the result of a contender, query, concurrency and latency.
func (r *report) find(contender, q string, conc int, lat time.Duration) (result, bool) {
	for _, x := range r.Results {
		if x.Contender == contender && x.Query == q && x.Concurrency == conc && x.Latency == lat {
			return x, true
		}
	}
	return result{}, false
}

// figure is one figure of a result, and whether the result has it.
type figure func(result) (float64, bool)

// Figures that a table's cells show: the throughput, and the CPU-µs per
// request, which a result without a completed request does not have.
var (
	rpsFigure figure = func(x result) (float64, bool) { return x.RPS(), true }
	cpuFigure figure = func(x result) (float64, bool) { return us(x.CPUPerRequest()), x.Requests > 0 }
)

// cells returns the cell of a table's row at query qn, n clients and
// latency lat for each contender: its figure f, rounded, and the figure
// itself for a ratio; "–" and 0 where the run has none.
func (r *report) cells(qn string, n int, lat time.Duration, f figure) func(contender string) (string, float64) {
	return func(c string) (string, float64) {
		x, ok := r.find(c, qn, n, lat)
		if !ok {
			return "–", 0
		}
		v, ok := f(x)
		if !ok {
			return "–", 0
		}
		return fmt.Sprintf("%.0f", v), v
	}
}

func (r *report) calls(contender, q string) (map[string]int, bool) {
	for _, c := range r.Calls {
		if c.Contender == contender && c.Query == q {
			return c.Calls, true
		}
	}
	return nil, false
}

func (r *report) has(contender string) bool { return slices.Contains(r.Contenders, contender) }

func queryByName(name string) *query {
	for i := range queries {
		if queries[i].Name == name {
			return &queries[i]
		}
	}
	return nil
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a/b) {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func metMark(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// renderReport writes the report as Markdown.
func renderReport(r *report) string {
	var b strings.Builder
	p := printer(&b)
	if len(r.Latencies) == 0 {
		// A section alone (-hostile or -overhead without an earlier run).
		var ran []string
		if r.Overhead != nil {
			ran = append(ran, "the telemetry-overhead benchmark")
		}
		if r.ManyUsers != nil {
			ran = append(ran, "the many-users benchmark")
		}
		if r.Hostile != nil {
			ran = append(ran, "the hostile-traffic benchmark")
		}
		p("# Benchmarks\n\nOnly %s has run; `go run ./bench` runs the others.\n\n", strings.Join(ran, " and "))
		renderOverhead(&b, r.Overhead)
		renderManyUsers(&b, r.ManyUsers)
		renderHostile(&b, r.Hostile)
		return b.String()
	}
	throughputLat := r.Latencies[0]

	p("# Benchmarks\n\n")
	p("The gateway measured side by side with a hand-written Go client making the same REST calls with ideal\n")
	p("parallelism (**direct**, the physical limit of the work), with that client's work served over one more HTTP\n")
	p("hop by a minimal process with no GraphQL (**floor**, the extra-hop floor) and with GraphQL Mesh (**mesh**),\n")
	p("all on the same simulator process (`cmd/costsim`) on one machine, in one run. This file is written by the harness in\n")
	p("`bench/` (`go run ./bench`, which also writes the figures to the JSON file beside it); do not edit it by\n")
	p("hand: rerun it, or render it again from its JSON with `go run ./bench -render docs/benchmarks.json`.\n\n")
	p("Every gateway here runs with its cache of upstream answers off (`-cache off`, set as `COSTGW_CACHE=off`), so\n")
	p("that each request makes its own upstream calls: the figures are what one request costs")
	if r.ManyUsers != nil {
		p("; what the cache saves\nmany users is under [Many users](#many-users-issue-36)")
	}
	p(".\n\n")
	if r.Smoke {
		p("**Smoke run**: each configuration ran for about a second only. The figures check that the harness works;\n")
		p("they are not measurements.\n\n")
	}
	p("```sh\n(cd bench/mesh && npm ci)   # once: Mesh and Hive Gateway, pinned by package-lock.json\n%s\n```\n\n", r.Command)
	rounds := max(r.Rounds, 1)
	p("%s. Each configuration (query, contender, clients) is measured for %v in all, in %d\n", r.span(), r.Duration, rounds)
	p("round(s) with the contenders taking turns (in reverse order every other round); each round warms up for at\n")
	p("least %v and until every client has had an answer, clients starting spread over the warm-up. Closed loop:\n", r.Warmup)
	p("each client sends its next request when the last one is answered; requests that complete in the window\n")
	p("count. Throughput runs have the simulator add %v per call; the critical-path runs are at concurrency 1 with\n", throughputLat)
	p("%s per call", durations(r.Latencies))
	if r.PathDuration > 0 && len(r.Latencies) > 1 {
		// A one-client median of the slowest query, from a throughput
		// run's length, moved by about a millisecond from run to run.
		p("; those at %s are measured for %v in all, in %d rounds, for enough answers of the slowest query to\n",
			durations(r.Latencies[1:]), r.PathDuration, max(r.PathRounds, 1))
		p("steady its median")
	}
	p(".\n\n")

	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %d × %s (GOMAXPROCS %d) |\n| memory | %s |\n| kernel | %s |\n| Go | %s |\n",
		r.Machine.CPUs, r.Machine.CPUModel, r.Machine.GoMaxProc, r.Machine.MemTotal, r.Machine.Kernel, r.Machine.Go)
	if r.Machine.Node != "" {
		p("| Node.js | %s |\n", r.Machine.Node)
	}
	for _, k := range sortedKeys(r.Machine.Packages) {
		p("| %s | %s |\n", k, r.Machine.Packages[k])
	}
	if r.has(nameMesh) {
		p("| Mesh processes | Hive Gateway with `--fork %d` (a primary and %d workers), `NODE_ENV=production` |\n", r.MeshFork, r.MeshFork)
	}
	p("| load average at start | %s |\n\n", r.Machine.LoadAvg)
	p("The machine is shared and has %d cores for everything: the load generator, the simulator and the contender\n", r.Machine.CPUs)
	p("run on them together, so every contender pays for the simulator's work and its own, and figures move by\n")
	p("several per cent between runs. Compare contenders within one run, not across runs.\n\n")

	renderGoals(&b, r)
	renderQueries(&b, r)
	renderCalls(&b, r)
	renderCriticalPath(&b, r)
	renderThroughput(&b, r, throughputLat)
	renderMemory(&b, r)
	renderBaseline(&b, r)
	renderOverhead(&b, r.Overhead)
	renderManyUsers(&b, r.ManyUsers)
	renderHostile(&b, r.Hostile)

	if notes, err := os.ReadFile(filepath.Join("bench", "NOTES.md")); err == nil {
		p("%s", notes)
	}
	return b.String()
}

// latencyGoal is the goal row of a bound on the gateway's p50, met by every
// query whose p50 is within it: measure returns a query's p50 and bound, or
// false where the query was not measured. False when none was.
func (r *report) latencyGoal(goal string, measure func(qn string) (p50, bound time.Duration, ok bool)) (goalRow, bool) {
	worst, worstQ := 0.0, ""
	met, all := 0, 0
	for _, qn := range r.Queries {
		p50, bound, ok := measure(qn)
		if !ok {
			continue
		}
		if x := float64(p50) / float64(bound); x > worst || worstQ == "" {
			worst, worstQ = x, qn
		}
		all++
		if p50 <= bound {
			met++
		}
	}
	if worstQ == "" {
		return goalRow{}, false
	}
	return goalRow{Goal: goal, Met: met == all,
		Measured: fmt.Sprintf("met by %d of %d queries; worst %.2f of the bound (%s)", met, all, worst, worstQ)}, true
}

func durations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, " and ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// earlierGoals are the goal lines of the first round of performance work,
// kept so that what was met stays met.
func earlierGoals(r *report) []goalRow {
	var rows []goalRow

	// Upstream calls.
	worst, worstQ := 0.0, ""
	for _, qn := range r.Queries {
		c, ok := r.calls(nameGateway, qn)
		if !ok {
			continue
		}
		q := queryByName(qn)
		if x := float64(total(c)) / float64(q.minCalls()); x > worst || worstQ == "" {
			worst, worstQ = x, qn
		}
	}
	if worstQ != "" {
		rows = append(rows, goalRow{Goal: "upstream calls ÷ minimum = 1.00 for every query",
			Measured: fmt.Sprintf("worst %.2f (%s)", worst, worstQ), Met: worst <= goalCallRatio})
	}

	// Critical path.
	for _, lat := range r.Latencies {
		goal := fmt.Sprintf("latency ≤ 1.05 × tiers × %v + 2 ms (p50, concurrency 1)", lat)
		if row, ok := r.latencyGoal(goal, func(qn string) (p50, bound time.Duration, ok bool) {
			res, found := r.find(nameGateway, qn, 1, lat)
			if !found {
				return 0, 0, false
			}
			return res.P50, cpBound(queryByName(qn).Tiers, lat), true
		}); ok {
			rows = append(rows, row)
		}
	}
	// The same bound on the measured critical path: the direct client's
	// latency, which adds to the injected latency what the calls themselves
	// cost on this machine.
	for _, lat := range r.Latencies {
		goal := fmt.Sprintf("latency ≤ 1.05 × direct's + 2 ms, %v per call (the measured critical path)", lat)
		if row, ok := r.latencyGoal(goal, func(qn string) (p50, bound time.Duration, ok bool) {
			g, found := r.find(nameGateway, qn, 1, lat)
			d, found2 := r.find(nameDirect, qn, 1, lat)
			return g.P50, time.Duration(goalCPFactor*float64(d.P50)) + goalCPSlack, found && found2
		}); ok {
			rows = append(rows, row)
		}
	}

	// Throughput and tail latency.
	lat := r.Latencies[0]
	type cmp struct {
		v  float64
		at string
	}
	vsDirect, vsMesh, p95Mesh := cmp{math.Inf(1), ""}, cmp{math.Inf(1), ""}, cmp{math.Inf(-1), ""}
	var metDirect, metMesh, metP95, nDirect, nMesh int
	for _, qn := range r.Queries {
		for _, n := range r.Concurrency {
			g, ok := r.find(nameGateway, qn, n, lat)
			if !ok {
				continue
			}
			at := fmt.Sprintf("%s, c=%d", qn, n)
			if d, ok := r.find(nameDirect, qn, n, lat); ok && d.RPS() > 0 {
				x := g.RPS() / d.RPS()
				if x < vsDirect.v {
					vsDirect = cmp{x, at}
				}
				nDirect++
				if x >= goalVsDirect {
					metDirect++
				}
			}
			if m, ok := r.find(nameMesh, qn, n, lat); ok && m.RPS() > 0 && m.P95 > 0 {
				x, y := g.RPS()/m.RPS(), float64(g.P95)/float64(m.P95)
				if x < vsMesh.v {
					vsMesh = cmp{x, at}
				}
				if y > p95Mesh.v {
					p95Mesh = cmp{y, at}
				}
				nMesh++
				if x >= goalVsMesh {
					metMesh++
				}
				if y <= goalP95VsMesh {
					metP95++
				}
			}
		}
	}
	if vsDirect.at != "" {
		rows = append(rows, goalRow{Goal: "throughput ≥ 0.70 × direct", Measured: fmt.Sprintf("met in %d of %d configurations; worst %.2f (%s)",
			metDirect, nDirect, vsDirect.v, vsDirect.at), Met: metDirect == nDirect})
	}
	if vsMesh.at != "" {
		rows = append(rows, goalRow{Goal: "throughput ≥ 5 × Mesh", Measured: fmt.Sprintf("met in %d of %d configurations; worst %.2f× (%s)",
			metMesh, nMesh, vsMesh.v, vsMesh.at), Met: metMesh == nMesh})
		rows = append(rows, goalRow{Goal: "p95 ≤ 0.20 × Mesh's", Measured: fmt.Sprintf("met in %d of %d configurations; worst %.2f (%s)",
			metP95, nMesh, p95Mesh.v, p95Mesh.at), Met: metP95 == nMesh})
	}

	// Memory.
	maxConc := slices.Max(r.Concurrency)
	var peak int64
	peakQ := ""
	metRSS, nRSS := 0, 0
	for _, qn := range r.Queries {
		g, ok := r.find(nameGateway, qn, maxConc, lat)
		if !ok || g.PeakRSS == 0 {
			continue
		}
		nRSS++
		if g.PeakRSS <= goalPeakRSSBytes {
			metRSS++
		}
		if g.PeakRSS > peak {
			peak, peakQ = g.PeakRSS, qn
		}
	}
	if peakQ != "" {
		rows = append(rows, goalRow{Goal: fmt.Sprintf("peak RSS at %d concurrent clients ≤ 100 MB", maxConc),
			Measured: fmt.Sprintf("met by %d of %d queries; highest %s (%s)", metRSS, nRSS, mib(peak), peakQ), Met: metRSS == nRSS})
	}
	return rows
}

// cpBound is the critical-path goal: 1.05 × tiers × latency + 2 ms.
func cpBound(tiers int, lat time.Duration) time.Duration {
	return time.Duration(goalCPFactor*float64(time.Duration(tiers)*lat)) + goalCPSlack
}

func renderQueries(b *strings.Builder, r *report) {
	p := printer(b)
	p("## The queries\n\n")
	p("Defined in `bench/queries.go`; the minimum calls and tiers are worked out by hand there and asserted by\n")
	p("`TestQueriesMakeTheMinimumCalls` and `TestQueriesTakeTheMinimumTiers` in `bench/queries_test.go`.\n\n")
	p("| query | page | minimum calls | tiers | why |\n|---|---|---|---|---|\n")
	for _, qn := range r.Queries {
		q := queryByName(qn)
		p("| %s | %s | %d | %d | %s |\n", q.Name, q.Title, q.minCalls(), q.Tiers, q.Why)
	}
	p("\n")
	for _, qn := range r.Queries {
		q := queryByName(qn)
		p("<details><summary>%s: the gateway's query and Mesh's</summary>\n\n```graphql\n%s\n```\n\n", q.Name, q.Gateway)
		if q.Mesh != "" {
			p("```graphql\n%s\n```\n\n", q.Mesh)
		}
		p("</details>\n\n")
	}
}

func renderCalls(b *strings.Builder, r *report) {
	p := printer(b)
	p("## Upstream calls per query\n\n")
	p("Counted from the simulator's access log while each contender served the query once. Goal: the gateway's\n")
	p("calls ÷ the minimum = 1.00.\n\n")
	p("| query | minimum |")
	for _, c := range r.Contenders {
		p(" %s | %s ÷ min |", c, c)
	}
	p(" records (%s) |\n|---|---|", strings.Join(r.Contenders, " / "))
	for range r.Contenders {
		p("---|---|")
	}
	p("---|\n")
	for _, qn := range r.Queries {
		q := queryByName(qn)
		p("| %s | %d |", qn, q.minCalls())
		for _, c := range r.Contenders {
			if calls, ok := r.calls(c, qn); ok {
				p(" %d | %.2f |", total(calls), float64(total(calls))/float64(q.minCalls()))
			} else {
				p(" – | – |")
			}
		}
		var recs []string
		for _, rec := range r.Records[qn] {
			recs = append(recs, fmt.Sprint(rec.Count))
		}
		p(" %s |\n", strings.Join(recs, " / "))
	}
	p("\nRecords are the budgets, planning rows, heatmap rows, recommendations or anomalies in each contender's\n")
	p("answer: the same count shows that the contenders did the same work.\n\n")
}

func renderCriticalPath(b *strings.Builder, r *report) {
	p := printer(b)
	p("## Critical-path latency\n\n")
	p("One client, requests back to back; p50 of each contender. The critical path is tiers × the latency the\n")
	p("simulator adds to each call; the goal bound is 1.05 × that + 2 ms. `direct` shows what the work itself\n")
	p("costs on this machine besides the added latency: the simulator's own time per call, JSON and HTTP.\n\n")
	for _, lat := range r.Latencies {
		p("### %v per upstream call\n\n", lat)
		p("| query | tiers | critical path | goal bound | gateway p50 | gateway ÷ bound | direct p50 | gateway − direct |")
		if r.has(nameMesh) {
			p(" mesh p50 |")
		}
		p(" |\n|---|---|---|---|---|---|---|---|")
		if r.has(nameMesh) {
			p("---|")
		}
		p("---|\n")
		for _, qn := range r.Queries {
			q := queryByName(qn)
			g, ok := r.find(nameGateway, qn, 1, lat)
			if !ok {
				continue
			}
			bound := cpBound(q.Tiers, lat)
			d, _ := r.find(nameDirect, qn, 1, lat)
			p("| %s | %d | %s | %s | %s | %.2f | %s | %s |", qn, q.Tiers, ms(time.Duration(q.Tiers)*lat), ms(bound),
				ms(g.P50), float64(g.P50)/float64(bound), ms(d.P50), ms(g.P50-d.P50))
			if r.has(nameMesh) {
				if m, ok := r.find(nameMesh, qn, 1, lat); ok {
					p(" %s |", ms(m.P50))
				} else {
					p(" – |")
				}
			}
			p(" %s |\n", metMark(g.P50 <= bound))
		}
		p("\n")
	}
}

func renderThroughput(b *strings.Builder, r *report, lat time.Duration) {
	p := printer(b)
	p("## Throughput and tail latency\n\n")
	p("Simulator latency %v per call. req/CPU-s divides the requests by the CPU time of the contender's own\n", lat)
	p("processes (the gateway's; the bench process for direct, which is the client itself; the floor's; Hive\n")
	p("Gateway's primary and workers for mesh), and CPU-µs/req is its inverse; the simulator's CPU is not in\n")
	p("them, and is shown on its own as sim CPU-µs/req: the simulator's CPU in the same window per request of\n")
	p("that contender. client CPU-µs/req is the load generator's (the bench process's) for the contenders it\n")
	p("reaches over HTTP: CPU that the machine spends on the run but that is no contender's, and that the direct\n")
	p("client, which is the bench process, does not pay. Ratios: gateway ÷ direct, gateway ÷ floor and gateway ÷\n")
	p("mesh, of throughput and of CPU per request, and gateway p95 ÷ mesh p95.\n\n")
	for _, qn := range r.Queries {
		p("### %s\n\n", qn)
		p("| clients | contender | req/s | req/CPU-s | CPU-µs/req | sim CPU-µs/req | client CPU-µs/req | p50 | p95 | p99 | errors |\n")
		p("|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, n := range r.Concurrency {
			for _, c := range r.Contenders {
				x, ok := r.find(c, qn, n, lat)
				if !ok {
					continue
				}
				client := "–"
				if x.ClientCPU > 0 {
					client = fmt.Sprintf("%.0f", us(x.ClientCPUPerRequest()))
				}
				p("| %d | %s | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %s | %d |\n", n, c, x.RPS(), x.PerCPU(),
					us(x.CPUPerRequest()), us(x.SimCPUPerRequest()), client, ms(x.P50), ms(x.P95), ms(x.P99), x.Errors)
			}
		}
		p("\n| clients | throughput gateway ÷ direct | ÷ floor | ÷ mesh | CPU/req gateway ÷ direct | ÷ floor | ÷ mesh | gateway p95 ÷ mesh p95 |\n")
		p("|---|---|---|---|---|---|---|---|\n")
		for _, n := range r.Concurrency {
			g, ok := r.find(nameGateway, qn, n, lat)
			if !ok {
				continue
			}
			rps, cpu := r.cells(qn, n, lat, rpsFigure), r.cells(qn, n, lat, cpuFigure)
			other := func(c string) (string, string) {
				_, xr := rps(c)
				_, xc := cpu(c)
				return ratio(g.RPS(), xr), ratio(us(g.CPUPerRequest()), xc)
			}
			dr, dc := other(nameDirect)
			fr, fc := other(nameFloor)
			mr, mc := other(nameMesh)
			p95 := "–"
			if m, ok := r.find(nameMesh, qn, n, lat); ok {
				p95 = ratio(float64(g.P95), float64(m.P95))
			}
			p("| %d | %s | %s | %s | %s | %s | %s | %s |\n", n, dr, fr, mr, dc, fc, mc, p95)
		}
		p("\n")
	}
}

func renderMemory(b *strings.Builder, r *report) {
	p := printer(b)
	lat := r.Latencies[0]
	maxConc := slices.Max(r.Concurrency)
	p("## Memory\n\n")
	p("Peak resident set (VmHWM, reset before each run) during the runs at %d concurrent clients. For mesh it is\n", maxConc)
	p("the sum over Hive Gateway's processes; for direct, the bench process, which also holds the load\n")
	p("generator; for the floor, its own process.\n\n| query |")
	for _, c := range r.Contenders {
		p(" %s |", c)
	}
	p("\n|---|")
	for range r.Contenders {
		p("---|")
	}
	p("\n")
	for _, qn := range r.Queries {
		p("| %s |", qn)
		for _, c := range r.Contenders {
			if x, ok := r.find(c, qn, maxConc, lat); ok && x.PeakRSS > 0 {
				p(" %s |", mib(x.PeakRSS))
			} else {
				p(" – |")
			}
		}
		p("\n")
	}
	p("\n### Allocations per request, in process\n\n")
	if len(r.Allocs) == 0 {
		p("Not run (`-allocs=false`).\n\n")
		return
	}
	p("`go test -run '^$' -bench BenchmarkQuery -benchmem ./bench`, one request at a time in one process: `gateway` is\n")
	p("the real handler (`graph.NewHandler`: middleware, loaders, resolvers) and `direct` the hand-written client,\n")
	p("both over loopback HTTP to the simulator behind `httptest`. The simulator runs in the same process, so its\n")
	p("allocations are in both figures; the difference is what the gateway itself costs per request.\n\n")
	p("| query | gateway B/op | gateway allocs/op | direct B/op | direct allocs/op | gateway − direct allocs/op | gateway ns/op | direct ns/op |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	byName := map[string]allocResult{}
	var names []string
	for _, a := range r.Allocs {
		byName[a.Name] = a
		if q, ok := strings.CutSuffix(a.Name, "/"+nameGateway); ok {
			names = append(names, strings.TrimPrefix(q, "Query"))
		}
	}
	for _, n := range names {
		g, d := byName["Query"+n+"/"+nameGateway], byName["Query"+n+"/"+nameDirect]
		p("| %s | %d | %d | %d | %d | %d | %.0f | %.0f |\n", n, g.BytesPerOp, g.AllocsPerOp, d.BytesPerOp, d.AllocsPerOp,
			g.AllocsPerOp-d.AllocsPerOp, g.NsPerOp, d.NsPerOp)
	}
	p("\n")
}

// renderBaseline compares the gateway with the baseline gateway (-baseline)
// of the same run.
func renderBaseline(b *strings.Builder, r *report) {
	if !r.has(nameBaseline) {
		return
	}
	p := printer(b)
	p("## Before and after\n\n")
	p("`baseline` is the gateway built from `%s` (`-baseline`), run in the same run on the same simulator as\n", r.Baseline)
	p("`gateway`, the current code. Before → after:\n\n")
	p("| query | latency | clients | req/s | req/CPU-s | p50 | p95 | peak RSS |\n|---|---|---|---|---|---|---|---|\n")
	maxConc := slices.Max(r.Concurrency)
	for _, lat := range r.Latencies {
		for _, qn := range r.Queries {
			for _, n := range r.Concurrency {
				was, ok1 := r.find(nameBaseline, qn, n, lat)
				now, ok2 := r.find(nameGateway, qn, n, lat)
				if !ok1 || !ok2 {
					continue
				}
				rss := "–"
				if n == maxConc && was.PeakRSS > 0 && now.PeakRSS > 0 {
					rss = mib(was.PeakRSS) + " → " + mib(now.PeakRSS)
				}
				p("| %s | %v | %d | %.0f → %.0f | %.0f → %.0f | %s → %s | %s → %s | %s |\n", qn, lat, n, was.RPS(), now.RPS(),
					was.PerCPU(), now.PerCPU(), ms(was.P50), ms(now.P50), ms(was.P95), ms(now.P95), rss)
			}
		}
	}
	p("\n")
}
