package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// Contender names.
const (
	nameGateway = "gateway"
	nameDirect  = "direct"
	nameMesh    = "mesh"
	// nameFloor is the extra-hop floor: the direct client's work served by
	// a minimal HTTP handler in a process of its own (floor.go).
	nameFloor = "floor"
	// nameBaseline is the gateway built from another checkout (-baseline).
	nameBaseline = "baseline"
)

// contender is one way of serving the queries.
type contender interface {
	name() string
	// supports reports whether the contender can serve q.
	supports(q *query) bool
	// do serves q once; the answer's bytes go to buf.
	do(ctx context.Context, q *query, buf *bytes.Buffer) error
	// pids are the processes whose CPU and memory count as the contender's.
	pids() []int
	// close releases idle connections.
	close()
}

// graphQL is a contender in a process of its own, reached over HTTP: the
// gateway or Mesh, which take a GraphQL request, or the floor, which takes
// the query's name in its path.
type graphQL struct {
	label  string
	url    string
	pid    int
	mesh   bool
	bodies map[string][]byte // request body per query
	urls   map[string]string // URL per query, when not url
	client *loadClient
}

func newGraphQL(label, url string, pid int, mesh bool, fx fixture) (*graphQL, error) {
	g := &graphQL{label: label, url: url, pid: pid, mesh: mesh, bodies: map[string][]byte{}}
	for i := range queries {
		q := &queries[i]
		text, vars := q.Gateway, q.Vars(fx)
		if mesh {
			if q.Mesh == "" {
				continue
			}
			text = q.Mesh
			if q.MeshVars != nil {
				vars = q.MeshVars(fx)
			}
		}
		b, err := json.Marshal(map[string]any{"query": text, "operationName": q.Name, "variables": vars})
		if err != nil {
			return nil, err
		}
		g.bodies[q.Name] = b
	}
	if err := g.newClient(); err != nil {
		return nil, err
	}
	return g, nil
}

// newClient makes the contender's load client, for the URLs of its queries.
func (g *graphQL) newClient() error {
	urls := map[string]string{}
	for name := range g.bodies {
		urls[name] = g.url
		if u, ok := g.urls[name]; ok {
			urls[name] = u
		}
	}
	c, err := newLoadClient(urls, g.bodies, sim.DemoKey)
	if err != nil {
		return err
	}
	g.client = c
	return nil
}

func (g *graphQL) name() string           { return g.label }
func (g *graphQL) supports(q *query) bool { return g.bodies[q.Name] != nil }
func (g *graphQL) pids() []int            { return tree(g.pid) }
func (g *graphQL) close()                 { g.client.closeIdle() }

// errMarkers are the signs of a failed answer: a GraphQL error list, or
// Mesh's union member for an upstream error.
var errMarkers = [][]byte{[]byte(`"errors":`), []byte(`"error":{`)}

func (g *graphQL) do(ctx context.Context, q *query, buf *bytes.Buffer) error {
	status, err := g.client.do(ctx, q.Name, buf)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", status, buf.Bytes())
	}
	for _, m := range errMarkers {
		if i := bytes.Index(buf.Bytes(), m); i >= 0 {
			return fmt.Errorf("error in answer: %.200s", buf.Bytes()[i:])
		}
	}
	return nil
}

// direct is the hand-written client, in the bench's own process.
type direct struct {
	c  *upstream.Client
	fx fixture
}

func newDirect(baseURL string, fx fixture) (*direct, error) {
	c, err := upstream.NewClient(baseURL)
	if err != nil {
		return nil, err
	}
	return &direct{c: c, fx: fx}, nil
}

func (d *direct) name() string           { return nameDirect }
func (d *direct) supports(q *query) bool { return q.Direct != nil }
func (d *direct) pids() []int            { return []int{os.Getpid()} }
func (d *direct) close()                 {}

func (d *direct) do(ctx context.Context, q *query, buf *bytes.Buffer) error {
	v, err := q.Direct(upstream.WithAPIKey(ctx, sim.DemoKey), d.c, d.fx)
	if err != nil {
		return err
	}
	buf.Reset()
	return json.NewEncoder(buf).Encode(map[string]any{"data": v})
}

// result is one load run: a contender serving a query at a concurrency.
type result struct {
	Contender   string        `json:"contender"`
	Query       string        `json:"query"`
	Concurrency int           `json:"concurrency"`
	Latency     time.Duration `json:"upstream_latency"` // injected per upstream call
	Requests    int           `json:"requests"`
	Errors      int           `json:"errors"`
	FirstError  string        `json:"first_error,omitempty"`
	Elapsed     time.Duration `json:"elapsed"`
	CPU         time.Duration `json:"cpu"`     // the contender's processes
	SimCPU      time.Duration `json:"sim_cpu"` // the simulator's
	P50         time.Duration `json:"p50"`
	P95         time.Duration `json:"p95"`
	P99         time.Duration `json:"p99"`
	PeakRSS     int64         `json:"peak_rss,omitempty"` // bytes, when measured
	// ClientCPU is the load generator's (the bench process's) for a
	// contender in a process of its own; none for the direct client, which
	// is the bench process.
	ClientCPU time.Duration `json:"client_cpu,omitempty"`

	// Derived from the above by derive, for readers of the JSON: the
	// contender's requests per CPU-second and CPU-µs per request, and the
	// simulator's and the load generator's CPU-µs per request of this
	// contender.
	RequestsPerCPUSecond  float64 `json:"requests_per_cpu_second"`
	CPUPerRequestUS       float64 `json:"cpu_us_per_request"`
	SimCPUPerRequestUS    float64 `json:"sim_cpu_us_per_request"`
	ClientCPUPerRequestUS float64 `json:"client_cpu_us_per_request,omitempty"`
}

// derive sets the derived fields.
func (r *result) derive() {
	r.RequestsPerCPUSecond = r.PerCPU()
	r.CPUPerRequestUS = us(r.CPUPerRequest())
	r.SimCPUPerRequestUS = us(r.SimCPUPerRequest())
	r.ClientCPUPerRequestUS = us(r.ClientCPUPerRequest())
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// RPS is the completed requests per second.
func (r result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// PerCPU is the completed requests per CPU-second of the contender.
func (r result) PerCPU() float64 {
	if r.CPU <= 0 {
		return 0
	}
	return float64(r.Requests) / r.CPU.Seconds()
}

// CPUPerRequest is the contender's CPU time per completed request.
func (r result) CPUPerRequest() time.Duration { return perRequest(r.CPU, r.Requests) }

// SimCPUPerRequest is the simulator's CPU time per completed request of the
// contender: what the upstream calls of one request cost the simulator.
func (r result) SimCPUPerRequest() time.Duration { return perRequest(r.SimCPU, r.Requests) }

// ClientCPUPerRequest is the load generator's CPU time per completed
// request of a contender in a process of its own (0 for the direct client).
func (r result) ClientCPUPerRequest() time.Duration { return perRequest(r.ClientCPU, r.Requests) }

func perRequest(d time.Duration, requests int) time.Duration {
	if requests == 0 {
		return 0
	}
	return d / time.Duration(requests)
}

// loadSpec is one load run to make.
type loadSpec struct {
	q *query
	// pages, when set in place of q, are the queries each client loads in
	// turn, client i starting at the i-th (modulo their number), so that
	// every page is loaded as often from the start.
	pages       []*query
	concurrency int
	warmup      time.Duration
	duration    time.Duration
	latency     time.Duration
	measureRSS  bool
	simPid      int
	// atStart and atEnd, when set, are called as the measured window opens
	// and closes (make profile starts and stops the profiles with them).
	atStart, atEnd func()
	// answered, when set, is called once the run is over with the query
	// and the latency of each answer counted in the window.
	answered func(q *query, latency time.Duration)
}

// name is what the run loads: its query, or its pages joined by "+".
func (s loadSpec) name() string {
	if len(s.pages) == 0 {
		return s.q.Name
	}
	names := make([]string, len(s.pages))
	for i, q := range s.pages {
		names[i] = q.Name
	}
	return strings.Join(names, "+")
}

// maxWarmup bounds how long a run waits for every client's first answer.
const maxWarmup = time.Minute

// runLoad has concurrency clients send q back to back. The warm-up lasts
// at least s.warmup and until every client has had its first answer (a
// cold contender, or 200 clients' first requests sharing two cores, can
// take longer than the warm-up). Then the measured window lasts s.duration:
// the requests that complete in it are counted, with their whole latency,
// the CPU times are read at both ends of it, and requests still in flight
// at its end are not counted (the clients stop once they are answered).
func runLoad(ctx context.Context, c contender, s loadSpec) (result, []time.Duration) {
	res := result{Contender: c.name(), Query: s.name(), Concurrency: s.concurrency, Latency: s.latency}
	pids := c.pids()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	type done struct {
		q   *query
		end time.Time
		lat time.Duration
		err error
	}
	var (
		mu    sync.Mutex
		dones []done
		first sync.WaitGroup // every client's first answer
	)
	// The window, set by the sampler before it lets clients count.
	var from, to time.Time
	var cpu0, sim0, cpu1, sim1, client0, client1 time.Duration
	// The load generator's CPU, when it is not the contender's own.
	client := []int{os.Getpid()}
	if slices.Contains(pids, os.Getpid()) {
		client = nil
	}
	var rssErr error
	sampled := make(chan struct{})
	first.Add(s.concurrency)
	go func() {
		defer close(sampled)
		defer cancel()
		warm := make(chan struct{})
		go func() { first.Wait(); close(warm) }()
		timer := time.NewTimer(s.warmup)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		select {
		case <-warm:
		case <-time.After(maxWarmup):
		case <-ctx.Done():
			return
		}
		if s.measureRSS {
			rssErr = resetPeakRSS(pids)
		}
		mu.Lock()
		from = time.Now()
		to = from.Add(s.duration)
		mu.Unlock()
		if s.atStart != nil {
			s.atStart()
		}
		cpu0, sim0, client0 = cpuOf(pids), cpuOf([]int{s.simPid}), cpuOf(client)
		select {
		case <-time.After(s.duration):
		case <-ctx.Done():
			return
		}
		cpu1, sim1, client1 = cpuOf(pids), cpuOf([]int{s.simPid}), cpuOf(client)
		if s.atEnd != nil {
			s.atEnd()
		}
		if s.measureRSS && rssErr == nil {
			res.PeakRSS = peakRSS(pids)
		}
	}()

	var wg sync.WaitGroup
	for i := range s.concurrency {
		wg.Go(func() {
			var buf bytes.Buffer
			var mine []done
			firstDone := false
			// Clients start spread over the warm-up, so that 200 requests
			// sharing two cores do not finish, and start again, in waves.
			select {
			case <-time.After(s.warmup * time.Duration(i) / time.Duration(s.concurrency)):
			case <-runCtx.Done():
			}
			for k := i; runCtx.Err() == nil; k++ {
				q := s.q
				if len(s.pages) > 0 {
					q = s.pages[k%len(s.pages)]
				}
				t0 := time.Now()
				err := c.do(runCtx, q, &buf)
				t1 := time.Now()
				if !firstDone {
					firstDone = true
					first.Done()
				}
				mine = append(mine, done{q, t1, t1.Sub(t0), err})
			}
			if !firstDone {
				first.Done()
			}
			mu.Lock()
			dones = append(dones, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	<-sampled

	var latencies []time.Duration
	for _, d := range dones {
		if from.IsZero() || d.end.Before(from) || !d.end.Before(to) {
			continue // in the warm-up, or cut off at the end of the window
		}
		if d.err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = d.err.Error()
			}
			continue
		}
		latencies = append(latencies, d.lat)
		if s.answered != nil {
			s.answered(d.q, d.lat)
		}
	}
	res.Elapsed = s.duration
	res.CPU, res.SimCPU, res.ClientCPU = cpu1-cpu0, sim1-sim0, client1-client0
	res.Requests = len(latencies)
	slices.Sort(latencies)
	res.P50, res.P95, res.P99 = percentile(latencies, 0.50), percentile(latencies, 0.95), percentile(latencies, 0.99)
	res.derive()
	c.close()
	return res, latencies
}

// inTurns measures spec on each of the contenders in rounds, the contenders
// taking turns in the order that order gives each round, so that a passing
// disturbance of the shared machine, or going first, weighs on no contender
// alone. spec.duration is the measured length of each contender over all
// its rounds; between, when not nil, is called after each run. It returns
// each contender's rounds merged, in the order of contenders, and each one's
// rounds by name; nothing when ctx ends first.
func inTurns(ctx context.Context, contenders []contender, rounds int, order turnOrder, spec loadSpec, between func()) ([]result, map[string][]result) {
	perRound := map[string][]result{}
	samples := map[string][][]time.Duration{}
	spec.duration /= time.Duration(rounds)
	for round := range rounds {
		for _, i := range order(round, len(contenders)) {
			c := contenders[i]
			if ctx.Err() != nil {
				return nil, nil
			}
			r, lat := runLoad(ctx, c, spec)
			if between != nil {
				between()
			}
			perRound[c.name()] = append(perRound[c.name()], r)
			samples[c.name()] = append(samples[c.name()], lat)
		}
	}
	var merged []result
	for _, c := range contenders {
		if len(perRound[c.name()]) > 0 {
			merged = append(merged, merge(perRound[c.name()], samples[c.name()]))
		}
	}
	return merged, perRound
}

// turnOrder is the order in which n contenders run a round: a permutation
// of 0 … n-1.
type turnOrder func(round, n int) []int

// reverseEveryOther is the contenders in their order, reversed every other
// round: for two contenders, each goes first as often, and each pair of
// rounds cancels a steady drift of the machine.
func reverseEveryOther(round, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if round%2 == 1 {
			out[i] = n - 1 - i
		}
	}
	return out
}

// balancedOrder is a Williams design: over every n rounds (2n when n is
// odd) each contender runs once in each position, and once right after each
// other contender. With more than two contenders, reversing every other
// round leaves the middle ones never first or last, and always after the
// same neighbours; this does not.
func balancedOrder(round, n int) []int {
	// The first row: 0, 1, n-1, 2, n-2, …; row r adds r to each, modulo n;
	// for odd n the next n rows are the first n reversed.
	first := make([]int, n)
	for j, lo, hi := 0, 0, n-1; j < n; j++ {
		if j%2 == 0 {
			first[j], lo = lo, lo+1
		} else {
			first[j], hi = hi, hi-1
		}
	}
	out := make([]int, n)
	r := round % n
	for j := range out {
		out[j] = (first[j] + r) % n
	}
	if n%2 == 1 && round%(2*n) >= n {
		slices.Reverse(out)
	}
	return out
}

// merge adds up the rounds of one configuration: requests, errors, window
// and CPU times add up, the latencies are pooled, the peak is the highest.
func merge(rounds []result, samples [][]time.Duration) result {
	out := rounds[0]
	out.Requests, out.Errors, out.Elapsed, out.CPU, out.SimCPU, out.ClientCPU = 0, 0, 0, 0, 0, 0
	var all []time.Duration
	for i, r := range rounds {
		out.Requests += r.Requests
		out.Errors += r.Errors
		out.Elapsed += r.Elapsed
		out.CPU += r.CPU
		out.SimCPU += r.SimCPU
		out.ClientCPU += r.ClientCPU
		out.PeakRSS = max(out.PeakRSS, r.PeakRSS)
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		all = append(all, samples[i]...)
	}
	slices.Sort(all)
	out.P50, out.P95, out.P99 = percentile(all, 0.50), percentile(all, 0.95), percentile(all, 0.99)
	out.derive()
	return out
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// answerOnce serves q once and decodes the answer.
func answerOnce(ctx context.Context, c contender, q *query) (gqlAnswer, error) {
	var buf bytes.Buffer
	if err := c.do(ctx, q, &buf); err != nil {
		return gqlAnswer{}, err
	}
	var a gqlAnswer
	if err := json.NewDecoder(&buf).Decode(&a); err != nil && !errors.Is(err, io.EOF) {
		return a, fmt.Errorf("answer is not JSON: %w", err)
	}
	if len(a.Errors) > 0 {
		return a, fmt.Errorf("errors: %s", a.Errors[0])
	}
	return a, nil
}
