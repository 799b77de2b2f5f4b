package main

// The fair-share benchmark of issue 34 (item 4): each tenant's share of a
// saturated gateway, measured on cores the load does not share. The gateway
// and the simulator are pinned to one core and the load to the other
// (taskset), each tenant's load a process of its own (this program again,
// -tenant-worker), the attacking tenant's at the lowest priority (nice 19)
// so that it cannot starve the legitimate tenant's sending. On two cores
// where everything shares both, the load generators take the CPU the
// gateway would give the legitimate tenant, and the figure says more of the
// machine than of the gateway.
//
// Tenant A (organization two) sends the hostile benchmark's legitimate
// query back to back; tenant B (organization one) floods the gateway with
// its own key: valid, expensive requests (the 50-budget Overview, 101
// upstream calls each), or shapes the gateway refuses. Each flood is
// measured against the quiet runs (A alone) before and after it.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Goals of issue 34's fair-share measurement: tenant A's throughput while B
// floods, as a share of its quiet throughput.
const (
	goalFairValid   = 0.45 // B's flood of valid, expensive requests: A's fair half
	goalFairRefused = 0.90 // B's flood of refused shapes
)

// The cores: the gateway and the simulator on one, the load on the other.
const (
	gatewayCore = "0"
	loadCore    = "1"
)

// fairRefusedShapes are the hostile shapes tenant B sends in the refused
// flood: JSON POSTs with its key that the gateway refuses (limits, framing).
var fairRefusedShapes = []string{"typename-15000", "tokens-15000", "deep-json", "http-malformed-json", "http-trailing-data"}

// fairValidQuery is what tenant B sends in the valid flood.
const fairValidQuery = "Overview"

// Phase kinds of the fair-share benchmark, beside phaseQuiet.
const (
	fairValid   = "valid"
	fairRefused = "refused"
)

// fairReport is what the fair-share benchmark measured.
type fairReport struct {
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	AClients int           `json:"a_clients"`
	BClients int           `json:"b_clients"`
	AQuery   string        `json:"a_query"`
	BQuery   string        `json:"b_query"`
	BRefused []string      `json:"b_refused"`
	Window   time.Duration `json:"window"`
	// Pinned says whether the processes were pinned to their cores: not on
	// a machine of one core.
	Pinned bool        `json:"pinned"`
	Phases []fairPhase `json:"phases"`
	Goals  []goalRow   `json:"goals"`
	// Profile is the file of the gateway's CPU profile over B's valid
	// flood (not in smoke runs).
	Profile string `json:"profile,omitempty"`
}

// fairPhase is one window: tenant A alone, or with B's flood.
type fairPhase struct {
	Name       string        `json:"name"`
	Kind       string        `json:"kind"`
	Window     time.Duration `json:"window"`
	GatewayCPU time.Duration `json:"gateway_cpu"`
	SimCPU     time.Duration `json:"sim_cpu"`
	A          tenantCount   `json:"a"`
	B          *tenantCount  `json:"b,omitempty"`
}

// tenantCount is what one tenant's load process saw in the window.
type tenantCount struct {
	OK         int    `json:"ok"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

func (ph *fairPhase) aRPS() float64 { return float64(ph.A.OK) / ph.Window.Seconds() }

// quietCost is the gateway's and the simulator's CPU per request of tenant
// A in the quiet phases.
func (r *fairReport) quietCost() time.Duration {
	var cpu time.Duration
	var n int
	for _, ph := range r.Phases {
		if ph.Kind == phaseQuiet {
			cpu += ph.GatewayCPU + ph.SimCPU
			n += ph.A.OK
		}
	}
	if n == 0 {
		return 0
	}
	return cpu / time.Duration(n)
}

// aShare is the part of the gateway's and the simulator's CPU in a phase
// that tenant A's requests took, at their quiet cost each.
func (r *fairReport) aShare(ph *fairPhase) float64 {
	total := ph.GatewayCPU + ph.SimCPU
	if total == 0 {
		return 0
	}
	return min(float64(time.Duration(ph.A.OK)*r.quietCost())/float64(total), 1)
}

// quietBeside is the mean of A's rate in the quiet phases nearest before and
// after phase i.
func (r *fairReport) quietBeside(i int) float64 {
	return meanBeside(i, len(r.Phases), func(j int) float64 {
		if q := &r.Phases[j]; q.Kind == phaseQuiet {
			return q.aRPS()
		}
		return 0
	})
}

// ofQuiet is A's rate in phase i ÷ the quiet runs beside it (0 without one).
func (r *fairReport) ofQuiet(i int) float64 {
	if q := r.quietBeside(i); q > 0 {
		return r.Phases[i].aRPS() / q
	}
	return 0
}

// tenantSpec is what a tenant's load process is told: it sends bodies in
// turn, from clients at once, until To, and counts the answers that end
// in [From, To).
type tenantSpec struct {
	URL     string    `json:"url"`
	Key     string    `json:"key"`
	Bodies  []string  `json:"bodies"`
	Clients int       `json:"clients"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
}

// runTenantWorker is this program as a tenant's load process
// (-tenant-worker): it reads its spec from the file, sends, and writes its
// tenantCount as JSON to out.
func runTenantWorker(ctx context.Context, specFile string, out io.Writer) error {
	b, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var s tenantSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", specFile, err)
	}
	if len(s.Bodies) == 0 || s.Clients < 1 {
		return fmt.Errorf("%s: no bodies, or no clients", specFile)
	}
	ctx, cancel := context.WithDeadline(ctx, s.To)
	defer cancel()
	var win window
	win.from.Store(s.From.UnixNano())
	win.to.Store(s.To.UnixNano())
	bodies := make([][]byte, len(s.Bodies))
	for i, body := range s.Bodies {
		bodies[i] = []byte(body)
	}
	hc := newHTTPClient(s.Clients)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total tenantCount
	warm := make(chan struct{}, s.Clients)
	for i := range s.Clients {
		wg.Go(func() {
			ok, errs, first := tenantLoop(ctx, hc, s.URL, s.Key, bodies, i, &win, warm)
			mu.Lock()
			defer mu.Unlock()
			total.OK += ok
			total.Errors += errs
			if total.FirstError == "" {
				total.FirstError = first
			}
		})
	}
	wg.Wait()
	return json.NewEncoder(out).Encode(total)
}

// fairRun is the state of one fair-share benchmark.
type fairRun struct {
	cfg    config
	b      binaries
	simURL string
	self   string // this program, for the load processes
	pin    bool
	a, bv  []string // tenant A's bodies, B's valid ones
	br     []string // B's refused ones
}

// runFairShare runs the fair-share benchmark on the simulator at simURL
// (pid simPID), with the shapes' bodies of t.
func runFairShare(ctx context.Context, cfg config, b binaries, simURL string, simPID int, t *hostileTarget) (*fairReport, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the tenants' load runs this program again: %w", err)
	}
	rep := &fairReport{Started: time.Now(), AClients: cfg.legitClients, BClients: cfg.attackers, AQuery: legitQuery,
		BQuery: fairValidQuery, BRefused: fairRefusedShapes, Window: cfg.fairWindow}
	f := &fairRun{cfg: cfg, b: b, simURL: simURL, self: self,
		a:  []string{string(mustBody(queryByName(legitQuery).Gateway, nil))},
		bv: []string{string(mustBody(queryByName(fairValidQuery).Gateway, nil))}}
	for _, name := range fairRefusedShapes {
		f.br = append(f.br, string(t.static[name]))
	}
	// Pinning needs two cores and taskset; without either the run says so.
	if _, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
		f.pin = true
		if err := pinProcess(simPID, gatewayCore); err != nil {
			return nil, err
		}
	}
	rep.Pinned = f.pin
	for _, p := range []struct{ name, kind string }{
		{"quiet, before", phaseQuiet}, {"B floods valid requests", fairValid}, {"quiet", phaseQuiet},
		{"B floods refused shapes", fairRefused}, {"quiet, after", phaseQuiet},
	} {
		profile := ""
		if p.kind == fairValid && !cfg.smoke {
			profile = filepath.Join(cfg.profileDir, "fair-share-valid.pprof")
		}
		ph, err := f.phase(ctx, p.name, p.kind, simPID, profile)
		if err != nil {
			return rep, fmt.Errorf("fair share, %s: %w", p.name, err)
		}
		if profile != "" {
			rep.Profile = profile
		}
		rep.Phases = append(rep.Phases, ph)
		logf("fair share %-24s A %.0f req/s (%d errors), B answered %s; gateway CPU %v, simulator CPU %v", ph.Name,
			ph.aRPS(), ph.A.Errors, bAnswered(ph.B), ph.GatewayCPU.Round(time.Millisecond), ph.SimCPU.Round(time.Millisecond))
	}
	rep.Finished = time.Now()
	rep.Goals = fairGoals(rep)
	return rep, nil
}

func bAnswered(b *tenantCount) string {
	if b == nil {
		return "–"
	}
	return strconv.Itoa(b.OK + b.Errors)
}

// phase runs one window on a gateway of its own, pinned to the gateway's
// core, with tenant A's load and, but in a quiet phase, tenant B's. When
// profile is set, the gateway's CPU profile over the window is written
// there.
func (f *fairRun) phase(ctx context.Context, name, kind string, simPID int, profile string) (fairPhase, error) {
	ph := fairPhase{Name: name, Kind: kind, Window: f.cfg.fairWindow}
	args := []string{"-request-timeout", f.cfg.hostileRequestTimeout.String(), "-caller-in-flight", strconv.Itoa(hostileCallerInFlight)}
	admin := ""
	if profile != "" {
		port, err := freePort()
		if err != nil {
			return ph, err
		}
		admin = "127.0.0.1:" + strconv.Itoa(port)
	}
	gw, url, err := startGatewayAdmin(ctx, "gateway", f.b.gateway, f.simURL, admin, nil, args...)
	if err != nil {
		return ph, err
	}
	defer gw.kill()
	if f.pin {
		if err := pinProcess(gw.pid(), gatewayCore); err != nil {
			return ph, err
		}
	}
	// Both tenants warm up for a second, then the window opens at once
	// for both.
	from := time.Now().Add(time.Second)
	to := from.Add(ph.Window)
	a, err := f.startTenant(ctx, "tenant-a", tenantSpec{URL: url, Key: legitKey, Bodies: f.a, Clients: f.cfg.legitClients, From: from, To: to}, false)
	if err != nil {
		return ph, err
	}
	var b *tenant
	if kind != phaseQuiet {
		bodies := f.bv
		if kind == fairRefused {
			bodies = f.br
		}
		b, err = f.startTenant(ctx, "tenant-b", tenantSpec{URL: url, Key: attackKey, Bodies: bodies, Clients: f.cfg.attackers, From: from, To: to}, true)
		if err != nil {
			a.p.kill()
			return ph, err
		}
	}
	time.Sleep(time.Until(from))
	g0, s0 := cpuOf([]int{gw.pid()}), cpuOf([]int{simPID})
	profiled := make(chan error, 1)
	if profile != "" {
		go func() { profiled <- saveProfile(ctx, admin, ph.Window, profile) }()
	} else {
		profiled <- nil
	}
	time.Sleep(time.Until(to))
	ph.GatewayCPU, ph.SimCPU = max(cpuOf([]int{gw.pid()})-g0, 0), max(cpuOf([]int{simPID})-s0, 0)
	if ph.A, err = a.wait(); err != nil {
		return ph, err
	}
	if b != nil {
		bc, err := b.wait()
		if err != nil {
			return ph, err
		}
		ph.B = &bc
	}
	if err := <-profiled; err != nil {
		return ph, err
	}
	return ph, ctx.Err()
}

// saveProfile writes the CPU profile of the gateway whose admin listener is
// at admin, over d from now, to file.
func saveProfile(ctx context.Context, admin string, d time.Duration, file string) error {
	secs := max(int(d/time.Second), 1)
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the CPU profile: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the CPU profile: %d %v", resp.StatusCode, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// tenant is a running tenant load process and where its answer goes.
type tenant struct {
	p   *proc
	out *strings.Builder
}

// startTenant starts a load process for spec, pinned to the load's core,
// at the lowest priority when low.
func (f *fairRun) startTenant(ctx context.Context, name string, spec tenantSpec, low bool) (*tenant, error) {
	b, _ := json.Marshal(spec)
	file := filepath.Join(f.b.dir, name+".json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return nil, err
	}
	cmd := []string{f.self, "-tenant-worker", file}
	if f.pin {
		cmd = append([]string{"taskset", "-c", loadCore}, cmd...)
	}
	if low {
		cmd = append([]string{"nice", "-n", "19"}, cmd...)
	}
	t := &tenant{out: &strings.Builder{}}
	p, err := startProc(name, "", nil, &lockedWriter{w: t.out}, cmd[0], cmd[1:]...)
	if err != nil {
		return nil, err
	}
	t.p = p
	return t, nil
}

// wait waits for the tenant's process to end, and reads what it counted.
func (t *tenant) wait() (tenantCount, error) {
	<-t.p.done
	var c tenantCount
	out := t.out.String()
	if t.p.err != nil {
		return c, fmt.Errorf("%s: %v: %.300s", t.p.name, t.p.err, out)
	}
	// The count is the last line; anything before it is a log line.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &c); err != nil {
		return c, fmt.Errorf("%s wrote no count: %.300s", t.p.name, out)
	}
	return c, nil
}

// lockedWriter serializes writes from a process's stdout and stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// pinProcess pins every thread of a running process to core (taskset -a);
// the threads it starts later inherit their creator's.
func pinProcess(pid int, core string) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", core, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset -a -p -c %s %d: %v: %s", core, pid, err, out)
	}
	return nil
}

// fairGoals are the two goal lines of issue 34's item 4.
func fairGoals(r *fairReport) []goalRow {
	var rows []goalRow
	for _, g := range []struct {
		kind, goal string
		want       float64
	}{
		{fairValid, fmt.Sprintf("tenant A keeps ≥ %.2f of its quiet throughput while B floods valid, expensive requests (pinned cores)", goalFairValid), goalFairValid},
		{fairRefused, fmt.Sprintf("tenant A keeps ≥ %.2f of its quiet throughput while B floods refused shapes (pinned cores)", goalFairRefused), goalFairRefused},
	} {
		i := slices.IndexFunc(r.Phases, func(ph fairPhase) bool { return ph.Kind == g.kind })
		switch {
		case i < 0:
			rows = append(rows, notMeasured(g.goal, "no such phase"))
		case !r.Pinned:
			rows = append(rows, notMeasured(g.goal, "the processes could not be pinned (one core, or no taskset)"))
		case r.quietBeside(i) == 0:
			rows = append(rows, notMeasured(g.goal, "no quiet run answered"))
		default:
			x := r.ofQuiet(i)
			rows = append(rows, goalRow{Goal: g.goal, Measured: fmt.Sprintf("%.2f (%.0f ÷ %.0f req/s)", x, r.Phases[i].aRPS(), r.quietBeside(i)),
				Met: x >= g.want})
		}
	}
	return rows
}

// fairProblems is what a fair-share run got wrong, beyond its goals: an
// error of tenant A's (its requests are all valid).
func fairProblems(r *fairReport) []string {
	var p []string
	for _, ph := range r.Phases {
		if ph.A.Errors > 0 {
			p = append(p, fmt.Sprintf("fair share, %s: %d errors of tenant A, first: %.200s", ph.Name, ph.A.Errors, ph.A.FirstError))
		}
	}
	if len(r.Phases) == 0 {
		p = append(p, "fair share: no phase ran")
	}
	return p
}

// renderFairShare writes the fair-share subsection of the hostile section.
func renderFairShare(b *strings.Builder, r *fairReport) {
	if r == nil {
		return
	}
	p := printer(b)
	p("### Each tenant's fair share, on cores the load does not share (issue 34)\n\n")
	p("Run %s – %s. ", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.UTC().Format("15:04 MST"))
	if r.Pinned {
		p("The gateway and the simulator are pinned to core %s and each tenant's load process to core %s (`taskset`),\n", gatewayCore, loadCore)
		p("tenant B's at the lowest priority (`nice -n 19`), so that B's load cannot take the CPU of A's sending. ")
	} else {
		p("**Not pinned** (one core, or no `taskset`): the figures share the cores with the load. ")
	}
	p("Tenant A (organization two, %d clients) sends the %s query back to back; tenant B (organization one, %d clients,\n", r.AClients, r.AQuery, r.BClients)
	p("its own key) floods with the %s query (valid and expensive: 101 upstream calls each), or with shapes the gateway\n", r.BQuery)
	p("refuses (%s). The gateway runs as in the hostile phases (`-caller-in-flight %d`, no `-rate-limit`), a new one for\n",
		"`"+strings.Join(r.BRefused, "`, `")+"`", hostileCallerInFlight)
	p("each window of %v; each flood is divided by A's quiet runs just before and after it.\n\n", r.Window)
	renderGoalTable(b, r.Goals)
	p("\"A's CPU\" is the part of the gateway's and the simulator's CPU in the window that A's requests took, at their cost in\n")
	p("the quiet runs (%s each): what a fair share would make half.\n\n", ms(r.quietCost()))
	p("| phase | A req/s | ÷ quiet | A's CPU | A errors | B answered | gateway CPU | simulator CPU |\n|---|---|---|---|---|---|---|---|\n")
	for i := range r.Phases {
		ph := &r.Phases[i]
		of := "–"
		if ph.Kind != phaseQuiet && r.quietBeside(i) > 0 {
			of = fmt.Sprintf("%.2f", r.ofQuiet(i))
		}
		p("| %s | %.0f | %s | %.2f | %d | %s | %v | %v |\n", ph.Name, ph.aRPS(), of, r.aShare(ph), ph.A.Errors, bAnswered(ph.B),
			ph.GatewayCPU.Round(time.Millisecond), ph.SimCPU.Round(time.Millisecond))
	}
	p("\n")
	if r.Profile != "" {
		p("The gateway's CPU profile over B's valid flood is written to `%s` (`go tool pprof -top %s`).\n\n", r.Profile, r.Profile)
	}
}
