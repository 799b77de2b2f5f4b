package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// Slow clients, through the whole server on real connections: a client
// that sends its body a byte at a time, or never reads its answer, must
// not hold a place of -requests-in-flight (found by an attacker trial).

// startSlowBody opens a connection to gw that sends a POST's headers and
// the first bytes of its body, and then nothing, until the test ends.
func startSlowBody(t *testing.T, gw *gateway, key string) net.Conn {
	t.Helper()
	body := `{"query":"{ __typename }"}`
	conn, err := net.Dial("tcp", gw.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	auth := ""
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	_, err = fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: gw\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		auth, len(body), body[:5])
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestSlowBodiesHoldNoPlace: two clients sending their body slowly on a
// gateway of two places do not keep a third caller's request waiting; it
// is answered at once, with its data. (Before, each took a place before
// its body was read and held it until its deadline, and the third
// request was answered 504.)
func TestSlowBodiesHoldNoPlace(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil, "-requests-in-flight", "2", "-request-timeout", "3s", "-admin-listen", "127.0.0.1:0")
	startSlowBody(t, gw, "")
	startSlowBody(t, gw, "")
	// Both are in the handler, reading, once the gateway counts them in
	// flight. A poll: a gateway on its own port tells nothing sooner.
	metrics := gw.adminURL(t) + "/metrics"
	waitFor(t, 10*time.Second, "the slow bodies did not reach the handler", func() bool {
		return value(t, scrape(t, metrics), "costgw_graphql_requests_in_flight", map[string]string{}) == 2
	})
	client := &http.Client{Timeout: 10 * time.Second}
	status, ans, err := postGraphQL(t, client, gw.url, sim.DemoKey, `{ budgets(first: 1) { nodes { name } } }`)
	if err != nil || status != http.StatusOK || len(ans.Errors) > 0 {
		t.Fatalf("a request while two slow bodies are being sent: %d %+v %v", status, ans.Errors, err)
	}
}

// TestSlowBodyAnsweredAtItsDeadline: a body not received by the request's
// deadline is answered 504 REQUEST_TIMEOUT at the deadline, with
// Connection: close, and the access log records it so. (Before, the read
// went on to the server's ReadTimeout of 30 s, and the deadline guard's
// answer, due a second after the deadline, waited for it.)
func TestSlowBodyAnsweredAtItsDeadline(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	gw := startGateway(t, nil, "-request-timeout", timeout.String())
	start := time.Now()
	conn := startSlowBody(t, gw, sim.DemoKey)
	// The guard would answer a second after the deadline: half of that
	// tells the two apart.
	_ = conn.SetReadDeadline(start.Add(timeout + 500*time.Millisecond))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer %v after the request began: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	var ans gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGatewayTimeout || len(ans.Errors) != 1 || ans.Errors[0].Extensions["code"] != "REQUEST_TIMEOUT" {
		t.Errorf("answer %d %+v, want 504 REQUEST_TIMEOUT", resp.StatusCode, ans.Errors)
	}
	if !resp.Close {
		t.Errorf("the answer leaves the connection open, with its body half read: %v", resp.Header)
	}
	line := waitAccessLine(t, gw, func(l map[string]any) bool { return l["status"] == 504.0 })
	if d, _ := line["duration_ms"].(float64); d > float64((timeout+500*time.Millisecond)/time.Millisecond) {
		t.Errorf("the access line says the request took %v ms: %v", d, line)
	}
}

// TestSlowReaderHoldsItsPlaceUntilItsDeadline: a client that never reads
// a large answer holds its place only until the deadline and a small
// margin, after which another caller's request is served; its access line
// and the metrics say the answer was cut off, not a plain 200. (Before, it
// held it until the server's WriteTimeout, the request timeout and 10 s.)
func TestSlowReaderHoldsItsPlaceUntilItsDeadline(t *testing.T) {
	t.Parallel()
	// Long enough for the answer to be ready well before the deadline
	// under the race detector on a busy machine (0.3 s unloaded).
	const timeout = 5 * time.Second
	// An answer of 4.8 MB, more than the kernel buffers of both ends take
	// (2.8 MB on loopback), and cheap to make: a budget whose four JSON
	// values are 60 KB strings, read 20 times. That is past the default
	// -max-answer-values, which is not what this test is about.
	gw := startGateway(t, nil, "-requests-in-flight", "1", "-request-timeout", timeout.String(), "-admin-listen", "127.0.0.1:0",
		"-max-answer-values", "0")
	var report struct {
		Budgets struct {
			Nodes []struct{ ExplorerReportID string }
		}
	}
	postVars(t, gw, `{ budgets(first: 1) { nodes { explorerReportId } } }`, nil, &report)
	v := strings.Repeat("x", 60_000)
	var created struct {
		CreateBudget struct{ Budget struct{ ID string } }
	}
	postVars(t, gw, `mutation($in: CreateBudgetInput!) { createBudget(input: $in) { budget { id } } }`,
		map[string]any{"in": map[string]any{"name": "large", "startDate": "2026-01-01", "numberOfPeriods": 1,
			"explorerReportId": report.Budgets.Nodes[0].ExplorerReportID,
			"budgetType":       v, "startingValue": v, "customStartingValue": v, "growthRate": v}}, &created)
	var q strings.Builder
	q.WriteString("query Large($id: ID!) {")
	for i := range 20 {
		fmt.Fprintf(&q, " b%d: budget(id: $id) { budgetType startingValue customStartingValue growthRate }", i)
	}
	q.WriteString(" }")
	body, _ := json.Marshal(map[string]any{"query": q.String(), "variables": map[string]any{"id": created.CreateBudget.Budget.ID}})

	// A small receive buffer, set before the connection is made so that
	// the window it announces is small too.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", gw.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		sim.DemoKey, len(body), body)
	if err != nil {
		t.Fatal(err)
	}
	// The slow reader's place frees at the deadline and the margin (2 s
	// after it); before, it was held until the deadline and 10 s. Another
	// caller tries until then and 2 s more, each try waiting in line up to
	// its own deadline.
	client := &http.Client{Timeout: 2 * timeout}
	end := start.Add(timeout + 4*time.Second)
	var tries []string
	served := false
	for !served && time.Now().Before(end) {
		status, ans, err := postGraphQL(t, client, gw.url, sim.OtherOrgKey, `{ budgets(first: 1) { nodes { name } } }`)
		served = err == nil && status == http.StatusOK && len(ans.Errors) == 0
		tries = append(tries, fmt.Sprintf("%.1fs: %d %v", time.Since(start).Seconds(), status, err))
	}
	if !served {
		t.Fatalf("no request of another caller was served in the %v after a slow reader's request began: %v", timeout+4*time.Second, tries)
	}
	line := waitAccessLine(t, gw, func(l map[string]any) bool { return l["operation"] == "Large" })
	if line["status"] != 200.0 || line["cut_off"] != true || line["level"] != "WARN" || !strings.Contains(fmt.Sprint(line["note"]), "cut off") {
		t.Errorf("the slow reader's access line does not say its answer was cut off: %v", line)
	}
	// The metrics say so too (they counted it as OK, with no other sign).
	fams := scrape(t, gw.adminURL(t)+"/metrics")
	if got := value(t, fams, "costgw_graphql_answers_cut_off_total", map[string]string{}); got != 1 {
		t.Errorf("costgw_graphql_answers_cut_off_total = %v, want 1", got)
	}
}

// postVars sends query with variables and the demo key to gw, and decodes
// the answer's data into out, failing the test on any error.
func postVars(t *testing.T, gw *gateway, query string, vars map[string]any, out any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(graphQLRequest(gw.url, sim.DemoKey, map[string]any{"query": query, "variables": vars}))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || len(ans.Errors) > 0 {
		t.Fatalf("%.60s: %d %+v %v", query, resp.StatusCode, ans.Errors, err)
	}
	if err := json.Unmarshal(ans.Data, out); err != nil {
		t.Fatal(err)
	}
}

// waitAccessLine returns the first access line of gw that match accepts,
// waiting for it up to 10 s (a line is written when its handler ends).
func waitAccessLine(t *testing.T, gw *gateway, match func(map[string]any) bool) map[string]any {
	t.Helper()
	var line map[string]any
	gw.logs.Wait(t, 10*time.Second, "such access line", func(string) bool {
		for _, l := range gw.logs.JSONLines(t) {
			if l["msg"] == "request" && match(l) {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// TestSlowBodyConnectionClosed: the connection of a body the gateway does
// not read to its end, answered with Connection: close, is closed after that
// answer (RFC 9112, 9.6), though the client goes on sending a byte at a time:
// a body not received by the deadline (504), and one refused from its
// headers (415). (Before, net/http read on for up to 256 KiB of the rest,
// with no deadline after a 504, so 100 such connections stayed open and kept
// taking bytes; a refused one had no answer until the server's ReadTimeout.)
func TestSlowBodyConnectionClosed(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil, "-request-timeout", "1s")
	for _, tc := range []struct {
		name, contentType string
		status            int
	}{
		{"past its deadline", "application/json", http.StatusGatewayTimeout},
		{"refused from its headers", "text/plain", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", gw.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: %s\r\nContent-Length: 100000\r\n\r\n{", sim.DemoKey, tc.contentType)
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go trickle(conn, stop)
			// A bound on the wait, far past the deadline, not a measure of time.
			_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("answer %d, Connection: %q; want %d with Connection: close", resp.StatusCode, resp.Header.Get("Connection"), tc.status)
			}
			if n, err := br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("after its answer the connection is still open: read %d bytes, %v", n, err)
			}
		})
	}
}

// trickle writes a byte to conn every 50 ms until stop is closed or a write
// fails.
func trickle(conn net.Conn, stop <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}
