package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/upstream/sim"
)

// rawRequest sends head (a request line and headers, without the blank line
// that ends them) on a new connection to gw, and returns the answer and,
// when wantClose, whether the gateway closed the connection after it.
func rawRequest(t *testing.T, gw *gateway, head string, wantClose bool) (status int, body string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", gw.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A bound on the wait, not a measure of time.
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	go func() { _, _ = io.WriteString(conn, head+"\r\n\r\n") }() // the gateway may answer before it has read it all
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if wantClose {
		_, err = br.ReadByte()
		closed = err != nil
	}
	return resp.StatusCode, string(b), closed
}

// TestOversizedHeaders: headers past what a GET of the largest query string
// needs are refused 431 and their connection closed, and an Authorization
// header longer than a key can be is refused 431 REQUEST_TOO_LARGE; the
// largest GET is served. (Before, net/http's default of 1 MB held: a 1 MB
// Authorization header was read whole and answered 200.)
func TestOversizedHeaders(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	largest := "query=" + strings.Repeat("+", graph.MaxQueryStringBytes-len("query=")-len("{__typename}")) + "{__typename}"
	for _, tc := range []struct {
		name, head string
		status     int
		code       string // in the JSON answer; "" for net/http's own, which closes the connection
	}{
		{"a 1 MB Authorization header",
			"GET /graphql?query={__typename} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + strings.Repeat("k", 1<<20),
			http.StatusRequestHeaderFieldsTooLarge, ""},
		{"headers past the bound",
			"GET /graphql?query={__typename} HTTP/1.1\r\nHost: gw\r\nCookie: " + strings.Repeat("c", graph.MaxHeaderBytes+8<<10),
			http.StatusRequestHeaderFieldsTooLarge, ""},
		{"an Authorization header longer than a key",
			"POST /graphql HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 0\r\nAuthorization: Bearer " + strings.Repeat("k", 5000),
			http.StatusRequestHeaderFieldsTooLarge, "REQUEST_TOO_LARGE"},
		{"the largest GET, with 12 KB of other headers",
			"GET /graphql?" + largest + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + sim.DemoKey + "\r\nCookie: " + strings.Repeat("c", 12<<10),
			http.StatusOK, ""},
		{"a GET's query string past its bound",
			"GET /graphql?" + largest + "+ HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + sim.DemoKey,
			http.StatusRequestURITooLong, "REQUEST_TOO_LARGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ownAnswer := tc.code == "" && tc.status != http.StatusOK
			status, body, closed := rawRequest(t, gw, tc.head, ownAnswer)
			if status != tc.status {
				t.Fatalf("answered %d, want %d: %.300s", status, tc.status, body)
			}
			if ownAnswer && !closed {
				t.Errorf("the connection stays open after its %d", status)
			}
			if tc.code != "" {
				var ans gqlResponse
				if err := json.Unmarshal([]byte(body), &ans); err != nil || len(ans.Errors) != 1 || ans.Errors[0].Extensions["code"] != tc.code {
					t.Errorf("answer %.300s, want the code %s", body, tc.code)
				}
			}
		})
	}
}

// TestUnfinishedHeadersHoldLittle: 100 connections each sending a 1 MB
// header line and never finishing it, and 100 that send 40 KB of one and
// stall, make the gateway hold little memory: a 431 ends the first, and
// the second hold at most what the header bound lets them. (Before, the
// first took the gateway from 53 to 145 MB until the header timeout.) It
// does not run in parallel, so the heap it measures is the gateway's.
func TestUnfinishedHeadersHoldLittle(t *testing.T) {
	gw := startGateway(t, nil)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	const conns = 100
	var wg sync.WaitGroup
	for i := range 2 * conns {
		size := 1 << 20
		if i%2 == 1 {
			size = 40 << 10
		}
		conn, err := net.Dial("tcp", gw.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		wg.Go(func() {
			if _, err := fmt.Fprintf(conn, "GET /graphql HTTP/1.1\r\nHost: gw\r\nX-Pad: "); err != nil {
				return
			}
			chunk := []byte(strings.Repeat("p", 4<<10))
			for n := 0; n < size; n += len(chunk) {
				if _, err := conn.Write(chunk); err != nil {
					return // the gateway answered 431 and closed it
				}
			}
		})
	}
	wg.Wait()
	// What the gateway holds once it has read what it will: the most of a
	// few samples over a second, as the last bytes may still be on their way
	// to it (nothing says when the gateway has read all it will).
	var most uint64
	for range 10 {
		most = max(most, heap())
		time.Sleep(100 * time.Millisecond)
	}
	const bound = 2 * conns * 80 << 10 // 80 KiB a connection: the bound's line as net/http grows it, and its buffers
	if most > base && most-base > bound {
		t.Errorf("%d connections with unfinished headers hold %d KiB of the gateway's heap, want at most %d KiB",
			2*conns, (most-base)>>10, bound>>10)
	}
}
