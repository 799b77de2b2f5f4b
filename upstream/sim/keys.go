package sim

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// keyControls are the changes made to the API keys at run time: keys
// revoked, and rate limits per key. They are outside the contract, so that
// tests can see what a client does when the upstream revokes a key or
// throttles it.
type keyControls struct {
	mu      sync.Mutex
	revoked map[string]bool
	limits  map[string]*rate.Limiter
}

// RevokeKey makes key answer 401 invalid_credentials, as the upstream
// answers a revoked key, until RestoreKey.
func (s *Server) RevokeKey(key string) {
	s.keyCtl.mu.Lock()
	defer s.keyCtl.mu.Unlock()
	if s.keyCtl.revoked == nil {
		s.keyCtl.revoked = map[string]bool{}
	}
	s.keyCtl.revoked[key] = true
}

// RestoreKey undoes RevokeKey.
func (s *Server) RestoreKey(key string) {
	s.keyCtl.mu.Lock()
	defer s.keyCtl.mu.Unlock()
	delete(s.keyCtl.revoked, key)
}

// SetKeyRateLimit lets key make at most perSecond requests a second, in
// bursts of as many; a request past it is answered 429 rate_limited with
// Retry-After, the whole seconds until it would be allowed (at least 1).
// The limit counts a request once its key is known to be valid, as the
// upstream's per-key limit does. 0 lifts it.
func (s *Server) SetKeyRateLimit(key string, perSecond int) {
	s.keyCtl.mu.Lock()
	defer s.keyCtl.mu.Unlock()
	if perSecond <= 0 {
		delete(s.keyCtl.limits, key)
		return
	}
	if s.keyCtl.limits == nil {
		s.keyCtl.limits = map[string]*rate.Limiter{}
	}
	s.keyCtl.limits[key] = rate.NewLimiter(rate.Limit(perSecond), perSecond)
}

// isRevoked reports whether key was revoked.
func (c *keyControls) isRevoked(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revoked[key]
}

// throttle returns how long key must wait before a request is allowed, 0
// when it is allowed now (and counted).
func (c *keyControls) throttle(key string, now time.Time) time.Duration {
	c.mu.Lock()
	lim := c.limits[key]
	c.mu.Unlock()
	if lim == nil {
		return 0
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// controlPrefix is where the control routes are, beside the contract's /v1.
const controlPrefix = "/_sim/"

// serveControl answers the control routes (docs/simulator.md):
//
//	POST /_sim/keys/{key}/revoke       RevokeKey
//	POST /_sim/keys/{key}/restore      RestoreKey
//	PUT  /_sim/keys/{key}/rate-limit   SetKeyRateLimit, body {"per_second": N}
//
// Each answers 204, or 400 and 404 with the contract's error envelope.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	rest, ok := strings.CutPrefix(r.URL.Path, controlPrefix+"keys/")
	key, action, _ := strings.Cut(rest, "/")
	if _, known := s.keys[key]; !ok || !known {
		errorResponse(reqID, http.StatusNotFound, "not_found", "No such control route, or no such key").write(w, reqID)
		return
	}
	switch {
	case r.Method == http.MethodPost && action == "revoke":
		s.RevokeKey(key)
	case r.Method == http.MethodPost && action == "restore":
		s.RestoreKey(key)
	case r.Method == http.MethodPut && action == "rate-limit":
		var body struct {
			PerSecond *int `json:"per_second"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
		if err := dec.Decode(&body); err != nil || body.PerSecond == nil || *body.PerSecond < 0 || *body.PerSecond > math.MaxInt32 {
			errorResponse(reqID, http.StatusBadRequest, "validation_error",
				`Send {"per_second": N}, N from 0 (no limit) up`).write(w, reqID)
			return
		}
		s.SetKeyRateLimit(key, *body.PerSecond)
	default:
		errorResponse(reqID, http.StatusNotFound, "not_found", "No such control route, or no such key").write(w, reqID)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
