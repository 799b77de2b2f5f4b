package graph

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/internal/testlog"
	"github.com/costgw/gateway/upstream"
)

// A handler that does not look at its context (parsing and validation do
// not) is answered 504 REQUEST_TIMEOUT at its deadline, sent while the
// handler is still busy, with Connection: close; and what it writes later
// never reaches the client. A 15 000-token document once validated for
// 11 s under -request-timeout 1s, answered by nothing but the server's write
// timeout dropping the connection.
func TestDeadlineCoversWorkThatIgnoresTheContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	wrote := make(chan error, 1)
	guard := guardDeadline(slog.New(slog.DiscardHandler), new(atomic.Int64), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // busy, deaf to its context
		w.Header().Set("X-Late", "1")
		_, err := io.WriteString(w, `{"data":"late"}`)
		wrote <- err
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 50*time.Millisecond)
		defer cancel()
		guard.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"query":"{ __typename }"}`))
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	// The whole answer has arrived, and the handler is still busy.
	select {
	case <-wrote:
		t.Error("the handler ended before the timeout's answer arrived")
	default:
	}
	close(release)
	if err != nil || resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"REQUEST_TIMEOUT"`) || !resp.Close {
		t.Errorf("answer %d %s (read error %v), Connection: close %v", resp.StatusCode, body, err, resp.Close)
	}
	if err := <-wrote; err != http.ErrHandlerTimeout {
		t.Errorf("the late write returned %v, want http.ErrHandlerTimeout", err)
	}
	if strings.Contains(string(body), "late") || resp.Header.Get("X-Late") != "" {
		t.Errorf("the late answer reached the client: %v %s", resp.Header, body)
	}
}

// A handler deaf to its deadline, whose request the guard has answered, does
// not fail a graceful shutdown: its client has the whole answer. (Since the
// handler runs on its request's goroutine, its connection stays in use until
// it ends, and the shutdown once waited for it and failed at the end of its
// grace.)
func TestShutdownLeavesAnsweredHandlers(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var overdue atomic.Int64
	guard := guardDeadline(slog.New(slog.DiscardHandler), &overdue, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // deaf to its context until the test ends
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httpx.Deadline(50*time.Millisecond, guard)}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpx.Serve(ctx, srv, ln, 200*time.Millisecond, slog.New(slog.DiscardHandler), overdue.Load)
	}()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("answer %d, want 504", resp.StatusCode)
	}
	if n := overdue.Load(); n != 1 {
		t.Errorf("%d handlers overdue with the deaf handler running, want 1", n)
	}
	stop()
	if err := <-served; err != nil {
		t.Errorf("the shutdown failed: %v", err)
	}
}

// A handler that panics after the guard answered in its place is logged,
// and its panic goes no further: the answer has been sent.
func TestPanicAfterTheDeadlineIsLogged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var logged testlog.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		release := make(chan struct{})
		h := guardDeadline(log, new(atomic.Int64), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			panic("late trouble")
		}))
		if rec := serveOverdue(context.Background(), h, release); rec.Code != http.StatusGatewayTimeout {
			t.Errorf("answer %d %s", rec.Code, rec.Body)
		}
		if !strings.Contains(logged.String(), "late trouble") {
			t.Errorf("the panic was not logged: %q", logged.String())
		}
	})
}

// serveOverdue serves h a request under ctx with a deadline 10 ms away,
// and closes release, which h waits for, once the guard has answered in its
// place. It runs in a synctest bubble, whose clock moves from one timer to
// the next as soon as h waits: release is closed 1 ms after the guard's
// timer.
func serveOverdue(ctx context.Context, h http.Handler, release chan struct{}) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	time.AfterFunc(10*time.Millisecond+deadlineGrace+time.Millisecond, func() { close(release) })
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "POST", "/graphql", nil))
	return rec
}

// The outcome the access log, the metrics and the span read is what the
// client got: a 504 the guard sent in place of an answer the executor had
// finished, but the handler had not yet written, once stayed OK.
func TestOutcomeOfALateAnswerIsTheTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := guardDeadline(slog.New(slog.DiscardHandler), new(atomic.Int64), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			InfoFrom(r.Context()).answer(nil, json.RawMessage(`{"budget":null}`)) // the executor is done
			<-release                                                             // and the handler is late to write
			_, _ = io.WriteString(w, `{"data":{"budget":null}}`)
		}))
		ctx, info := WithInfo(context.Background())
		if rec := serveOverdue(ctx, h, release); rec.Code != http.StatusGatewayTimeout {
			t.Errorf("answer %d %s", rec.Code, rec.Body)
		}
		if got := info.Outcome(); got != "REQUEST_TIMEOUT" {
			t.Errorf("Outcome() = %q, want REQUEST_TIMEOUT, what the client got", got)
		}
	})
}

// An interim answer (103 Early Hints) does not start the answer: a handler
// that sent one and then overran its deadline is answered 504 in its place.
// The guard once took the interim status for the answer and left the client
// waiting for the handler.
func TestInterimAnswerDoesNotStartTheAnswer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	guard := guardDeadline(slog.New(slog.DiscardHandler), new(atomic.Int64), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</playground.js>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		<-release // busy, deaf to its context
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 50*time.Millisecond)
		defer cancel()
		guard.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	defer close(release)
	var interim []int
	var interimLink string
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			interim, interimLink = append(interim, code), h.Get("Link")
			return nil
		},
	})
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader(`{"query":"{ __typename }"}`))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: deadlineGrace + 3*time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"REQUEST_TIMEOUT"`) {
		t.Errorf("answer %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Link") != "" {
		t.Errorf("the timeout's answer has the handler's header: %v", resp.Header)
	}
	if len(interim) != 1 || interim[0] != http.StatusEarlyHints || interimLink == "" {
		t.Errorf("interim answers %v, Link %q; want [103] with the handler's Link", interim, interimLink)
	}
}

// An answer that has started is left to finish: it streams, and its
// handler's context has ended, so it soon does. (On synctest's clock, the
// handler's part two comes past the guard's timer.)
func TestDeadlineLeavesAStartedAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := guardDeadline(slog.New(slog.DiscardHandler), new(atomic.Int64), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "part one;")
			<-r.Context().Done()
			time.Sleep(deadlineGrace + 50*time.Millisecond)
			_, _ = io.WriteString(w, "part two")
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != "part one;part two" {
			t.Errorf("answer %d %q", rec.Code, rec.Body)
		}
	})
}

// A request whose deadline passes while its document is checked stops
// before validation with REQUEST_TIMEOUT.
func TestExpiredRequestStopsBeforeValidation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	c, err := upstream.NewClient("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Options{Client: c})
	req := httptest.NewRequestWithContext(ctx, "POST", "/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), `"REQUEST_TIMEOUT"`) {
		t.Errorf("answer %d %s", rec.Code, rec.Body)
	}
}

// The cache of parsed documents is bounded by bytes: a thousand
// comment-padded documents of 2 MB once filled it to 3.6 GB. A hundred show
// it as well, each alone charged more than the bound; and a thousand 10 KB
// ones fill it seven times over.
func TestDocumentCacheIsBoundedByBytes(t *testing.T) {
	t.Parallel()
	c := newDocCache(docCacheBytes)
	doc := &ast.QueryDocument{}
	const padded = 100
	pad := "#" + strings.Repeat("x", 2<<20)
	bound := docCacheBytes + charge(pad+strings.Repeat("y", padded))
	for i := range padded {
		c.Keep(context.Background(), pad+string(rune('a'+i%26))+strings.Repeat("y", i), doc)
		if c.Bytes() > bound {
			t.Fatalf("after %d padded documents the cache charges %d bytes", i+1, c.Bytes())
		}
	}
	for i := range 1000 {
		q := "{ __typename } #" + strings.Repeat("p", 10<<10) + string(rune(i))
		c.Keep(context.Background(), q, doc)
		if c.Bytes() > docCacheBytes+charge(q) {
			t.Fatalf("after %d 10 KB documents the cache charges %d bytes", i+1, c.Bytes())
		}
	}
	// The last document kept is found, large or not.
	big := "#" + strings.Repeat("z", 3<<20)
	c.Keep(context.Background(), big, doc)
	if got, ok := c.Get(context.Background(), big); !ok || got != doc {
		t.Error("the transient document is not found")
	}
}
