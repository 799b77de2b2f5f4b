//go:build unix

package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// buildBinary builds the gateway as `make build` does and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			t.Skip("skipping: no go command to build the binary with")
		}
	}
	bin := filepath.Join(t.TempDir(), "costgw")
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", bin, "../..") // the module root: costgw
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// environ is the test's environment without COSTGW_ variables, so that only
// what a test sets configures the binary.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COSTGW_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// TestBinarySIGTERM runs the built binary, sends it SIGTERM while many
// requests wait on a slow upstream, and checks that every one of them is
// answered and the process exits 0. It also runs -healthcheck as the
// container's HEALTHCHECK does, and -version.
func TestBinarySIGTERM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping the binary test in -short mode")
	}
	bin := buildBinary(t)

	out, err := exec.Command(bin, "-version").Output()
	if err != nil || !strings.HasPrefix(string(out), "costgw ") {
		t.Errorf("costgw -version: %q %v", out, err)
	}

	s, up := simUpstream(t, sim.Options{Latency: sim.Latency{Fixed: 300 * time.Millisecond}})
	// Every request in flight at once (the default bound would queue some).
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-upstream", up.URL, "-requests-in-flight", "64", "-cache", "off")
	cmd.Env = environ("COSTGW_PLAYGROUND=false")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Read the log: the address from the "serving" line, and every line.
	var mu sync.Mutex
	var lines []string
	addrc := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving" {
				addrc <- l.Addr
			}
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(20 * time.Second):
		t.Fatal("the binary did not log its address in 20s")
	}

	health := func() error {
		hc := exec.Command(bin, "-healthcheck")
		hc.Env = environ("COSTGW_LISTEN=" + addr)
		return hc.Run()
	}
	if err := health(); err != nil {
		t.Errorf("costgw -healthcheck against the running gateway: %v", err)
	}

	const n = 30
	results := sendInFlight(t, "http://"+addr, n)
	// The gateway's probe of the upstream at start is a GET /v1/budgets too.
	waitFor(t, 10*time.Second, "the requests did not reach the upstream", func() bool {
		return s.Calls(ops.ListBudgets) >= n+1
	})
	termAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "new connections are still accepted after SIGTERM", func() bool { return refused(addr) })
	checkDrained(t, results, n, termAt)

	waited := make(chan error, 1)
	go func() {
		<-logDone
		waited <- cmd.Wait()
	}()
	select {
	case err := <-waited:
		var exit *exec.ExitError
		if errors.As(err, &exit) || err != nil {
			t.Errorf("the binary exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the binary did not exit 30s after SIGTERM")
	}
	mu.Lock()
	logs := strings.Join(lines, "\n")
	mu.Unlock()
	for _, want := range []string{"shutting down", "stopped: every request answered"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	if err := health(); err == nil {
		t.Error("costgw -healthcheck succeeds with no gateway running")
	}
}
