package main

// The harness's configuration: its flags, and what smoke mode sets.

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is what the flags select.
type config struct {
	out         string
	jsonOut     string
	render      string
	smoke       bool
	warmup      time.Duration
	duration    time.Duration
	pathDur     time.Duration // of each critical-path run at a latency after the first
	pathRounds  int
	concurrency []int
	latencies   []time.Duration
	queries     []string
	mesh        bool
	meshFork    int
	allocs      bool
	benchtime   string
	baseline    string
	rounds      int
	floor       bool
	args        []string

	// profile, when set, names the query to profile the gateway on
	// (profile.go) instead of benchmarking.
	profile         string
	profileDir      string
	profileClients  int
	profileDuration time.Duration
	// profileTelemetry names the telemetry configuration of the profiled
	// gateway (overheadConfigs), off by default.
	profileTelemetry string

	// The hostile-traffic benchmark (hostile.go).
	hostileOnly           bool
	withHostile           bool
	attackers             int
	legitClients          int
	hostileWindow         time.Duration
	hostileShapeWindow    time.Duration
	hostileAloneWindow    time.Duration
	hostileTimeout        time.Duration
	hostileRequestTimeout time.Duration
	hostileRSSCapMiB      int
	randomDocs            int
	hostileShapes         []string
	// fairWindow is each window of the fair-share benchmark (fairshare.go),
	// which the hostile-traffic benchmark ends with; 0 leaves it out.
	fairWindow time.Duration
	// tenantWorker, when set, makes this program a tenant's load process
	// of the fair-share benchmark, with the spec in this file; the harness
	// starts it so.
	tenantWorker string

	// The telemetry-overhead benchmark (overhead.go).
	overheadOnly     bool
	withOverhead     bool
	overheadClients  int
	overheadDuration time.Duration
	overheadRounds   int
	overheadScrape   time.Duration
	overheadQueries  []string

	// The many-users benchmark (manyusers.go).
	manyUsersOnly     bool
	withManyUsers     bool
	manyUsersClients  int
	manyUsersDuration time.Duration
	manyUsersRounds   int
	manyUsersLatency  time.Duration

	// serveFloor, when set, makes this program the floor (floor.go) on
	// this address instead of the harness; the harness starts it so.
	serveFloor    string
	floorUpstream string
	floorBudget   string
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&c.out, "out", "docs/benchmarks.md", "report to write (smoke mode writes a temporary file instead)")
	fs.StringVar(&c.jsonOut, "json", "", "also write every result as JSON to this `file` (default: -out with .json; none in smoke mode)")
	fs.StringVar(&c.render, "render", "", "write the report from the JSON `file` of an earlier run, without running anything")
	fs.BoolVar(&c.smoke, "smoke", false, "run every configuration for about a second, write the report to a temporary file, fail on any error")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "least warm-up of each round, not counted")
	fs.DurationVar(&c.duration, "duration", 4*time.Second, "measured length of each configuration, over all its rounds")
	fs.IntVar(&c.rounds, "rounds", 2, "rounds of each configuration, the contenders in turn")
	fs.DurationVar(&c.pathDur, "path-duration", 16*time.Second, "measured length of each critical-path run at a latency after the first (one client), over all its rounds (smoke mode: as -duration unless given)")
	fs.IntVar(&c.pathRounds, "path-rounds", 4, "rounds of each critical-path run at a latency after the first (smoke mode: as -rounds unless given)")
	conc := fs.String("concurrency", "1,50,200", "concurrent clients of the throughput runs (smoke mode: "+smokeConcurrency+" unless given)")
	lats := fs.String("latencies", "0s,20ms", "upstream latencies; the first gets the throughput runs, each gets the critical-path runs")
	qs := fs.String("queries", "", "comma-separated query names to run (default all)")
	fs.BoolVar(&c.mesh, "mesh", true, "run GraphQL Mesh (needs `npm ci` in bench/mesh)")
	fs.IntVar(&c.meshFork, "mesh-fork", runtime.NumCPU(), "Hive Gateway worker processes")
	fs.StringVar(&c.baseline, "baseline", "", "also run the gateway built from this `directory` (another checkout, such as `git archive` of an older commit) as the contender \"baseline\"")
	fs.StringVar(&c.profile, "profile", "", "instead of benchmarking, write CPU and allocation profiles of the gateway serving this `query` (make profile QUERY=…)")
	fs.StringVar(&c.profileDir, "profile-dir", filepath.Join("bench", "profiles"), "with -profile: the profiles go to a `directory` named after the query in it")
	fs.IntVar(&c.profileClients, "profile-clients", 50, "with -profile: concurrent clients")
	fs.DurationVar(&c.profileDuration, "profile-duration", 10*time.Second, "with -profile: how long the profiles cover")
	fs.StringVar(&c.profileTelemetry, "profile-telemetry", ovOff, "with -profile: the gateway's telemetry, as in the telemetry-overhead benchmark: "+
		"off, metrics, trace-1% or trace-100%")
	fs.BoolVar(&c.hostileOnly, "hostile", false, "run only the hostile-traffic benchmark; its section replaces the one of the report "+
		"of -out, whose other sections are rendered again from -json when it exists")
	fs.BoolVar(&c.withHostile, "with-hostile", true, "end a full run with the hostile-traffic benchmark")
	fs.IntVar(&c.attackers, "attackers", 50, "hostile: concurrent attackers")
	fs.IntVar(&c.legitClients, "legit-clients", 4, "hostile: concurrent legitimate clients (another organization's key)")
	fs.DurationVar(&c.hostileWindow, "hostile-window", 4*time.Second, "hostile: length of the first and last quiet runs and of the attack with every shape at once")
	fs.DurationVar(&c.hostileShapeWindow, "hostile-shape-window", 3*time.Second, "hostile: length of the attack with each shape alone and of the quiet run after it, "+
		"longer than -hostile-timeout so that timeouts show (0: none)")
	fs.DurationVar(&c.hostileAloneWindow, "hostile-alone-window", 2*time.Second, "hostile: length of the attack alone at the start of each attack phase, "+
		"before the legitimate clients start, which CPU per hostile answer is read from (0: none; then it is read net of the legitimate traffic)")
	fs.DurationVar(&c.hostileTimeout, "hostile-timeout", 2*time.Second, "hostile: client timeout of each hostile request")
	fs.DurationVar(&c.hostileRequestTimeout, "hostile-request-timeout", time.Second, "hostile: the gateway's -request-timeout")
	fs.IntVar(&c.hostileRSSCapMiB, "hostile-rss-cap", 2048, "hostile: MiB of RSS at which the harness kills the gateway (0: no cap)")
	fs.IntVar(&c.randomDocs, "random-docs", 512, "hostile: random documents generated (from a fixed seed) and sent in turn")
	fs.DurationVar(&c.fairWindow, "fair-window", 8*time.Second, "hostile: each window of the fair-share benchmark, two tenants on pinned cores (0: none)")
	fs.StringVar(&c.tenantWorker, "tenant-worker", "", "run as a tenant's load process of the fair-share benchmark, with the spec in this `file` (the harness starts it so)")
	hshapes := fs.String("hostile-shapes", "", "hostile: comma-separated shapes to send (default all)")
	fs.BoolVar(&c.overheadOnly, "overhead", false, "run only the telemetry-overhead benchmark; its section replaces the one of the report "+
		"of -out, whose other sections are rendered again from -json when it exists")
	fs.BoolVar(&c.withOverhead, "with-overhead", true, "run the telemetry-overhead benchmark in a full run")
	fs.IntVar(&c.overheadClients, "overhead-clients", goalClients, "overhead: concurrent clients (smoke mode: 8 unless given)")
	fs.DurationVar(&c.overheadDuration, "overhead-duration", 32*time.Second, "overhead: measured length of each configuration and query, over all its rounds")
	fs.IntVar(&c.overheadRounds, "overhead-rounds", 8, "overhead: rounds of each query, the configurations in a balanced turn, "+
		"best a multiple of 4; short rounds pair each configuration with off under the same load of the shared machine")
	fs.DurationVar(&c.overheadScrape, "overhead-scrape", 5*time.Second, "overhead: interval of the scrapes of /metrics")
	oqs := fs.String("overhead-queries", "BudgetList,Dashboard", "overhead: comma-separated queries to run")
	fs.BoolVar(&c.manyUsersOnly, "many-users", false, "run only the many-users benchmark; its section replaces the one of the report "+
		"of -out, whose other sections are rendered again from -json when it exists")
	fs.BoolVar(&c.withManyUsers, "with-many-users", true, "run the many-users benchmark in a full run")
	fs.IntVar(&c.manyUsersClients, "many-users-clients", 100, "many users: concurrent clients, all with one API key (smoke mode: 4 unless given)")
	fs.DurationVar(&c.manyUsersDuration, "many-users-duration", time.Minute, "many users: measured length of each gateway, the cache off and on, "+
		"over all its rounds (smoke mode: 1s unless given)")
	fs.IntVar(&c.manyUsersRounds, "many-users-rounds", 2, "many users: rounds of each gateway, the two in turn (smoke mode: 1 unless given)")
	fs.DurationVar(&c.manyUsersLatency, "many-users-latency", 20*time.Millisecond, "many users: latency the simulator adds to each upstream call")
	fs.BoolVar(&c.floor, "floor", true, "run the extra-hop floor: the direct client's work behind a minimal HTTP handler in a process of its own")
	fs.StringVar(&c.serveFloor, "serve-floor", "", "serve the extra-hop floor on this `address` instead of benchmarking (the harness starts it so)")
	fs.StringVar(&c.floorUpstream, "floor-upstream", "", "with -serve-floor: the simulator's base `URL`")
	fs.StringVar(&c.floorBudget, "floor-budget", "", "with -serve-floor: the REST `id` of the budget of BudgetDetail")
	fs.BoolVar(&c.allocs, "allocs", true, "run the in-process allocation benchmarks (go test -bench)")
	fs.StringVar(&c.benchtime, "benchtime", "2s", "-benchtime of the allocation benchmarks")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.args = args
	if c.serveFloor != "" {
		if c.floorUpstream == "" {
			return c, errors.New("-serve-floor needs -floor-upstream")
		}
		return c, nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.smoke && !set["concurrency"] {
		*conc = smokeConcurrency
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1000 {
			return c, fmt.Errorf("-concurrency: %q is not a number of clients from 1 to 1000", s)
		}
		c.concurrency = append(c.concurrency, n)
	}
	for _, s := range strings.Split(*lats, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			return c, fmt.Errorf("-latencies: %q is not a duration", s)
		}
		c.latencies = append(c.latencies, d)
	}
	var err error
	if c.queries, err = names(*qs, "-queries", "query", func(s string) bool { return queryByName(s) != nil }); err != nil {
		return c, err
	}
	for _, s := range strings.Split(*oqs, ",") {
		s = strings.TrimSpace(s)
		if queryByName(s) == nil {
			return c, fmt.Errorf("-overhead-queries: unknown query %q", s)
		}
		c.overheadQueries = append(c.overheadQueries, s)
	}
	if c.smoke {
		c.warmup, c.duration, c.benchtime, c.rounds = 200*time.Millisecond, 800*time.Millisecond, "1x", 1
		// The critical-path runs as short as the others, unless told.
		if !set["path-duration"] {
			c.pathDur = c.duration
		}
		if !set["path-rounds"] {
			c.pathRounds = c.rounds
		}
		// Every telemetry configuration on each query for a moment.
		c.overheadDuration, c.overheadRounds = 300*time.Millisecond, 1
		if !set["overhead-clients"] {
			c.overheadClients = 8
		}
		// About a second of hostile traffic: the quiet runs and every shape
		// at once, no shape alone, and a lower cap on the gateway's memory;
		// a second of each gateway of the many users, with a few of them.
		for name, apply := range map[string]func(){
			"hostile-window":       func() { c.hostileWindow = 300 * time.Millisecond },
			"hostile-shape-window": func() { c.hostileShapeWindow = 0 },
			"hostile-alone-window": func() { c.hostileAloneWindow = 200 * time.Millisecond },
			"random-docs":          func() { c.randomDocs = 64 },
			"hostile-rss-cap":      func() { c.hostileRSSCapMiB = 1024 },
			"fair-window":          func() { c.fairWindow = 300 * time.Millisecond },
			"many-users-clients":   func() { c.manyUsersClients = 4 },
			"many-users-duration":  func() { c.manyUsersDuration = time.Second },
			"many-users-rounds":    func() { c.manyUsersRounds = 1 },
		} {
			if !set[name] {
				apply()
			}
		}
	} else if c.jsonOut == "" {
		c.jsonOut = strings.TrimSuffix(c.out, filepath.Ext(c.out)) + ".json"
	}
	if c.hostileShapes, err = names(*hshapes, "-hostile-shapes", "shape", func(s string) bool { return shapeByName(s) != nil }); err != nil {
		return c, err
	}
	if c.attackers < 1 || c.attackers > 1000 || c.legitClients < 1 || c.legitClients > 1000 || c.hostileWindow <= 0 ||
		c.hostileShapeWindow < 0 || c.hostileAloneWindow < 0 || c.hostileTimeout <= 0 || c.hostileRequestTimeout <= 0 || c.hostileRSSCapMiB < 0 ||
		c.randomDocs < 1 {
		return c, errors.New("-attackers and -legit-clients from 1 to 1000, -hostile-window, -hostile-timeout, " +
			"-hostile-request-timeout positive, -hostile-shape-window, -hostile-alone-window, -hostile-rss-cap not negative, -random-docs at least 1")
	}
	if c.hostileShapeWindow > 0 && c.hostileShapeWindow <= c.hostileTimeout {
		return c, fmt.Errorf("-hostile-shape-window (%v) must be longer than -hostile-timeout (%v), or 0", c.hostileShapeWindow, c.hostileTimeout)
	}
	if c.profile != "" {
		if queryByName(c.profile) == nil {
			return c, fmt.Errorf("-profile: unknown query %q", c.profile)
		}
		if overheadConfigByName(c.profileTelemetry) == nil {
			return c, fmt.Errorf("-profile-telemetry: unknown configuration %q", c.profileTelemetry)
		}
		if c.profileClients < 1 || c.profileClients > 1000 || c.profileDuration <= 0 || c.profileDuration > 10*time.Minute {
			return c, errors.New("-profile-clients must be from 1 to 1000, -profile-duration positive and at most 10m")
		}
	}
	if c.duration <= 0 || c.warmup < 0 || c.duration > 10*time.Minute || c.rounds < 1 || c.rounds > 10 {
		return c, errors.New("-duration must be positive and at most 10m, -warmup not negative, -rounds from 1 to 10")
	}
	if c.pathDur <= 0 || c.pathDur > 10*time.Minute || c.pathRounds < 1 || c.pathRounds > 10 {
		return c, errors.New("-path-duration must be positive and at most 10m, -path-rounds from 1 to 10")
	}
	if c.manyUsersClients < 1 || c.manyUsersClients > 1000 || c.manyUsersDuration <= 0 || c.manyUsersDuration > 30*time.Minute ||
		c.manyUsersRounds < 1 || c.manyUsersRounds > 100 || c.manyUsersLatency < 0 {
		return c, errors.New("-many-users-clients must be from 1 to 1000, -many-users-duration positive and at most 30m, " +
			"-many-users-rounds from 1 to 100, -many-users-latency not negative")
	}
	if c.overheadClients < 1 || c.overheadClients > 1000 || c.overheadDuration <= 0 || c.overheadDuration > 30*time.Minute ||
		c.overheadRounds < 1 || c.overheadRounds > 100 || c.overheadScrape <= 0 {
		return c, errors.New("-overhead-clients must be from 1 to 1000, -overhead-duration positive and at most 30m, " +
			"-overhead-rounds from 1 to 100, -overhead-scrape positive")
	}
	return c, nil
}

// smokeConcurrency is the clients of a smoke run: enough to run every
// configuration, few enough that the slowest contender (Mesh's overview,
// a few requests a second) answers every client's first request at once,
// where 200 clients took minutes of warm-up and met the client timeout.
const smokeConcurrency = "1,8"

// selected returns the queries to run.
func (c config) selected() []*query {
	var out []*query
	for i := range queries {
		if len(c.queries) == 0 || slices.Contains(c.queries, queries[i].Name) {
			out = append(out, &queries[i])
		}
	}
	return out
}

// names reads a comma-separated list of a flag, each a known name of what:
// nil for an empty list.
func names(list, flag, what string, known func(string) bool) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !known(n) {
			return nil, fmt.Errorf("%s: unknown %s %q", flag, what, n)
		}
		out = append(out, n)
	}
	return out, nil
}
