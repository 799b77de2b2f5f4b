package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{MaxAttempts: 5, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond, MaxRetryAfter: time.Second}
	exact := []struct {
		name       string
		policy     RetryPolicy
		attempt    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{"Retry-After honoured", p, 1, 300 * time.Millisecond, 300 * time.Millisecond},
		{"Retry-After at the limit", p, 1, time.Second, time.Second},
		{"Retry-After above MaxDelay still honoured", p, 2, 500 * time.Millisecond, 500 * time.Millisecond},
		{"Retry-After above the limit stops", p, 1, time.Second + time.Nanosecond, -1},
		{"no backoff configured", RetryPolicy{MaxAttempts: 3}, 2, 0, 0},
	}
	for _, tc := range exact {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.policy.backoff(tc.attempt, tc.retryAfter); got != tc.want {
				t.Errorf("backoff(%d, %v) = %v, want %v", tc.attempt, tc.retryAfter, got, tc.want)
			}
		})
	}
	jitter := []struct {
		attempt int
		ceiling time.Duration
	}{
		{1, 10 * time.Millisecond},
		{2, 20 * time.Millisecond},
		{3, 40 * time.Millisecond},
		{4, 40 * time.Millisecond},  // capped
		{70, 40 * time.Millisecond}, // the shift overflows; still capped
	}
	for _, tc := range jitter {
		t.Run("jitter", func(t *testing.T) {
			t.Parallel()
			for range 200 {
				if got := p.backoff(tc.attempt, 0); got <= 0 || got > tc.ceiling {
					t.Fatalf("backoff(%d, 0) = %v, want in (0, %v]", tc.attempt, got, tc.ceiling)
				}
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"absent", "", 0},
		{"zero", "0", 0},
		{"seconds", "5", 5 * time.Second},
		{"spaces", " 7 ", 7 * time.Second},
		{"negative", "-3", 0},
		{"garbage", "soon", 0},
		{"fraction", "0.5", 0},
		{"HTTP date ahead", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"HTTP date past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"largest exact", "9223372036", 9223372036 * time.Second},
		{"overflowing to negative", "10000000000", 1<<63 - 1},
		{"overflowing to small", "18446744074", 1<<63 - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := parseRetryAfter(tc.in, now); got != tc.want {
				t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	e := &Error{Status: 401, Code: "bad_k", Message: "key k-123 and k-123", RequestID: "k-123"}
	e.scrub(newScrubber("k-123", "example.com"))
	if e.Code != "bad_k" || e.Message != "key [redacted] and [redacted]" || e.RequestID != "" {
		t.Errorf("after scrub: %+v", e)
	}
}

// A request that withoutBody prepared costs the transport what one with a
// nil body costs, within 20 KiB (under -race, sync.Pool drops some of what
// it keeps, and the two differ by up to 13 KiB): no buffer to copy its empty
// body, which the connection's io.Copy would take (32 KiB) for a body that
// is not an io.WriterTo. Bytes allocated, as the runtime counts them, over
// round trips on one kept connection, the test server's included.
func TestWithoutBodyCostsNoCopyBuffer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: NewTransport()}
	t.Cleanup(client.CloseIdleConnections)
	perCall := func(prepare func(*http.Request)) uint64 {
		call := func() {
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			prepare(req)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		call() // the connection
		const n = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			call()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / n
	}
	nilBody := perCall(func(*http.Request) {})
	empty := perCall(withoutBody)
	if empty > nilBody+20<<10 {
		t.Errorf("a request without a body allocates %d bytes a round trip, one with a nil body %d", empty, nilBody)
	}
}

// withoutBody frames each method's request as net/http frames one without a
// body, with no probe: a GET or a DELETE with neither Content-Length nor
// Transfer-Encoding, a POST chunked with no chunk (never unframed).
func TestWithoutBodyFraming(t *testing.T) {
	for _, tc := range []struct {
		method  string
		chunked bool
	}{{http.MethodGet, false}, {http.MethodDelete, false}, {http.MethodPost, true}, {http.MethodPatch, true}} {
		req, err := http.NewRequest(tc.method, "http://upstream.test/v1/budgets", nil)
		if err != nil {
			t.Fatal(err)
		}
		withoutBody(req)
		var b strings.Builder
		if err := req.Write(&b); err != nil {
			t.Fatal(err)
		}
		head, body, _ := strings.Cut(b.String(), "\r\n\r\n")
		h := strings.ToLower(head)
		if strings.Contains(h, "\r\ncontent-length:") || strings.Contains(h, "identity") {
			t.Errorf("%s: %q", tc.method, b.String())
		}
		if chunked := strings.Contains(h, "\r\ntransfer-encoding: chunked"); chunked != tc.chunked || (chunked && body != "0\r\n\r\n") || (!chunked && body != "") {
			t.Errorf("%s: %q, want chunked %v", tc.method, b.String(), tc.chunked)
		}
	}
}

// A history's rows share blocks of columns and of values: a row that
// crosses the end of a block, a row wider than a block and a value longer
// than one keep every column, a name given twice reads as its last value,
// and appending to one value leaves the next one as it was.
func TestHistoryRowsInBlocks(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"data":{"costRows":[`)
	row := func(i, cols int) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{`)
		for c := range cols {
			fmt.Fprintf(&b, `"c%d":%d,`, c, i*10000+c)
		}
		fmt.Fprintf(&b, `"c0":"last","long":"%s"}`, strings.Repeat("x", i%50*400))
	}
	wide := columnBlock*2 + 3
	for i := range 200 {
		cols := 3
		if i == 100 {
			cols = wide
		}
		row(i, cols)
	}
	b.WriteString(`],"totalsByTimeRows":[],"usageRows":[],"usageGroupRows":[],"timeColumn":"c1","groupBy":"c0",` +
		`"servedFromCache":false}}`)
	env := new(envelope[ExplorerHistory])
	if err := decodeAnswer(strings.NewReader(b.String()), env); err != nil {
		t.Fatal(err)
	}
	rows := env.Data.CostRows
	if len(rows) != 200 {
		t.Fatalf("%d rows, want 200", len(rows))
	}
	for i, r := range rows {
		cols := 3
		if i == 100 {
			cols = wide
		}
		if len(r) != cols+2 {
			t.Fatalf("row %d has %d columns, want %d", i, len(r), cols+2)
		}
		for c := 1; c < cols; c++ {
			if v, _ := r.Column(fmt.Sprintf("c%d", c)); string(v) != strconv.Itoa(i*10000+c) {
				t.Fatalf("row %d column c%d is %s", i, c, v)
			}
		}
		if v, _ := r.Column("c0"); string(v) != `"last"` {
			t.Errorf("row %d: c0 is %s, want its last value", i, v)
		}
		if v, _ := r.Column("long"); len(v) != i%50*400+2 {
			t.Errorf("row %d: long is %d bytes, want %d", i, len(v), i%50*400+2)
		}
	}
	first := rows[0]
	_ = append(first[1].Value, "999"...)
	if string(first[2].Value) != "2" {
		t.Errorf("appending to a value changed the next one: %s", first[2].Value)
	}
	raw, err := json.Marshal(rows[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"c0":"last","c1":10001,"c2":10002,"long":"` + strings.Repeat("x", 400) + `"}`; string(raw) != want {
		t.Errorf("raw row = %s, want %s", raw, want)
	}
}
