package upstream

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Ping reports whether the upstream answers: it sends one keyless GET of the
// budgets list through the client's transport and base URL, which the
// upstream refuses (401) before doing any work. Any answer below 500 means
// the upstream is reachable and Ping returns nil; a 5xx answer or none at
// all returns an *Error matching ErrUnavailable.
//
// Ping is meant for readiness checks, so it stands apart from calls: it
// makes one attempt (no retry), needs no key, and passes neither the
// circuit breakers (whose state is about callers' calls, and which a
// readiness check must not trip or be stopped by) nor the in-flight bound.
// The observer sees it as operation "ping"; the logger does not (the
// readiness check reports its own failures).
func (c *Client) Ping(ctx context.Context) error {
	const op, route = OpPing, "/v1/budgets"
	sc := newScrubber("", c.base.Host)
	info := Attempt{Op: op, Method: http.MethodGet, Route: route, Number: 1, ServerAddress: c.serverHost, ServerPort: c.serverPort}
	reqCtx, done := ctx, func(AttemptResult) {}
	if c.observer != nil {
		var d func(AttemptResult)
		if reqCtx, d = c.observer(keylessContext{ctx}, info); d != nil {
			done = d
		}
		if reqCtx == nil {
			reqCtx = ctx
		}
	}
	start := time.Now()
	o, err := c.ping(reqCtx, sc)
	o.class = classify(ctx, err, &o)
	done(AttemptResult{Attempt: info, Status: o.status, RequestID: o.reqID, Class: o.class, Sent: o.sent,
		Duration: time.Since(start)})
	return err
}

func (c *Client) ping(ctx context.Context, sc scrubber) (outcome, error) {
	const op = OpPing
	var o outcome
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+"/v1/budgets", nil)
	if err != nil {
		return o, &Error{Op: op, Code: codeRefused, Message: "build request", Err: scrubErr(sc, err)}
	}
	withoutBody(req)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	c.addHeaders(ctx, req)
	resp, err := c.http.Do(req)
	if err != nil {
		return o, &Error{Op: op, Code: codeNoResponse, Message: "no response", Err: scrubErr(sc, transportCause(err))}
	}
	defer resp.Body.Close()
	o.sent, o.status = true, resp.StatusCode
	o.reqID = sc.requestID(resp.Header.Get("X-Request-Id"))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 500 {
		return o, &Error{Op: op, Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode),
			Message: statusText(resp.StatusCode), RequestID: o.reqID}
	}
	return o, nil
}
