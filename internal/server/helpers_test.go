package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/telemetry"
	"github.com/costgw/gateway/internal/testhttp"
	"github.com/costgw/gateway/internal/testlog"
	"github.com/costgw/gateway/upstream/sim"
)

// envMap is a lookupEnv over a map, so tests need not touch the process's
// environment and can run in parallel.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// gateway is a costgw started by run on a loopback port.
type gateway struct {
	url  string
	addr string
	logs *testlog.Buffer
	stop func() error // cancels run's context (as SIGTERM does) and waits for run
}

// startGateway runs the gateway with args and env (nil: none) on
// 127.0.0.1:0 until the test ends.
func startGateway(t testing.TB, env map[string]string, args ...string) *gateway {
	t.Helper()
	args = append([]string{"-listen", "127.0.0.1:0"}, args...)
	return startWith(t, fmt.Sprintf("Run(%q)", args), func(ctx context.Context, logs io.Writer, ready chan<- string) error {
		return Run(ctx, args, envMap(env), io.Discard, logs, ready)
	})
}

// startTraced serves the gateway with args on 127.0.0.1:0, tracing with
// tracing, until the test ends: as Run does, but with the test's tracing in
// place of the one the environment configures.
func startTraced(t testing.TB, tracing *telemetry.Tracing, args ...string) *gateway {
	t.Helper()
	args = append([]string{"-listen", "127.0.0.1:0"}, args...)
	cfg, err := ParseConfig(args, envMap(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return startWith(t, fmt.Sprintf("serve(%q)", args), func(ctx context.Context, logs io.Writer, ready chan<- string) error {
		return serve(ctx, cfg, tracing, newLogger(cfg, logs), ready)
	})
}

// startWith starts run, named what in failures, and waits until it serves.
func startWith(t testing.TB, what string, run func(ctx context.Context, logs io.Writer, ready chan<- string) error) *gateway {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testlog.Buffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, logs, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("%s ended before serving: %v\n%s", what, err, logs)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("%s did not start in 20s\n%s", what, logs)
	}
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(40 * time.Second):
				t.Errorf("run did not return 40s after its context ended")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return &gateway{url: "http://" + addr, addr: addr, logs: logs, stop: stop}
}

// adminURL is the base URL of the gateway's admin listener, as its
// "serving" log line gives it (the gateway must log JSON).
func (g *gateway) adminURL(t testing.TB) string {
	t.Helper()
	for _, l := range g.logs.JSONLines(t) {
		if l["msg"] == "serving" {
			u, _ := l["admin"].(string)
			if u == "" {
				t.Fatalf("the serving line has no admin URL: %v", l)
			}
			return strings.TrimSuffix(u, "/")
		}
	}
	t.Fatalf("no serving line:\n%s", g.logs)
	return ""
}

// simUpstream serves a simulator with opts on a loopback port until the test
// ends.
func simUpstream(t testing.TB, opts sim.Options) (*sim.Server, *httptest.Server) {
	t.Helper()
	s := sim.New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// gqlResponse is a GraphQL answer.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// code is extensions.code of the first error, "" when there is none.
func (r gqlResponse) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// graphQLRequest is a POST of body, as JSON, to baseURL's /graphql with key
// (none if empty) and the header pairs. As httptest.NewRequest, it panics
// where it cannot be made: baseURL is the test's own server's.
func graphQLRequest(baseURL, key string, body any, header ...string) *http.Request {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	req, err := http.NewRequest(http.MethodPost, baseURL+"/graphql", bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	testhttp.SetHeader(req.Header, header...)
	return req
}

// postGraphQL sends query to the gateway with key (none if empty) and returns
// the HTTP status and the decoded answer.
func postGraphQL(t testing.TB, client *http.Client, baseURL, key, query string) (int, gqlResponse, error) {
	t.Helper()
	resp, err := client.Do(graphQLRequest(baseURL, key, map[string]string{"query": query}))
	if err != nil {
		return 0, gqlResponse{}, err
	}
	defer resp.Body.Close()
	var out gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, out, err
	}
	return resp.StatusCode, out, nil
}
