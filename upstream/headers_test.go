package upstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
)

// WithRequestHeaders puts its headers on every attempt, retries and Ping
// included, with each attempt's own context, and can neither replace nor
// remove the client's headers, nor learn the bearer key from the context.
func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "busy", "r"))
			return
		}
		writeJSON(w, http.StatusOK, `{"data":{}}`)
	})
	var mu sync.Mutex
	var keySeen bool
	var rec recorder
	c := newTestClient(t, f.URL, upstream.WithObserver(rec.observe),
		upstream.WithRequestHeaders(func(ctx context.Context, h upstream.HeaderSetter) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := upstream.APIKeyFrom(ctx); ok {
				keySeen = true
			}
			// The attempt's number comes from the observer's context.
			h.Set("traceparent", fmt.Sprintf("attempt-%v", ctx.Value(attemptKey{})))
			h.Set("authorization", "Bearer stolen")
			h.Set("Accept", "text/html")
			h.Set("User-Agent", "other")
		}))
	// The answer's body is beside the point: only the requests are looked at.
	_, _ = c.Budgets.Get(keyCtx(t), "bud_1")
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want a failed attempt, its retry and the ping", len(reqs))
	}
	for i, want := range []string{"attempt-1", "attempt-2", "attempt-1"} {
		h := reqs[i].Header
		if got := h.Values("Traceparent"); len(got) != 1 || got[0] != want {
			t.Errorf("request %d: traceparent %q, want %q", i+1, got, want)
		}
		if got := h.Get("Accept"); got != "application/json" {
			t.Errorf("request %d: Accept %q: the hook replaced the client's", i+1, got)
		}
		if got := h.Values("User-Agent"); len(got) != 1 || got[0] == "other" {
			t.Errorf("request %d: User-Agent %q: the hook replaced the client's", i+1, got)
		}
		wantAuth := "Bearer " + testKey
		if i == 2 {
			wantAuth = "" // Ping sends no key, nor the hook's
		}
		if got := h.Get("Authorization"); got != wantAuth {
			t.Errorf("request %d: Authorization %q, want %q", i+1, got, wantAuth)
		}
	}
	if keySeen {
		t.Error("the hook's context carried the bearer key")
	}
}

// Without an observer the hook still gets a context without the key.
func TestRequestHeadersWithoutObserver(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusOK, `{"data":{}}`))
	keySeen := false
	c := newTestClient(t, f.URL, upstream.WithRequestHeaders(func(ctx context.Context, h upstream.HeaderSetter) {
		_, keySeen = upstream.APIKeyFrom(ctx)
		h.Set("X-Extra", "1")
	}))
	_, _ = c.Budgets.Get(keyCtx(t), "bud_1")
	if keySeen {
		t.Error("the hook's context carried the bearer key")
	}
	if got := f.requests()[0].Header.Get("X-Extra"); got != "1" {
		t.Errorf("X-Extra %q, want 1", got)
	}
}

// A request without a body goes out on HTTP/1.1 as one: with neither
// Content-Length nor Transfer-Encoding. (Its body, empty and not nil, is
// what keeps the transport from replaying it: TestAttemptCountsMatchTheUpstreamUnderDroppedConnections.)
// The heads are read off the socket, as a server that is not Go's sees them.
func TestRequestsWithoutABodySendNoBodyHeaders(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	heads := make(chan string, 8)
	bodyHeaders := func(head string) bool {
		h := strings.ToLower(head)
		return strings.Contains(h, "\ncontent-length:") || strings.Contains(h, "\ntransfer-encoding:")
	}
	serve := func(conn net.Conn) {
		defer conn.Close()
		r := bufio.NewReader(conn)
		for {
			var head strings.Builder
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if line == "\r\n" {
					break
				}
				head.WriteString(line)
			}
			heads <- head.String()
			if bodyHeaders(head.String()) {
				return // this reading of the socket knows no bodies
			}
			const body = `{"data":{"plannings":[]}}`
			if _, err := fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(conn)
		}
	}()
	c := newTestClient(t, "http://"+ln.Addr().String(), upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}))
	// The answers are beside the point: only the requests are looked at.
	_, _ = c.Budgets.Planning(keyCtx(t), "b")
	_, _ = c.Budgets.Delete(keyCtx(t), "b")
	_ = c.Ping(t.Context())
	for _, want := range []string{"GET ", "DELETE ", "GET "} {
		var head string
		select {
		case head = <-heads:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %srequest arrived", want)
		}
		if !strings.HasPrefix(head, want) {
			t.Errorf("request %q, want a %s", head, want)
		}
		if bodyHeaders(head) {
			t.Errorf("a request without a body sent a body's headers:\n%s", head)
		}
	}
}

// A redirect is not followed: the bearer key goes to the upstream and
// nowhere else, and a 3xx is a failed call. Before, Go's client followed it
// with the Authorization header to any port of the same host (or from
// https to http), so an upstream, or whatever answered in its place,
// could send every caller's key elsewhere.
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	elsewhere := newFake(t, answer(http.StatusOK, `{"data":[],"pagination":{"limit":50,"has_more":false,"next_cursor":null}}`))
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, status)
		})
		for _, client := range []*upstream.Client{
			newTestClient(t, f.URL),
			newTestClient(t, f.URL, upstream.WithHTTPClient(&http.Client{Transport: upstream.NewTransport()})),
		} {
			_, err := client.Budgets.List(keyCtx(t), nil)
			var ue *upstream.Error
			if !errors.As(err, &ue) || ue.Status != status {
				t.Errorf("%d: err = %v, want an upstream error of status %d", status, err, status)
			}
		}
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the redirect's target saw %d requests, want none", n)
	}
}
