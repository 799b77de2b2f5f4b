package httpx

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/testhttp"

	"github.com/costgw/gateway/internal/testlog"
)

const internalError = `{"errors":[{"message":"internal error"}]}`

func answer(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, internalError+"\n")
}

// TestRecoverPanics checks that a panic becomes a 500 JSON error without
// the stack, logged with the request id, and that a panic after the answer
// started aborts the connection.
func TestRecoverPanics(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	mux := http.NewServeMux()
	mux.HandleFunc("/early", func(http.ResponseWriter, *http.Request) { panic("boom: early") })
	mux.HandleFunc("/late", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic("boom: late")
	})
	srv := httptest.NewServer(Recover(log, answer, RequestID(AccessLog(log, AccessLogOptions{}, mux))))
	defer srv.Close()

	status, h, body := testhttp.Get(t, srv.URL+"/early", "X-Request-Id", "req-42")
	if status != http.StatusInternalServerError || h.Get("Content-Type") != "application/json" || body != internalError+"\n" {
		t.Errorf("panic: %d %q %q", status, h.Get("Content-Type"), body)
	}
	if h.Get("X-Request-Id") != "req-42" {
		t.Errorf("X-Request-Id = %q, want the caller's", h.Get("X-Request-Id"))
	}
	if strings.Contains(body, "goroutine") || strings.Contains(body, "boom") {
		t.Errorf("the answer shows the panic: %q", body)
	}

	resp, err := http.Get(srv.URL + "/late")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Errorf("a panic after the answer started did not abort it")
	}

	var panics, access int
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch l["msg"] {
		case "panic serving a request":
			panics++
			if l["path"] == "/early" && (l["request_id"] != "req-42" || !strings.Contains(fmt.Sprint(l["stack"]), "goroutine")) {
				t.Errorf("panic line: %v", l)
			}
		case "request":
			access++
			if l["status"] != 500.0 && l["path"] == "/early" {
				t.Errorf("access line of a panic: %v", l)
			}
		}
	}
	if panics != 2 || access != 2 {
		t.Errorf("%d panic lines and %d access lines, want 2 and 2:\n%s", panics, access, logs)
	}
}

func TestPlainID(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "A-b_c.d:e", strings.Repeat("9", 128)}
	bad := []string{"", "a b", "a/b", strings.Repeat("9", 129), "é"}
	for _, id := range ids {
		if !PlainID(id) {
			t.Errorf("PlainID(%q) = false", id)
		}
	}
	for _, id := range bad {
		if PlainID(id) {
			t.Errorf("PlainID(%q) = true", id)
		}
	}
}

// A shutdown whose grace ends with a request in flight fails, unless every
// request left is one that overdue says has been answered already.
func TestServeLeavesOnlyOverdueRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		overdue func() int64
		fails   bool
	}{
		{"no overdue count", nil, true},
		{"none overdue", func() int64 { return 0 }, true},
		{"the one left overdue", func() int64 { return 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			started := make(chan struct{})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-release
			})}
			ctx, stop := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- Serve(ctx, srv, ln, 50*time.Millisecond, slog.New(slog.DiscardHandler), tc.overdue) }()
			go func() {
				if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
					_ = resp.Body.Close()
				}
			}()
			<-started
			stop()
			if err := <-served; (err != nil) != tc.fails {
				t.Errorf("Serve returned %v; want an error: %v", err, tc.fails)
			}
		})
	}
}

// readListener's connections send to read when bytes are first read from
// one.
type readListener struct {
	net.Listener
	read chan struct{}
}

func (l *readListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readConn{Conn: c, read: l.read}, nil
}

type readConn struct {
	net.Conn
	once sync.Once
	read chan<- struct{}
}

func (c *readConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.once.Do(func() {
			select {
			case c.read <- struct{}{}:
			default:
			}
		})
	}
	return n, err
}

// A request its client had begun sending when the shutdown began is
// answered, with Connection: close. net/http's Shutdown drops a request it
// finishes reading after the shutdown has begun: the client's connection
// was closed without an answer while the log said every request had been.
func TestServeAnswersARequestBeingSentAtShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "answered")
	}), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	var logs testlog.Buffer
	// net/http's ConnState says nothing of a request until its header is
	// whole: the listener's connections say when they are first read from.
	watched := &readListener{Listener: ln, read: make(chan struct{}, 1)}
	go func() {
		served <- Serve(ctx, srv, watched, 5*time.Second, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watched.read: // the server has the first bytes
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not read the request's first bytes in 10s")
	}
	stop()
	logs.Wait(t, 10*time.Second, "shutdown", func(log string) bool { return strings.Contains(log, "shutting down") })
	// What the shutdown does next (it turns keep-alives off, then waits for
	// the requests being read) has no event to wait for.
	time.Sleep(100 * time.Millisecond)
	if _, err := io.WriteString(c, "Content-Length: 2\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "answered" || !resp.Close {
		t.Errorf("answer %d %q, Connection: close %v", resp.StatusCode, body, resp.Close)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	// And no new connection is taken.
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("a new connection was accepted after the shutdown began")
	}
}

// failingWriter is a ResponseWriter whose body writes fail with err.
type failingWriter struct {
	*httptest.ResponseRecorder
	err error
}

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// TestAccessLogSaysAnAnswerWasCutOff: an answer whose writing failed is
// not logged as a plain 200: its line is a warning with cut_off and a note
// saying why, a passed write deadline told apart from a failed connection.
func TestAccessLogSaysAnAnswerWasCutOff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		note string
	}{
		{"write deadline", fmt.Errorf("write tcp: %w", os.ErrDeadlineExceeded), "had not taken it by the request's deadline"},
		{"connection gone", fmt.Errorf("write tcp: %w", syscall.EPIPE), "the connection failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &testlog.Buffer{}
			log := slog.New(slog.NewJSONHandler(logs, nil))
			h := AccessLog(log, AccessLogOptions{}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, "a large answer")
			}))
			h.ServeHTTP(failingWriter{httptest.NewRecorder(), tt.err}, httptest.NewRequest(http.MethodPost, "/graphql", nil))
			lines := logs.JSONLines(t)
			if len(lines) != 1 {
				t.Fatalf("%d lines:\n%s", len(lines), logs)
			}
			l := lines[0]
			if l["level"] != "WARN" || l["status"] != 200.0 || l["cut_off"] != true || !strings.Contains(fmt.Sprint(l["note"]), tt.note) {
				t.Errorf("access line %v, want a warning with cut_off and a note that %q", l, tt.note)
			}
		})
	}
}
