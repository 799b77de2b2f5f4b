package main

// make profile: CPU and allocation profiles of the gateway serving one query
// under the harness's load.
//
// The gateway serves no pprof endpoint, and the profile should be of the
// real binary (its main package, middleware, access log and all), not of a
// rebuilt copy of its handler. So the harness builds the gateway with
// `go build -overlay`, which adds one file to the gateway's main package for
// that build only: an init function calling profilehook.Install. The
// binary then starts and stops the profiles on signals, which the harness
// sends as its measured window opens and closes. The source tree is not
// touched, the hook names nothing of the gateway's code (so it keeps working
// while the gateway changes), and no other build contains it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/costgw/gateway/internal/profilehook"
)

// hookSource is the file the overlay adds to the gateway's main package.
const hookSource = `package main

import "github.com/costgw/gateway/internal/profilehook"

func init() { profilehook.Install() }
`

// hookFile is the name the overlay gives it, beside the gateway's main.
const hookFile = "zz_bench_profilehook.go"

// goBuild builds pkg (run in dir, the repository root when empty) to out.
func goBuild(ctx context.Context, out, pkg, dir string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s in %q: %w", pkg, dir, err)
	}
	return nil
}

// buildProfiledGateway builds the gateway with the profile hook to out.
func buildProfiledGateway(ctx context.Context, tmp, out string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	src := filepath.Join(tmp, hookFile)
	if err := os.WriteFile(src, []byte(hookSource), 0o644); err != nil {
		return err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, hookFile): src}})
	if err != nil {
		return err
	}
	ovl := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovl, overlay, 0o644); err != nil {
		return err
	}
	return goBuild(ctx, out, ".", "", "-overlay", ovl)
}

// runProfile profiles the gateway serving cfg.profile to cfg.profileClients
// clients for cfg.profileDuration, and says how to read the profiles.
func runProfile(ctx context.Context, cfg config) error {
	q := queryByName(cfg.profile)
	dir := filepath.Join(cfg.profileDir, q.Name)
	oc := overheadConfigByName(cfg.profileTelemetry)
	if oc.Name != ovOff {
		dir += "-" + oc.Name
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{profilehook.CPUFile, profilehook.AllocsBaseFile, profilehook.AllocsFile,
		profilehook.DoneFile, profilehook.ErrorFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "costgw-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := binaries{dir: tmp, gateway: filepath.Join(tmp, "costgw"), costsim: filepath.Join(tmp, "costsim")}
	logf("building the gateway with the profile hook (go build -overlay) and cmd/costsim")
	if err := buildProfiledGateway(ctx, tmp, b.gateway); err != nil {
		return err
	}
	if err := goBuild(ctx, b.costsim, "./cmd/costsim", ""); err != nil {
		return err
	}

	lat := cfg.latencies[0]
	costsim, err := startSeededSim(ctx, b, lat)
	if err != nil {
		return err
	}
	defer costsim.stop()
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The telemetry of the overhead benchmark's configuration: a sink for
	// its traces, a scraper of its metrics.
	sinkURL, admin := "", ""
	if oc.Sampler != "" {
		sink, err := startSink()
		if err != nil {
			return err
		}
		defer sink.close()
		sinkURL = sink.url
	}
	if oc.Metrics {
		port, err := freePort()
		if err != nil {
			return err
		}
		admin = fmt.Sprintf("127.0.0.1:%d", port)
	}
	gw, url, err := startGatewayAdmin(ctx, "gateway", b.gateway, costsim.url, admin,
		append(oc.env(sinkURL), profilehook.Env+"="+absDir))
	if err != nil {
		return err
	}
	defer gw.stop()
	if admin != "" {
		sctx, stop := context.WithCancel(ctx)
		scr := scrape(sctx, "http://"+admin+"/metrics", cfg.overheadScrape)
		defer func() { stop(); <-scr.done }()
	}
	c, err := newGraphQL(nameGateway, url, gw.pid(), false, costsim.fx)
	if err != nil {
		return err
	}
	if _, err := answerOnce(ctx, c, q); err != nil {
		return fmt.Errorf("%s on the gateway: %w", q.Name, err)
	}
	signal := func(s syscall.Signal) func() {
		return func() {
			if err := syscall.Kill(gw.pid(), s); err != nil {
				logf("signal the gateway: %v", err)
			}
		}
	}
	logf("profiling the gateway (telemetry %s): %s, %d clients, %v measured after at least %v of warm-up", oc.Name, q.Name,
		cfg.profileClients, cfg.profileDuration, cfg.warmup)
	res, _ := runLoad(ctx, c, loadSpec{q: q, concurrency: cfg.profileClients, warmup: cfg.warmup,
		duration: cfg.profileDuration, latency: lat, simPid: costsim.proc.pid(),
		atStart: signal(syscall.SIGUSR1), atEnd: signal(syscall.SIGUSR2)})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := waitForFile(ctx, filepath.Join(dir, profilehook.DoneFile), filepath.Join(dir, profilehook.ErrorFile), 30*time.Second); err != nil {
		return err
	}
	if res.Errors > 0 {
		logf("WARN %d errors under load, first: %s", res.Errors, res.FirstError)
	}
	guide := profileGuide(dir, q.Name, res)
	if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte(guide), 0o644); err != nil {
		return err
	}
	fmt.Print(guide)
	return nil
}

// waitForFile waits until done exists, failing when errFile does or after
// timeout.
func waitForFile(ctx context.Context, done, errFile string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(done); err == nil {
			return nil
		}
		if b, err := os.ReadFile(errFile); err == nil {
			return fmt.Errorf("the profile hook: %s", strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no profiles after %v: %s was not written", timeout, done)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// profileGuide says what was profiled and how to read the profiles.
func profileGuide(dir, query string, r result) string {
	cpu := filepath.Join(dir, profilehook.CPUFile)
	base := filepath.Join(dir, profilehook.AllocsBaseFile)
	allocs := filepath.Join(dir, profilehook.AllocsFile)
	var b strings.Builder
	fmt.Fprintf(&b, "Profiles of the gateway serving %s to %d clients for %v: %d requests, %.0f req/s, %.0f CPU-µs per request\n",
		query, r.Concurrency, r.Elapsed, r.Requests, r.RPS(), us(r.CPUPerRequest()))
	fmt.Fprintf(&b, "(the profiler's own cost is in these figures; compare them with a run of the harness, not with each other).\n\n")
	fmt.Fprintf(&b, "  %-40s CPU of the measured window\n", cpu)
	fmt.Fprintf(&b, "  %-40s allocations from start to the end of the window\n", allocs)
	fmt.Fprintf(&b, "  %-40s allocations from start to the beginning of the window\n\n", base)
	fmt.Fprintf(&b, "Read them with:\n\n")
	fmt.Fprintf(&b, "  go tool pprof -top %s                  # where CPU goes, by function\n", cpu)
	fmt.Fprintf(&b, "  go tool pprof -top -cum %s             # by function and what it calls\n", cpu)
	fmt.Fprintf(&b, "  go tool pprof -top -sample_index=alloc_space -base %s %s   # bytes allocated in the window\n", base, allocs)
	fmt.Fprintf(&b, "  go tool pprof -top -sample_index=alloc_objects -base %s %s # allocations in the window\n", base, allocs)
	fmt.Fprintf(&b, "  go tool pprof -http=localhost:0 %s     # graphs and a flame graph in a browser\n", cpu)
	return b.String()
}
