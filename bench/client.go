package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// loadClient is the load generator's HTTP/1.1 client for the contenders
// reached over HTTP (the gateway, the floor, Mesh). Each request is one
// write of bytes made once per query, on a connection kept alive for the
// next request of the same worker, and its answer is read with net/http's
// own parser (http.ReadResponse). net/http's Client does much more for each
// request (a Request and its headers built and copied, a timer, and a hand-off
// to the connection's read and write goroutines and back), which on a
// 2-core machine is CPU the contender does not get: the direct client,
// which needs no such client, did not pay it. What the client still costs
// is measured and reported beside each run (result.ClientCPU).
type loadClient struct {
	addr     string            // host:port
	requests map[string][]byte // the whole request, per query

	mu   sync.Mutex
	idle []*loadConn
}

type loadConn struct {
	c  net.Conn
	br *bufio.Reader
}

// requestTimeout bounds one request of the load generator.
const requestTimeout = 60 * time.Second

// newLoadClient makes the requests: a POST of body to the URL of each
// query, with the headers a browser's GraphQL client sends and the demo key.
func newLoadClient(urls map[string]string, bodies map[string][]byte, key string) (*loadClient, error) {
	l := &loadClient{requests: map[string][]byte{}}
	for name, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" {
			return nil, fmt.Errorf("load client: %q is not an http URL", raw)
		}
		if l.addr == "" {
			l.addr = u.Host
		} else if l.addr != u.Host {
			return nil, fmt.Errorf("load client: %s is on another host than %s", raw, l.addr)
		}
		body := bodies[name]
		var b bytes.Buffer
		fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
		b.WriteString("Content-Type: application/json\r\nAccept: application/json\r\n")
		b.WriteString("Authorization: Bearer " + key + "\r\n")
		b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
		b.Write(body)
		l.requests[name] = b.Bytes()
	}
	return l, nil
}

// do sends the request of query and reads its answer into buf. A
// connection that fails, or that the server closes, is not used again. A
// request is not cancelled with ctx once sent: it ends with its answer, or
// at requestTimeout.
func (l *loadClient) do(ctx context.Context, query string, buf *bytes.Buffer) (status int, err error) {
	req, ok := l.requests[query]
	if !ok {
		return 0, fmt.Errorf("load client: no request for %s", query)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c, err := l.conn(ctx)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = c.c.Close()
		}
	}()
	if err := c.c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, err
	}
	if _, err := c.c.Write(req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		resp, err = http.ReadResponse(c.br, nil) // an interim answer: the final one follows
	}
	if err != nil {
		return 0, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.Close {
		_ = c.c.Close()
	} else {
		l.put(c)
	}
	return resp.StatusCode, nil
}

func (l *loadClient) conn(ctx context.Context) (*loadConn, error) {
	l.mu.Lock()
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		return nil, err
	}
	return &loadConn{c: c, br: bufio.NewReaderSize(c, 16<<10)}, nil
}

func (l *loadClient) put(c *loadConn) {
	l.mu.Lock()
	l.idle = append(l.idle, c)
	l.mu.Unlock()
}

// closeIdle closes the connections not in use.
func (l *loadClient) closeIdle() {
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.mu.Unlock()
	for _, c := range idle {
		_ = c.c.Close()
	}
}
