package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// binaries are the programs the bench builds and runs.
type binaries struct {
	dir     string // temporary directory of the run
	gateway string
	costsim string
	meshDir string // bench/mesh, with node_modules installed
	// baseline, when set, is a gateway built from another checkout, run
	// beside the current one for a before/after comparison.
	baseline string
	// floor, when set, is this program, started again to serve the
	// extra-hop floor (floor.go).
	floor string
}

// env is one set of processes on loopback: the simulator with a fixed
// latency, and the gateway and Mesh on top of it.
type env struct {
	latency time.Duration
	sim     *proc
	simURL  string
	simLog  *os.File // the simulator's access log, one line per call
	gateway *proc
	gwURL   string
	floor   *proc
	base    *proc
	mesh    *proc
	meshURL string
	fx      fixture

	contenders []contender
}

// startEnv starts the simulator with the given latency, seeds the data the
// queries need, then starts the gateway, the floor if b has one, and, if
// wanted, Mesh.
func startEnv(ctx context.Context, b binaries, latency time.Duration, withMesh bool, meshFork int) (_ *env, err error) {
	e := &env{latency: latency}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()

	s, err := startSeededSim(ctx, b, latency)
	if err != nil {
		return nil, err
	}
	e.sim, e.simURL, e.simLog, e.fx = s.proc, s.url, s.log, s.fx

	if e.gateway, e.gwURL, err = startGateway(ctx, "gateway", b.gateway, e.simURL, nil); err != nil {
		return nil, err
	}
	gw, err := newGraphQL(nameGateway, e.gwURL, e.gateway.pid(), false, e.fx)
	if err != nil {
		return nil, err
	}
	d, err := newDirect(e.simURL, e.fx)
	if err != nil {
		return nil, err
	}
	e.contenders = []contender{gw, d}
	if b.floor != "" {
		var url string
		if e.floor, url, err = startFloor(ctx, b.floor, e.simURL, e.fx); err != nil {
			return nil, err
		}
		f, err := newFloor(url, e.floor.pid(), e.fx)
		if err != nil {
			return nil, err
		}
		e.contenders = append(e.contenders, f)
	}
	if b.baseline != "" {
		var url string
		if e.base, url, err = startGateway(ctx, "baseline", b.baseline, e.simURL, nil); err != nil {
			return nil, err
		}
		bg, err := newGraphQL(nameBaseline, url, e.base.pid(), false, e.fx)
		if err != nil {
			return nil, err
		}
		e.contenders = append(e.contenders, bg)
	}

	if withMesh {
		if err := e.startMesh(ctx, b, meshFork); err != nil {
			return nil, err
		}
		m, err := newGraphQL(nameMesh, e.meshURL, e.mesh.pid(), true, e.fx)
		if err != nil {
			return nil, err
		}
		e.contenders = append(e.contenders, m)
	}
	return e, nil
}

// simulator is a running cmd/costsim, seeded with the data the queries need.
type simulator struct {
	proc *proc
	url  string
	log  *os.File // its access log, one line per call
	fx   fixture
}

// startSeededSim starts cmd/costsim with the given latency per call
// (startSim) and seeds it (seed).
func startSeededSim(ctx context.Context, b binaries, latency time.Duration) (*simulator, error) {
	p, url, log, err := startSim(ctx, b, latency)
	if err != nil {
		return nil, err
	}
	s := &simulator{proc: p, url: url, log: log}
	if s.fx, err = seed(ctx, url); err != nil {
		s.stop()
		return nil, fmt.Errorf("seed the simulator: %w", err)
	}
	return s, nil
}

// stop stops the simulator and closes its log.
func (s *simulator) stop() {
	s.proc.stop()
	s.log.Close()
}

// startSim starts cmd/costsim with the given latency per call and returns
// it with its base URL and its log, one line per call.
func startSim(ctx context.Context, b binaries, latency time.Duration) (p *proc, url string, log *os.File, err error) {
	port, err := freePort()
	if err != nil {
		return nil, "", nil, err
	}
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	log, err = os.OpenFile(filepath.Join(b.dir, fmt.Sprintf("costsim-%v.log", latency)),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, "", nil, err
	}
	p, err = startProc("costsim", "", nil, log, b.costsim, "-listen", fmt.Sprintf("127.0.0.1:%d", port), "-latency", latency.String())
	if err != nil {
		log.Close()
		return nil, "", nil, err
	}
	if err := waitHTTP(ctx, p, url+"/v1/budgets", 0, 30*time.Second); err != nil {
		p.stop()
		log.Close()
		return nil, "", nil, err
	}
	return p, url, log, nil
}

// startGateway starts a gateway binary on the simulator and returns it with
// its GraphQL URL. It runs as it would in production, access log included
// (to /dev/null), but for two settings: the playground is off since nothing
// here uses it, and so is the cache of upstream answers (uncached), since
// each benchmark but the many users' measures what one request costs. env
// and args are added to its environment and flags, and win.
func startGateway(ctx context.Context, name, bin, simURL string, env []string, args ...string) (*proc, string, error) {
	return startGatewayAdmin(ctx, name, bin, simURL, "", env, args...)
}

// startGatewayAdmin is startGateway with the admin listener on admin
// (-admin-listen; none when empty), where the health endpoints then are.
func startGatewayAdmin(ctx context.Context, name, bin, simURL, admin string, env []string, args ...string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	args = append([]string{"-listen", fmt.Sprintf("127.0.0.1:%d", port), "-upstream", simURL,
		"-playground=false", "-cursor-secret", "bench"}, args...)
	health := fmt.Sprintf("127.0.0.1:%d", port)
	if admin != "" {
		args = append(args, "-admin-listen", admin)
		health = admin
	}
	p, err := startProc(name, "", append([]string{uncached}, env...), nil, bin, args...)
	if err != nil {
		return nil, "", err
	}
	if err := waitHTTP(ctx, p, "http://"+health+"/healthz", 200, 30*time.Second); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, fmt.Sprintf("http://127.0.0.1:%d/graphql", port), nil
}

// uncached turns the gateway's cache off (-cache off). It is set in the
// environment, not on the command line, so that a -baseline built from
// before the cache, which has no such flag, starts as well; -cache on
// among the flags wins over it. With the cache, a request repeated by the
// load would make no upstream call after the first, the calls counted
// would be those of a cache hit, and the gateway's automatic memory limit
// would be -cache-max-bytes higher.
const uncached = "COSTGW_CACHE=off"

// startMesh composes Mesh's supergraph over upstream/openapi.yaml, pointed
// at this simulator, and serves it with Hive Gateway.
func (e *env) startMesh(ctx context.Context, b binaries, fork int) error {
	supergraph := filepath.Join(b.dir, "supergraph.graphql")
	logPath := filepath.Join(b.dir, "mesh.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	compose, err := startProc("mesh-compose", b.meshDir, []string{"COSTSIM_URL=" + e.simURL}, log,
		filepath.Join(b.meshDir, "node_modules", ".bin", "mesh-compose"), "-o", supergraph)
	if err != nil {
		return err
	}
	select {
	case <-compose.done:
	case <-time.After(2 * time.Minute):
		compose.stop()
		return fmt.Errorf("mesh-compose did not finish in 2 minutes; see %s", logPath)
	}
	if compose.err != nil {
		return fmt.Errorf("mesh-compose: %v; see %s", compose.err, logPath)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	e.meshURL = fmt.Sprintf("http://127.0.0.1:%d/graphql", port)
	e.mesh, err = startProc("mesh", b.meshDir, []string{"NODE_ENV=production"}, log,
		filepath.Join(b.meshDir, "node_modules", ".bin", "hive-gateway"), "supergraph", supergraph,
		"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--fork", strconv.Itoa(fork))
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, e.mesh, fmt.Sprintf("http://127.0.0.1:%d/healthcheck", port), 200, time.Minute); err != nil {
		return fmt.Errorf("%w; see %s", err, logPath)
	}
	return nil
}

// stop ends every process of the environment.
func (e *env) stop() {
	for _, c := range e.contenders {
		c.close()
	}
	e.mesh.stop()
	e.base.stop()
	e.floor.stop()
	e.gateway.stop()
	e.sim.stop()
	if e.simLog != nil {
		e.simLog.Close()
	}
}

// countCalls serves q once with c and returns the upstream calls it made per
// operation id, read from the simulator's access log.
func (e *env) countCalls(ctx context.Context, c contender, q *query) (map[string]int, error) {
	if err := e.simLog.Truncate(0); err != nil {
		return nil, err
	}
	if _, err := answerOnce(ctx, c, q); err != nil {
		return nil, err
	}
	// The simulator logs a call after answering it: give the last lines a moment.
	time.Sleep(200 * time.Millisecond)
	f, err := os.Open(e.simLog.Name())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "msg=request") {
			continue
		}
		_, rest, ok := strings.Cut(line, " operation=")
		if !ok {
			continue
		}
		op, _, _ := strings.Cut(rest, " ")
		out[op]++
	}
	return out, sc.Err()
}

// truncateLog keeps the simulator's log from growing over a long run.
func (e *env) truncateLog() { _ = e.simLog.Truncate(0) }

// seed brings organization one to overviewBudgets budgets and returns the
// fixture of the queries.
func seed(ctx context.Context, simURL string) (fixture, error) {
	c, err := upstream.NewClient(simURL)
	if err != nil {
		return fixture{}, err
	}
	ctx = upstream.WithAPIKey(ctx, sim.DemoKey)
	pg, err := c.Budgets.List(ctx, &upstream.ListOptions{Limit: upstream.MaxPageSize})
	if err != nil {
		return fixture{}, err
	}
	if len(pg.Data) == 0 {
		return fixture{}, fmt.Errorf("organization one has no budgets")
	}
	first := pg.Data[0]
	for i := len(pg.Data); i < overviewBudgets; i++ {
		start, _ := upstream.ParseDate("2026-01-01")
		_, err := c.Budgets.Create(ctx, &upstream.BudgetCreate{
			Name: fmt.Sprintf("Bench budget %02d", i+1), StartDate: start, NumberOfPeriods: 12,
			ExplorerReportID: first.ExplorerReportID, Status: "ACTIVE",
		}, nil)
		if err != nil {
			return fixture{}, err
		}
	}
	return fixture{BudgetID: first.ID, Explorer: dashboardQuery()}, nil
}
