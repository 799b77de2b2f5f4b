//go:build unix

// Package testredis runs a real redis-server for tests: on a free loopback
// port, without persistence, stopped when the test ends. A test can pause it
// (SIGSTOP: a Redis that accepts connections and never answers), resume it,
// or kill it, and read everything it holds.
package testredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/costgw/gateway/internal/testlog"
)

// Binary is the server Start runs, looked up on PATH; Debian's package
// redis-server installs it, and .ci/run installs that package.
const Binary = "redis-server"

// Server is a redis-server started by Start.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1.
	Addr string

	cmd    *exec.Cmd
	out    *testlog.Buffer
	exited chan struct{} // closed when the process has ended

	mu     sync.Mutex
	paused bool
}

// Start runs redis-server on a free port of 127.0.0.1 until the test ends,
// and returns once it answers PING. Without redis-server on PATH the test is
// skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath(Binary)
	if err != nil {
		t.Skipf("skipping: no %s on PATH (Debian package redis-server: apt-get install redis-server; .ci/run installs it)", Binary)
	}
	// A free port can be taken by another process between our probe and
	// Redis's bind; Redis then exits at once, and another port is tried.
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s, err := start(t, bin, port)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("redis-server did not start: %v", last)
	return nil
}

// Restart starts an empty redis-server on the port of s, which must have
// been killed, and returns it.
func (s *Server) Restart(t testing.TB) *Server {
	t.Helper()
	_, p, _ := net.SplitHostPort(s.Addr)
	port, _ := strconv.Atoi(p)
	s2, err := start(t, s.cmd.Path, port)
	if err != nil {
		t.Fatalf("restarting redis-server: %v", err)
	}
	return s2
}

func start(t testing.TB, bin string, port int) (*Server, error) {
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), out: &testlog.Buffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(),
		"--daemonize", "no", "--loglevel", "warning")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()

	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The answer must come from this process: when another server took
		// the port first, this one exits while that one answers.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		pid, err := processID(ctx, rdb)
		cancel()
		if err == nil && pid == s.cmd.Process.Pid {
			break
		}
		if err == nil {
			err = fmt.Errorf("port %d answered by another redis-server (pid %d)", port, pid)
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("redis-server on port %d exited: %s", port, strings.TrimSpace(s.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on port %d does not answer after 10s: %v\n%s", port, err, s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(s.stop)
	return s, nil
}

// processID returns the process_id of INFO server.
func processID(ctx context.Context, rdb *redis.Client) (int, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// freePort returns a loopback TCP port nothing listens on just now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Pause stops the process with SIGSTOP: it still accepts connections (the
// kernel does) but answers nothing, as a hung or overloaded Redis does.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGSTOP, "SIGSTOP", true)
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGCONT, "SIGCONT", false)
}

// signal sends the process sig (named name) and records whether that leaves
// it paused, for stop.
func (s *Server) signal(t testing.TB, sig syscall.Signal, name string, paused bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s redis-server: %v", name, err)
	}
	s.paused = paused
}

// Kill ends the process with SIGKILL and waits for it: its port then
// refuses connections.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.stop()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server did not exit 10s after SIGKILL")
	}
}

// stop kills the process (a paused one too) and waits for it.
func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	if s.paused {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		s.paused = false
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// Dump returns every key the server holds with its value as text (a hash's
// fields and values, a list's or a set's members, one a line), read with
// SCAN, so that a test can search all of it.
func (s *Server) Dump(t testing.TB) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := s.Client(t)
	out := map[string]string{}
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		v, err := value(ctx, rdb, k)
		if err != nil {
			t.Fatalf("reading Redis key %q: %v", k, err)
		}
		out[k] = v
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return out
}

// value renders the value of key as text, whatever its type.
func value(ctx context.Context, rdb *redis.Client, key string) (string, error) {
	typ, err := rdb.Type(ctx, key).Result()
	if err != nil {
		return "", err
	}
	var parts []string
	switch typ {
	case "none": // expired between SCAN and TYPE
		return "", nil
	case "string":
		v, err := rdb.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		return v, err
	case "hash":
		m, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return "", err
		}
		for f, v := range m {
			parts = append(parts, f+"="+v)
		}
	case "list":
		parts, err = rdb.LRange(ctx, key, 0, -1).Result()
	case "set":
		parts, err = rdb.SMembers(ctx, key).Result()
	case "zset":
		parts, err = rdb.ZRange(ctx, key, 0, -1).Result()
	default:
		return "", fmt.Errorf("type %s: not rendered", typ)
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n"), err
}
