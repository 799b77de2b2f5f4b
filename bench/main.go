// Command bench measures the gateway side by side with a hand-written REST
// client, the same client's work behind one more HTTP hop (the extra-hop
// floor) and GraphQL Mesh, all on the same simulator process, measures what
// its cache saves many users of one key, then attacks it with hostile
// traffic, and writes docs/benchmarks.md and its JSON.
//
// It is a module of its own (bench/go.mod, the gateway's module replaced by
// this checkout), so that building and testing the product builds none of
// it. Run it with make (`make bench`, `make bench-smoke`, …) or from the
// repository root, where its paths are read from; run from bench/, it moves
// to the root itself:
//
//	(cd bench/mesh && npm ci)      # once: GraphQL Mesh and Hive Gateway
//	go -C bench run .              # the full run, about thirty minutes
//	go -C bench run . -smoke       # every configuration for about a second; CI
//	go -C bench run . -hostile     # the hostile-traffic benchmark alone (hostile.go)
//	go -C bench run . -overhead    # the telemetry-overhead benchmark alone (overhead.go)
//	go -C bench run . -many-users  # the many-users benchmark alone (manyusers.go)
//	go -C bench run . -profile Q   # CPU and allocation profiles of the gateway serving Q (profile.go)
//
// It builds the gateway and cmd/costsim, starts them on loopback ports, seeds
// the simulator to 50 budgets, starts the floor (floor.go) and composes and
// starts Mesh over upstream/openapi.yaml, checks that all give the same
// answers, counts the upstream calls of each query, then runs every query at
// each concurrency, one contender after the other, reading each one's CPU
// time and memory from /proc; then the gateway with its telemetry off and on
// (overhead.go), and with its cache off and on under many users of one key
// (manyusers.go). Every gateway runs with its cache off but that last one
// (startGateway). Each run is bounded in time and everything it started is
// stopped at the end.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/modfile"
)

// toRepositoryRoot makes the repository root the working directory: it is,
// or bench/ under it is, where `go -C bench run .` starts the harness.
func toRepositoryRoot() error {
	for _, dir := range []string{".", ".."} {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfile.ModulePath(b) == gatewayModule {
			return os.Chdir(dir)
		}
	}
	return errors.New("run it from the repository root or bench/: make bench, or go -C bench run .")
}

// gatewayModule is the module the harness measures.
const gatewayModule = "github.com/costgw/gateway"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	switch {
	case cfg.serveFloor != "":
		err = serveFloor(ctx, cfg.serveFloor, cfg.floorUpstream, fixture{BudgetID: cfg.floorBudget, Explorer: dashboardQuery()})
	case cfg.tenantWorker != "":
		err = runTenantWorker(ctx, cfg.tenantWorker, os.Stdout)
	default:
		err = run(ctx, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runInfo is what every report says of its run: when it ran, the command
// line, and whether it was a smoke run.
type runInfo struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Command  string    `json:"command"`
	Smoke    bool      `json:"smoke"`
}

// startRun is the runInfo of a run of cfg that starts now.
func startRun(cfg config) runInfo {
	return runInfo{Started: time.Now(), Command: commandLine(cfg.args), Smoke: cfg.smoke}
}

// span says when the run was: "Run <start> – <end> (<duration>)".
func (r runInfo) span() string {
	return fmt.Sprintf("Run %s – %s (%s)", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.UTC().Format("15:04 MST"),
		r.Finished.Sub(r.Started).Round(time.Second))
}

// openSection opens the section of a run of its own: its heading (title),
// what a smoke run did (smoke), if this was one, then the command. It
// returns the printer of the section's text.
func (r runInfo) openSection(b *strings.Builder, title, smoke string) func(format string, a ...any) {
	p := printer(b)
	p("## %s\n\n", title)
	if r.Smoke {
		p("**Smoke run**: %s; the figures check that the harness works.\n\n", smoke)
	}
	p("```sh\n%s\n```\n\n", r.Command)
	return p
}

// printer is fmt.Fprintf to b, as the report's text is written.
func printer(b *strings.Builder) func(format string, a ...any) {
	return func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
}

// report is everything a run measured.
type report struct {
	runInfo
	Machine  machine       `json:"machine"`
	Warmup   time.Duration `json:"warmup"`
	Rounds   int           `json:"rounds"`
	Duration time.Duration `json:"duration"`
	// PathRounds and PathDuration are those of the critical-path runs at the
	// latencies after the first (0: as Rounds and Duration, in runs from
	// before they were set apart).
	PathRounds   int                 `json:"path_rounds,omitempty"`
	PathDuration time.Duration       `json:"path_duration,omitempty"`
	Concurrency  []int               `json:"concurrency"`
	Latencies    []time.Duration     `json:"latencies"`
	MeshFork     int                 `json:"mesh_fork"`
	Contenders   []string            `json:"contenders"`
	Baseline     string              `json:"baseline,omitempty"`
	Queries      []string            `json:"queries"`
	Calls        []callCount         `json:"calls"`
	Records      map[string][]record `json:"records"`
	Results      []result            `json:"results"`
	Allocs       []allocResult       `json:"allocs"`
	// Goals are issue 13's goal lines as the report shows them.
	Goals []goalRow `json:"goals"`
	// Hostile is the hostile-traffic benchmark, when it ran.
	Hostile *hostileReport `json:"hostile,omitempty"`
	// Overhead is the telemetry-overhead benchmark, when it ran.
	Overhead *overheadReport `json:"overhead,omitempty"`
	// ManyUsers is the many-users benchmark, when it ran.
	ManyUsers *manyUsersReport `json:"many_users,omitempty"`
}

// callCount is the upstream calls one contender made for one query.
type callCount struct {
	Query     string         `json:"query"`
	Contender string         `json:"contender"`
	Calls     map[string]int `json:"calls"`
}

// record is how many records a contender's answer held.
type record struct {
	Contender string `json:"contender"`
	Count     int    `json:"count"`
}

func run(ctx context.Context, cfg config) error {
	if err := toRepositoryRoot(); err != nil {
		return err
	}
	if cfg.profile != "" {
		return runProfile(ctx, cfg)
	}
	if cfg.hostileOnly {
		return runSectionOnly(ctx, cfg, hostileSection)
	}
	if cfg.overheadOnly {
		return runSectionOnly(ctx, cfg, overheadSection)
	}
	if cfg.manyUsersOnly {
		return runSectionOnly(ctx, cfg, manyUsersSection)
	}
	if cfg.render != "" {
		b, err := os.ReadFile(cfg.render)
		if err != nil {
			return err
		}
		var rep report
		if err := json.Unmarshal(b, &rep); err != nil {
			return fmt.Errorf("%s: %w", cfg.render, err)
		}
		for i := range rep.Results {
			rep.Results[i].derive()
		}
		return os.WriteFile(cfg.out, []byte(renderReport(&rep)), 0o644)
	}
	dir, err := os.MkdirTemp("", "costgw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rep := &report{
		runInfo: startRun(cfg), Warmup: cfg.warmup, Rounds: cfg.rounds,
		Duration: cfg.duration, PathRounds: cfg.pathRounds, PathDuration: cfg.pathDur, Concurrency: cfg.concurrency, Latencies: cfg.latencies, MeshFork: cfg.meshFork,
		Records: map[string][]record{}, Baseline: cfg.baseline,
	}
	for _, q := range cfg.selected() {
		rep.Queries = append(rep.Queries, q.Name)
	}

	b := binaries{dir: dir, gateway: filepath.Join(dir, "costgw"), costsim: filepath.Join(dir, "costsim"),
		meshDir: filepath.Join("bench", "mesh")}
	builds := [][3]string{{b.gateway, ".", ""}, {b.costsim, "./cmd/costsim", ""}}
	if cfg.floor {
		if b.floor, err = os.Executable(); err != nil {
			return fmt.Errorf("the floor runs this program again: %w", err)
		}
	}
	if cfg.baseline != "" {
		b.baseline = filepath.Join(dir, "costgw-baseline")
		builds = append(builds, [3]string{b.baseline, ".", cfg.baseline})
	}
	if cfg.mesh {
		if _, err := os.Stat(filepath.Join(b.meshDir, "node_modules", ".bin", "hive-gateway")); err != nil {
			return errors.New("GraphQL Mesh is not installed: run `npm ci` in bench/mesh, or pass -mesh=false")
		}
		if b.meshDir, err = filepath.Abs(b.meshDir); err != nil {
			return err
		}
	}
	logf("building the gateway and cmd/costsim")
	for _, bin := range builds {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin[0], bin[1])
		cmd.Dir = bin[2]
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s in %q: %w", bin[1], bin[2], err)
		}
	}
	rep.Machine = describeMachine(b)

	var failures []string
	for i, lat := range cfg.latencies {
		logf("upstream latency %v: starting the simulator, the gateway%s", lat, map[bool]string{true: " and Mesh", false: ""}[cfg.mesh])
		e, err := startEnv(ctx, b, lat, cfg.mesh, cfg.meshFork)
		if err != nil {
			return err
		}
		if len(rep.Contenders) == 0 {
			for _, c := range e.contenders {
				rep.Contenders = append(rep.Contenders, c.name())
			}
		}
		failures = append(failures, runPhase(ctx, cfg, e, rep, i == 0)...)
		e.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	failures = append(failures, alsoRun(ctx, cfg, b, rep, cfg.withOverhead, "telemetry overhead", overheadSection)...)
	failures = append(failures, alsoRun(ctx, cfg, b, rep, cfg.withManyUsers, "many users", manyUsersSection)...)
	if cfg.allocs {
		logf("in-process allocation benchmarks (go test -bench BenchmarkQuery -benchmem ./bench)")
		allocs, err := runAllocBenchmarks(ctx, cfg)
		if err != nil {
			failures = append(failures, "allocation benchmarks: "+err.Error())
		}
		rep.Allocs = allocs
	}
	failures = append(failures, alsoRun(ctx, cfg, b, rep, cfg.withHostile, "hostile traffic", hostileSection)...)
	rep.Finished = time.Now()
	rep.Goals = goals13(rep)

	if err := writeReport(cfg, rep); err != nil {
		return err
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d problem(s):\n  %s", len(failures), strings.Join(failures, "\n  "))
	}
	return nil
}

// sectionRun runs one of the benchmarks with a section of their own in the
// report, after the throughput runs or alone: it logs what it starts, puts
// what it measured in rep, even when it fails part way, and returns the
// problems of that and the error of the run.
type sectionRun func(ctx context.Context, cfg config, b binaries, rep *report) ([]string, error)

func hostileSection(ctx context.Context, cfg config, b binaries, rep *report) ([]string, error) {
	logf("hostile traffic: %d attackers, %d legitimate clients", cfg.attackers, cfg.legitClients)
	h, err := runHostile(ctx, cfg, b)
	return keepSection(&rep.Hostile, h, err, hostileProblems)
}

func overheadSection(ctx context.Context, cfg config, b binaries, rep *report) ([]string, error) {
	logf("telemetry overhead: the gateway with its telemetry off and on, %d clients", cfg.overheadClients)
	o, err := runOverhead(ctx, cfg, b)
	return keepSection(&rep.Overhead, o, err, overheadProblems)
}

func manyUsersSection(ctx context.Context, cfg config, b binaries, rep *report) ([]string, error) {
	logf("many users: %d clients with one key, the gateway with its cache off and on", cfg.manyUsersClients)
	m, err := runManyUsers(ctx, cfg, b)
	return keepSection(&rep.ManyUsers, m, err, manyUsersProblems)
}

// keepSection puts a section's report x in its place in the report, and
// returns its problems (none without a report) and err.
func keepSection[T any](place **T, x *T, err error, problems func(*T) []string) ([]string, error) {
	*place = x
	if x == nil {
		return nil, err
	}
	return problems(x), err
}

// alsoRun runs a section after the throughput runs, if on and ctx is not
// done: its error is one more problem, named, before the report's own.
func alsoRun(ctx context.Context, cfg config, b binaries, rep *report, on bool, name string, run sectionRun) []string {
	if !on || ctx.Err() != nil {
		return nil
	}
	problems, err := run(ctx, cfg, b, rep)
	if err != nil {
		problems = append([]string{name + ": " + err.Error()}, problems...)
	}
	return problems
}

// runSectionOnly builds the gateway and cmd/costsim and runs one section of
// the report alone; run puts it in rep and returns what went wrong. The
// section replaces its own in the report of an earlier run, read from
// cfg.jsonOut, whose other sections are kept; without one, the report has
// that section only. A smoke run writes a temporary file and keeps the
// report as it is.
func runSectionOnly(ctx context.Context, cfg config, run sectionRun) error {
	dir, err := os.MkdirTemp("", "costgw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b := binaries{dir: dir, gateway: filepath.Join(dir, "costgw"), costsim: filepath.Join(dir, "costsim")}
	rep := &report{runInfo: startRun(cfg)}
	earlier := false
	if cfg.jsonOut != "" && !cfg.smoke {
		if old, err := os.ReadFile(cfg.jsonOut); err == nil {
			var r report
			if err := json.Unmarshal(old, &r); err != nil {
				return fmt.Errorf("%s: %w", cfg.jsonOut, err)
			}
			for i := range r.Results {
				r.Results[i].derive()
			}
			rep, earlier = &r, true
			logf("the other sections are kept from %s (%s)", cfg.jsonOut, rep.Command)
		}
	}
	logf("building the gateway and cmd/costsim")
	for _, bin := range [][2]string{{b.gateway, "."}, {b.costsim, "./cmd/costsim"}} {
		if err := goBuild(ctx, bin[0], bin[1], ""); err != nil {
			return err
		}
	}
	if !earlier {
		rep.Machine = describeMachine(b)
	}
	problems, err := run(ctx, cfg, b, rep)
	if err != nil {
		return err
	}
	if !earlier {
		rep.Finished = time.Now()
	}
	if err := writeReport(cfg, rep); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// writeReport writes the report, and its JSON unless in smoke mode, where
// the report goes to a temporary file.
func writeReport(cfg config, rep *report) error {
	out := cfg.out
	if cfg.smoke {
		f, err := os.CreateTemp("", "costgw-benchmarks-smoke-*.md")
		if err != nil {
			return err
		}
		f.Close()
		out = f.Name()
	}
	if err := os.WriteFile(out, []byte(renderReport(rep)), 0o644); err != nil {
		return err
	}
	logf("wrote %s", out)
	if cfg.jsonOut != "" && !cfg.smoke {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, b, 0o644); err != nil {
			return err
		}
		logf("wrote %s", cfg.jsonOut)
	}
	return nil
}

// runPhase checks, counts and loads every query on one environment. The
// first phase also counts calls and makes the throughput runs; later ones
// only the critical-path runs at concurrency 1.
func runPhase(ctx context.Context, cfg config, e *env, rep *report, first bool) (failures []string) {
	fail := func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		logf("FAIL %s", msg)
		failures = append(failures, msg)
	}
	qs := cfg.selected()
	// Every contender must give an answer with the same number of records,
	// and with no error, before anything is timed.
	usable := map[string]bool{}
	for _, q := range qs {
		counts := map[string]int{}
		for _, c := range e.contenders {
			if !c.supports(q) {
				continue
			}
			a, err := answerOnce(ctx, c, q)
			if err != nil {
				fail("%s on %s: %v", q.Name, c.name(), err)
				continue
			}
			recs := q.Records
			if c.name() == nameMesh {
				recs = q.MeshRecords
			}
			n, err := recs(a.Data)
			if err != nil || n == 0 {
				fail("%s on %s: no records in the answer (%v)", q.Name, c.name(), err)
				continue
			}
			counts[c.name()] = n
			usable[q.Name+"/"+c.name()] = true
		}
		var recs []record
		for _, c := range e.contenders {
			if n, ok := counts[c.name()]; ok {
				recs = append(recs, record{c.name(), n})
				if n != counts[nameGateway] {
					fail("%s: %s answered %d records, the gateway %d", q.Name, c.name(), n, counts[nameGateway])
				}
			}
		}
		if first {
			rep.Records[q.Name] = recs
		}
	}
	if first {
		for _, q := range qs {
			for _, c := range e.contenders {
				if !usable[q.Name+"/"+c.name()] {
					continue
				}
				calls, err := e.countCalls(ctx, c, q)
				if err != nil {
					fail("count the calls of %s on %s: %v", q.Name, c.name(), err)
					continue
				}
				rep.Calls = append(rep.Calls, callCount{q.Name, c.name(), calls})
				logf("%-16s %-8s %3d upstream calls (minimum %d)", q.Name, c.name(), total(calls), q.minCalls())
			}
		}
	}

	// At the latencies after the first only the critical path is measured:
	// one client, whose median latency is the figure. An overview at 20 ms a
	// call answers 17 times a second, so the throughput runs' 4 s would give
	// it some 70 answers, and their median moves by about a millisecond
	// from run to run: these runs are longer, in more rounds.
	concs, rounds, dur := cfg.concurrency, cfg.rounds, cfg.duration
	if !first {
		concs, rounds, dur = []int{1}, cfg.pathRounds, cfg.pathDur
	}
	maxConc := slices.Max(cfg.concurrency)
	for _, q := range qs {
		for _, n := range concs {
			var cs []contender
			for _, c := range e.contenders {
				if usable[q.Name+"/"+c.name()] {
					cs = append(cs, c)
				}
			}
			merged, _ := inTurns(ctx, cs, rounds, reverseEveryOther, loadSpec{q: q, concurrency: n, warmup: cfg.warmup,
				duration: dur, latency: e.latency, measureRSS: n == maxConc, simPid: e.sim.pid()}, e.truncateLog)
			if ctx.Err() != nil {
				return failures
			}
			for _, r := range merged {
				rep.Results = append(rep.Results, r)
				logf("%-16s %-8s latency %-5v c=%-3d %8.1f req/s %9.1f req/CPU-s  p50 %-9v p95 %-9v p99 %-9v errors %d  client %.0f CPU-µs/req",
					q.Name, r.Contender, e.latency, n, r.RPS(), r.PerCPU(), r.P50.Round(10*time.Microsecond),
					r.P95.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Errors, us(r.ClientCPUPerRequest()))
				if r.Errors > 0 {
					msg := fmt.Sprintf("%s on %s at c=%d, latency %v: %d errors, first: %s", q.Name, r.Contender, n, e.latency, r.Errors, r.FirstError)
					if cfg.smoke {
						fail("%s", msg)
					} else {
						logf("WARN %s", msg)
					}
				}
				if r.Requests == 0 {
					// At concurrency 1 nothing may keep a request from ending in
					// the window; at higher ones a short window may see none end.
					if n == 1 || !cfg.smoke {
						fail("%s on %s at c=%d: no request completed in the window", q.Name, r.Contender, n)
					}
				}
			}
		}
	}
	return failures
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// allocResult is one line of the allocation benchmarks.
type allocResult struct {
	Name        string  `json:"name"`
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

// runAllocBenchmarks runs the in-process benchmarks of the bench package.
func runAllocBenchmarks(ctx context.Context, cfg config) ([]allocResult, error) {
	pattern := "^BenchmarkQuery"
	if len(cfg.queries) > 0 {
		pattern += "(" + strings.Join(cfg.queries, "|") + ")$"
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", pattern, "-benchmem",
		"-benchtime", cfg.benchtime, ".")
	cmd.Dir = "bench"
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var out []allocResult
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		bytes, _ := strconv.ParseInt(m[3], 10, 64)
		allocs, _ := strconv.ParseInt(m[4], 10, 64)
		out = append(out, allocResult{m[1], ns, bytes, allocs})
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return out, err
	}
	if len(out) == 0 {
		return nil, errors.New("no benchmark results")
	}
	return out, nil
}

// commandLine is the command that reproduces this run.
func commandLine(args []string) string {
	if len(args) == 0 {
		return "go run ./bench"
	}
	return "go run ./bench " + strings.Join(args, " ")
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}
