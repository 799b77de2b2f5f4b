package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/cors"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"

	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/internal/sharedstate"
)

// withInfo gives every request the graph.Info its access line, metrics and
// span read: the GraphQL endpoint fills it, the upstream client's observer
// counts calls into it. With the cache on, it also gets the cache's
// counters (extensions.cache), and a request that asks for fresh data
// (noCache) reads nothing from the cache.
func withInfo(cache bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, _ := graph.WithInfo(upstream.WithLogScope(r.Context()))
		if cache {
			ctx, _ = upstream.WithCacheStats(ctx)
			if noCache(r.Header) {
				ctx = upstream.WithCacheRefresh(ctx)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// noCache reports whether the request's Cache-Control asks for an answer
// from the origin: no-cache, or max-age=0 (a browser's reload).
func noCache(h http.Header) bool {
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if d == "no-cache" || d == "max-age=0" {
				return true
			}
		}
	}
	return false
}

// infoAttrs are the access line's GraphQL operation name, number of
// upstream calls (retries included) and, when some failed, how many: the
// upstream client logs only the first failed attempt of a request.
func infoAttrs(r *http.Request) []slog.Attr {
	i := graph.InfoFrom(r.Context())
	if i == nil {
		return nil
	}
	name, _ := i.Operation()
	attrs := []slog.Attr{slog.String("operation", name), slog.Int64("upstream_calls", i.UpstreamCalls())}
	if n := upstream.FailedAttempts(r.Context()); n > 0 {
		attrs = append(attrs, slog.Int64("upstream_failures", n))
	}
	return attrs
}

// observe is the upstream client's observer: every attempt it sends counts
// toward its request's Info (the access line, extensions.cost), and, when
// they are on, gets its span and its metrics.
func (in *instruments) observe(ctx context.Context, a upstream.Attempt) (context.Context, func(upstream.AttemptResult)) {
	fromCache := a.Cache == upstream.CacheHit || a.Cache == upstream.CacheStale
	if !fromCache {
		graph.CountUpstreamCall(ctx)
	}
	var endSpan func(upstream.AttemptResult)
	if in.tracing.Enabled() && a.Op != upstream.OpPing { // probes make no traces

		ctx, endSpan = in.tracing.Upstream(ctx, a)
	}
	if in.metrics == nil && endSpan == nil {
		return ctx, nil
	}
	return ctx, func(r upstream.AttemptResult) {
		if in.metrics != nil && !fromCache {
			in.metrics.UpstreamAttempt(r)
		}
		if endSpan != nil {
			endSpan(r)
		}
	}
}

// graphql wraps the GraphQL endpoint: the per-key rate limit (when limiter
// is not nil), the operation's span, and its metrics.
func (in *instruments) graphql(limiter sharedstate.Limiter, perSecond int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var done func(opType, code string, d time.Duration, cutOff bool)
		if in.metrics != nil {
			done = in.metrics.RequestStarted()
		}
		start := time.Now()
		ctx, op := in.tracing.StartOperation(r.Context())
		info := graph.InfoFrom(ctx)
		if limiter != nil && !allowed(ctx, w, r, limiter, perSecond) {
			if in.metrics != nil {
				in.metrics.RateLimited()
			}
		} else {
			next.ServeHTTP(w, r.WithContext(ctx))
		}
		if info == nil {
			return
		}
		name, typ := info.Operation()
		code := info.Outcome()
		cutOff := httpx.WriteErr(w) != nil
		op.End(name, typ, code, info.EstimatedCalls(), info.UpstreamCalls(), cutOff)
		if done != nil {
			done(typ, code, time.Since(start), cutOff)
		}
	})
}

// allowed takes a request of its bearer key from the rate limit, and
// answers 429 RATE_LIMITED, with Retry-After, when the key is over it.
// Requests without a key share one allowance, as they are one caller for
// admission: they may only introspect, but a flood of them is a flood all
// the same. (The empty string is no key a request can carry, so it names
// them apart from every key.)
func allowed(ctx context.Context, w http.ResponseWriter, r *http.Request, limiter sharedstate.Limiter, perSecond int) bool {
	key, ok := graph.BearerKey(r)
	if !ok {
		key = ""
	}
	ok, retryAfter := limiter.Allow(ctx, key)
	if ok {
		return true
	}
	if i := graph.InfoFrom(ctx); i != nil {
		i.AnsweredWith(codes.RateLimited)
	}
	who := "this API key is"
	if key == "" {
		who = "requests without an API key are"
	}
	graph.MarkNoStore(w.Header())
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(retryAfter.Seconds(), 1)))))
	codes.Write(w, r, http.StatusTooManyRequests, codes.Errorf(codes.RateLimited,
		"%s over the gateway's rate limit of %d requests a second; retry after Retry-After", who, perSecond).
		With("retryable", true))
	return false
}

// withCORS lets the browser origins of the list call the gateway (see
// Config.CORSOrigins) and answers their preflight requests. The gateway
// takes keys from the Authorization header, never from cookies, so it does
// not allow credentials.
func withCORS(origins, headers []string, next http.Handler) http.Handler {
	m := newOriginMatcher(origins)
	h := cors.New(cors.Options{
		AllowOriginFunc: m.allow,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost},
		AllowedHeaders:  headers,
		ExposedHeaders:  []string{httpx.RequestIDHeader},
		MaxAge:          600,
	}).Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Origin")) > 1 {
			// No browser sends two, and rs/cors, having allowed the first,
			// echoes them all in Access-Control-Allow-Origin: a request of
			// two origins is one of none.
			r.Header.Del("Origin")
		}
		h.ServeHTTP(w, r)
	})
}

// originMatcher decides whether a browser origin may call.
type originMatcher struct {
	any       bool
	localhost bool
	exact     map[string]bool
	patterns  [][2]string // prefix and suffix around the *
}

func newOriginMatcher(origins []string) originMatcher {
	m := originMatcher{exact: map[string]bool{}}
	for _, o := range origins {
		o = strings.ToLower(strings.TrimSuffix(o, "/"))
		switch {
		case o == "*":
			m.any = true
		case o == corsLocalhost:
			m.localhost = true
		case strings.Contains(o, "*"):
			prefix, suffix, _ := strings.Cut(o, "*")
			m.patterns = append(m.patterns, [2]string{prefix, suffix})
		default:
			m.exact[o] = true
		}
	}
	return m
}

func (m originMatcher) allow(origin string) bool {
	o := strings.ToLower(origin)
	if m.any || m.exact[o] {
		return o != ""
	}
	for _, p := range m.patterns {
		if len(o) > len(p[0])+len(p[1]) && strings.HasPrefix(o, p[0]) && strings.HasSuffix(o, p[1]) {
			return true
		}
	}
	if m.localhost {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") {
			return false
		}
		switch u.Hostname() {
		case "localhost", "127.0.0.1", "::1":
			return true
		}
	}
	return false
}

// checkOrigin reports whether o is a valid entry of -cors-origins.
func checkOrigin(o string) error {
	if o == "*" || o == corsLocalhost {
		return nil
	}
	if strings.Count(o, "*") > 1 {
		return fmt.Errorf("%q has more than one *", o)
	}
	u, err := url.Parse(strings.Replace(o, "*", "x", 1))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an origin such as https://app.example.com", o)
	}
	return nil
}
