package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The load client sends each query's request as net/http's client would
// (method, path, headers, body), reads answers of a fixed length, chunked
// or closing the connection, and keeps a connection for the next request
// unless the server closes it.
func TestLoadClient(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	var mode atomic.Value // how the server answers the next request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/q/Detail" || string(body) != `{"query":"{a}"}` ||
			r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Accept") != "application/json" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		switch mode.Load() {
		case "chunked":
			_, _ = io.WriteString(w, `{"data":`)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"a":1}}`)
		case "close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, `{"data":{"a":1}}`)
		default:
			w.Header().Set("Content-Length", "16")
			_, _ = io.WriteString(w, `{"data":{"a":1}}`)
		}
	}))
	defer srv.Close()

	body := map[string][]byte{"Detail": []byte(`{"query":"{a}"}`), "Bad": []byte(`{}`)}
	c, err := newLoadClient(map[string]string{"Detail": srv.URL + "/q/Detail", "Bad": srv.URL + "/q/Bad"}, body, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer c.closeIdle()
	ctx := context.Background()
	var buf bytes.Buffer
	for i, m := range []string{"length", "length", "chunked", "length", "close", "length"} {
		mode.Store(m)
		status, err := c.do(ctx, "Detail", &buf)
		if err != nil || status != http.StatusOK || buf.String() != `{"data":{"a":1}}` {
			t.Fatalf("request %d (%s): status %d, answer %q, error %v", i, m, status, buf.String(), err)
		}
	}
	// One connection until the server closed it, then a second one.
	if len(conns) != 2 {
		t.Errorf("the requests went over %d connections, want 2", len(conns))
	}
	mode.Store("length")
	if status, err := c.do(ctx, "Bad", &buf); err != nil || status != http.StatusBadRequest ||
		!strings.Contains(buf.String(), "unexpected request") {
		t.Errorf("a refused request: status %d, answer %q, error %v", status, buf.String(), err)
	}
	if _, err := c.do(ctx, "Unknown", &buf); err == nil {
		t.Error("a query with no request was sent")
	}
}
