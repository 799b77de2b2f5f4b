//go:build unix

package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/testlog"
	"github.com/costgw/gateway/internal/testredis"
	"github.com/costgw/gateway/upstream/sim"
)

// redisRequestTimeout is the replicas' -request-timeout in the Redis test,
// and its client's timeout: an answer that comes later has hung.
const redisRequestTimeout = 3 * time.Second

// redisRateLimit is the replicas' -rate-limit in the Redis test.
const redisRateLimit = 5

// TestRedisTwoReplicas runs two replicas on one real Redis and one simulator,
// through the real middleware: what one replica puts in Redis the other
// uses, the bearer key never reaches Redis in clear, and when Redis hangs
// (SIGSTOP) or dies (SIGKILL) every request still answers in time, as the
// sharedstate package documents: the rate limit lets requests through, and
// the persisted-query store answers "not found", so a query sent with its
// hash runs.
func TestRedisTwoReplicas(t *testing.T) {
	t.Parallel()
	rds := testredis.Start(t)
	_, up := simUpstream(t, sim.Options{})
	args := []string{"-upstream", up.URL, "-redis-url", rds.URL(),
		"-rate-limit", strconv.Itoa(redisRateLimit), "-request-timeout", redisRequestTimeout.String()}
	a, b := startGateway(t, nil, args...), startGateway(t, nil, args...)
	client := &http.Client{Timeout: redisRequestTimeout}

	// Each part of the test takes its own key, so that no part spends the
	// rate of another.
	apqKey, burstKey, otherKey, outageKey := sim.DemoKey, sim.ReadOnlyKey, sim.OtherOrgKey, sim.UnentitledKey
	keys := []string{apqKey, burstKey, otherKey, outageKey}

	const registered = `query RedisAPQ { budgets(first: 2) { nodes { name } } }`
	t.Run("a persisted query registered on A is served by B", func(t *testing.T) {
		if got := postAPQ(t, client, b, apqKey, registered, false); got.code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Fatalf("B before registration: %s, want PERSISTED_QUERY_NOT_FOUND", got)
		}
		onA := postAPQ(t, client, a, apqKey, registered, true)
		if onA.status != http.StatusOK || onA.code() != "" || !strings.Contains(string(onA.ans.Data), `"name"`) {
			t.Fatalf("registering on A: %s, want budgets", onA)
		}
		onB := postAPQ(t, client, b, apqKey, registered, false)
		if onB.status != http.StatusOK || onB.code() != "" || !bytes.Equal(onB.ans.Data, onA.ans.Data) {
			t.Fatalf("B from the hash alone: %s, want A's answer %s", onB, onA.ans.Data)
		}
		if got := rds.Dump(t)["costgw:apq:"+sha256Hex(registered)]; got != registered {
			t.Errorf("Redis holds %q for the hash, want the query", got)
		}
	})

	t.Run("one key's rate limit holds across replicas", func(t *testing.T) {
		// Three times the limit to each replica: two replicas that each
		// kept their own rate would allow twice the burst, and twice the
		// requests a second after it.
		n := 6 * redisRateLimit
		allowed, elapsed := burst(t, client, burstKey, n, a, b)
		// GCRA allows the burst, then one request every 1/limit s.
		most := redisRateLimit + int(math.Ceil(elapsed.Seconds()*redisRateLimit)) + 1
		if allowed < redisRateLimit || allowed > most {
			t.Errorf("%d of %d requests in %v sent alternately to two replicas were allowed, want %d to %d: "+
				"the rate limit of %d a second is not shared", allowed, n, elapsed.Round(time.Millisecond), redisRateLimit, most, redisRateLimit)
		}
		for _, g := range []*gateway{a, b} {
			if got := postTypename(t, client, g, otherKey); got.status != http.StatusOK || got.code() != "" {
				t.Errorf("another key, at once: %s, want 200: one key's limit must not touch another's", got)
			}
		}
	})

	t.Run("Redis holds no bearer key in clear", func(t *testing.T) {
		dump := rds.Dump(t)
		for _, key := range keys {
			for k, v := range dump {
				if strings.Contains(k, key) || strings.Contains(v, key) {
					t.Errorf("Redis key %q holds the bearer key %q in clear", k, key)
				}
			}
		}
		// The scan looked where the limiter writes: under the key's SHA-256.
		var found bool
		for k := range dump {
			found = found || strings.Contains(k, sha256Hex(burstKey))
		}
		if !found {
			t.Errorf("no Redis key names the SHA-256 of the burst's key; keys: %q", slices.Sorted(maps.Keys(dump)))
		}
	})

	t.Run("Redis hung (SIGSTOP): every request answers, failing open", func(t *testing.T) {
		rds.Pause(t)
		failOpen(t, client, outageKey, apqKey, registered, a, b)
	})

	const duringOutage = `query RedisAPQDuringOutage { budgets(first: 1) { nodes { id } } }`
	t.Run("Redis back (SIGCONT): shared again", func(t *testing.T) {
		rds.Resume(t)
		if got := postAPQ(t, client, b, apqKey, registered, false); got.status != http.StatusOK || got.code() != "" {
			t.Errorf("B from the hash registered before Redis hung: %s", got)
		}
		if got := postAPQ(t, client, b, apqKey, duringOutage, true); got.status != http.StatusOK || got.code() != "" {
			t.Fatalf("registering on B: %s", got)
		}
		if got := postAPQ(t, client, a, apqKey, duringOutage, false); got.status != http.StatusOK || got.code() != "" {
			t.Errorf("A from the hash alone, once Redis is back: %s", got)
		}
	})

	t.Run("Redis gone (SIGKILL): every request answers, failing open", func(t *testing.T) {
		rds.Kill(t)
		failOpen(t, client, outageKey, apqKey, duringOutage, a, b)
	})

	t.Run("logs: the failing uses, never a key", func(t *testing.T) {
		uses := map[string]bool{}
		for _, g := range []*gateway{a, b} {
			logs := g.logs.String()
			for _, key := range keys {
				if strings.Contains(logs, key) {
					t.Errorf("a log line holds the bearer key %q", key)
				}
			}
			for _, l := range g.logs.JSONLines(t) {
				if use, ok := l["use"].(string); ok && l["msg"] == "redis is failing; going on without it" {
					uses[use] = true
				}
			}
		}
		for _, use := range []string{"rate limit", "persisted queries"} {
			if !uses[use] {
				t.Errorf("no replica logged that Redis fails for the %s; logged for %v", use, uses)
			}
		}
	})
}

// failOpen checks the replicas gs while their Redis does not answer: each
// request answers 200 within the client's timeout; key is allowed far past
// the rate limit; a hash the store does not have (even known, a hash
// registered while Redis answered) is PERSISTED_QUERY_NOT_FOUND, and the
// query sent with its hash runs.
func failOpen(t *testing.T, client *http.Client, key, apqKey, known string, gs ...*gateway) {
	t.Helper()
	n := 3 * redisRateLimit
	if allowed, elapsed := burst(t, client, key, n, gs...); allowed != n {
		t.Errorf("%d of %d requests in %v allowed, want all: the rate limit fails open", allowed, n, elapsed.Round(time.Millisecond))
	}
	unknown := `query RedisAPQUnknown { budgets(first: 1) { nodes { name } } }`
	for _, g := range gs {
		for _, q := range []string{unknown, known} {
			if got := postAPQ(t, client, g, apqKey, q, false); got.code() != "PERSISTED_QUERY_NOT_FOUND" {
				t.Errorf("the hash alone: %s, want PERSISTED_QUERY_NOT_FOUND", got)
			}
			if got := postAPQ(t, client, g, apqKey, q, true); got.status != http.StatusOK || got.code() != "" ||
				!strings.Contains(string(got.ans.Data), `"budgets"`) {
				t.Errorf("the query with its hash: %s, want it run", got)
			}
		}
	}
}

// burst sends n `{ __typename }` of key, to each of gs in turn, one after
// the other, and counts those allowed. Each one refused must be 429 with
// Retry-After and RATE_LIMITED.
func burst(t *testing.T, client *http.Client, key string, n int, gs ...*gateway) (allowed int, elapsed time.Duration) {
	t.Helper()
	start := time.Now()
	for i := range n {
		got := postTypename(t, client, gs[i%len(gs)], key)
		switch {
		case got.status == http.StatusOK && got.code() == "":
			allowed++
		case got.status == http.StatusTooManyRequests && got.code() == "RATE_LIMITED":
			if s, err := strconv.Atoi(got.header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("429 with Retry-After %q, want whole seconds, at least 1", got.header.Get("Retry-After"))
			}
		default:
			t.Fatalf("request %d: %s, want 200 or 429 RATE_LIMITED", i, got)
		}
	}
	return allowed, time.Since(start)
}

// reply is one answer of the gateway.
type reply struct {
	status int
	header http.Header
	ans    gqlResponse
}

func (r reply) code() string { return r.ans.code() }

func (r reply) String() string {
	b, _ := json.Marshal(r.ans)
	return strconv.Itoa(r.status) + " " + string(b)
}

func postTypename(t *testing.T, client *http.Client, g *gateway, key string) reply {
	t.Helper()
	return postBody(t, client, g, key, map[string]any{"query": `{ __typename }`})
}

// postAPQ sends query as an automatic persisted query: its hash, and the
// query itself when register.
func postAPQ(t *testing.T, client *http.Client, g *gateway, key, query string, register bool) reply {
	t.Helper()
	body := map[string]any{"extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": sha256Hex(query)}}}
	if register {
		body["query"] = query
	}
	return postBody(t, client, g, key, body)
}

// post sends body to g's /graphql with key, failing the test when no answer
// comes within the client's timeout.
func postBody(t *testing.T, client *http.Client, g *gateway, key string, body map[string]any) reply {
	t.Helper()
	resp, err := client.Do(graphQLRequest(g.url, key, body))
	if err != nil {
		t.Fatalf("POST %s: %v (the client's timeout is the request's deadline, %v)", g.url, err, client.Timeout)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(&r.ans); err != nil {
		t.Fatalf("POST %s: %d, body not JSON: %v", g.url, resp.StatusCode, err)
	}
	return r
}

func sha256Hex(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

// TestRedisDownBinaryLogsOnlyJSON runs the built gateway with a Redis that
// dies: its stderr holds nothing but its JSON log lines, and no bearer key.
// go-redis printed a line of its own there for each failed dial, one a
// request, unstructured, until sharedstate turned its log off.
func TestRedisDownBinaryLogsOnlyJSON(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping the binary test in -short mode")
	}
	rds := testredis.Start(t)
	bin := buildBinary(t)
	_, up := simUpstream(t, sim.Options{})
	gw := startBinary(t, bin, "-upstream", up.URL, "-redis-url", rds.URL(),
		"-rate-limit", strconv.Itoa(redisRateLimit), "-request-timeout", redisRequestTimeout.String())
	rds.Kill(t)

	client := &http.Client{Timeout: redisRequestTimeout}
	const q = `query RedisDownBinary { budgets(first: 1) { nodes { name } } }`
	for range 3 * redisRateLimit {
		if got := postAPQ(t, client, gw.gateway, sim.DemoKey, q, true); got.status != http.StatusOK || got.code() != "" {
			t.Fatalf("with Redis down: %s, want the query run", got)
		}
	}
	if err := gw.stop(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}

	logs := gw.stderr.String()
	var failing bool
	for line := range strings.Lines(logs) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("a line of stderr is not a JSON log line: %q", line)
			continue
		}
		failing = failing || l["msg"] == "redis is failing; going on without it"
	}
	if !failing {
		t.Errorf("the log does not say that Redis is failing:\n%s", logs)
	}
	if strings.Contains(logs, sim.DemoKey) {
		t.Error("the log holds the bearer key")
	}
}

// binaryGateway is the built gateway, run by startBinary.
type binaryGateway struct {
	*gateway
	stderr *testlog.Buffer
	stop   func() error // SIGTERM, then wait up to 30 s for an exit, whose error it returns
}

// startBinary runs the built gateway bin with args on 127.0.0.1:0, and
// returns once it serves. It is killed when the test ends.
func startBinary(t *testing.T, bin string, args ...string) *binaryGateway {
	t.Helper()
	stderr := &testlog.Buffer{}
	cmd := exec.Command(bin, append([]string{"-listen", "127.0.0.1:0", "-playground=false"}, args...)...)
	cmd.Env = environ()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	stop := func() error {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		select {
		case <-exited:
			return waitErr
		case <-time.After(30 * time.Second):
			return errors.New("no exit 30s after SIGTERM")
		}
	}
	for timeout := time.After(20 * time.Second); ; {
		log, changed := stderr.Changed()
		for line := range strings.Lines(log) {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
				return &binaryGateway{gateway: &gateway{url: "http://" + l.Addr, addr: l.Addr}, stderr: stderr, stop: stop}
			}
		}
		select {
		case <-changed:
			continue
		case <-exited:
			t.Fatalf("the binary exited before serving: %v\n%s", waitErr, stderr)
		case <-timeout:
		}
		break
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT) // its goroutines' stacks, on stderr
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	t.Fatalf("the binary did not log its address in 20s:\n%s", stderr)
	return nil
}
