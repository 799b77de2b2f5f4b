package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// Slow clients, through the whole server on real connections: a client
// that sends its body a byte at a time must not hold a place of
// -requests-in-flight (found by an attacker trial).

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
	gw := startGateway(t, nil, "-requests-in-flight", "2", "-request-timeout", "3s")
	startSlowBody(t, gw, "")
	startSlowBody(t, gw, "")
	time.Sleep(300 * time.Millisecond) // both are in the handler, reading
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

// waitAccessLine returns the first access line of gw that match accepts,
// waiting for it up to 10 s (a line is written when its handler ends).
func waitAccessLine(t *testing.T, gw *gateway, match func(map[string]any) bool) map[string]any {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		for _, l := range gw.logs.JSONLines(t) {
			if l["msg"] == "request" && match(l) {
				return l
			}
		}
		if time.Now().After(end) {
			t.Fatalf("no such access line in 10 s:\n%s", gw.logs)
		}
	}
}
