package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/internal/config"
	"github.com/costgw/gateway/upstream"
)

// Config is the gateway's configuration. Every field but the two actions at
// the end has a flag and an environment variable, COSTGW_ and the flag's name
// in capitals with underscores for dashes (-log-level: COSTGW_LOG_LEVEL); the
// flag wins. `costgw -h` lists them, and so does the README.
type Config struct {
	// Listen is the address to serve on.
	Listen string
	// Upstream is the base URL of the Cost Management API, which may carry a
	// path prefix. Empty runs the built-in simulator on a loopback port.
	Upstream string
	// CursorSecret signs connection cursors. Empty means a random secret per
	// process; set it so cursors survive restarts and work across replicas.
	CursorSecret string
	// UpstreamTimeout bounds one attempt of one upstream call.
	UpstreamTimeout time.Duration
	// RequestTimeout bounds one request to the gateway, receiving its body
	// and all its upstream calls and retries included: what has not finished
	// by then fails with an error (UPSTREAM_UNAVAILABLE) instead of hanging,
	// and an answer its client has not taken 2 s after it is cut off.
	RequestTimeout time.Duration
	// CORSOrigins are the browser origins allowed to call the gateway from
	// another origin: exact origins (https://app.example.com), patterns with
	// one * (https://*.example.com), "localhost" for http and https on
	// localhost, 127.0.0.1 and [::1] at any port, or "*" for any origin. Unset,
	// it is "localhost" on the simulator and empty (no cross-origin caller)
	// against a real upstream.
	CORSOrigins []string
	// CORSAllowedHeaders are the request headers a browser may send from
	// another origin: by default what the GraphQL clients and tracing
	// libraries send (DefaultCORSAllowedHeaders).
	CORSAllowedHeaders []string
	// Playground serves the GraphiQL playground at /.
	Playground bool
	// Introspection answers __schema and __type queries. The playground's
	// documentation explorer and autocompletion need it.
	Introspection bool
	// LogLevel is the lowest level logged: debug, info, warn or error. Access
	// lines of /healthz and /readyz are at debug, so probes do not flood the
	// log.
	LogLevel slog.Level
	// LogFormat is json (one object per line), text (key=value), or auto:
	// text when standard error is a terminal, else json.
	LogFormat string
	// Limits bound every GraphQL operation before any upstream call (0 turns
	// a limit off): tokens, depth, aliases, root fields, and the estimated
	// number of upstream calls.
	Limits limits.Config
	// MaxBodyBytes bounds a request body (413 above).
	MaxBodyBytes int64
	// RequestFanout bounds the upstream calls one request has in flight.
	RequestFanout int
	// UpstreamInFlight bounds the upstream calls in flight across all
	// requests (0: no bound).
	UpstreamInFlight int
	// GCPercent is the garbage collector's target, as GOGC (-1: off, with
	// a MemoryLimit; Auto: 400 under a memory limit, 100 without one); GOGC
	// in the environment wins over it.
	GCPercent int
	// MemoryLimit is the Go runtime's soft memory limit in bytes, as
	// GOMEMLIMIT (0: none; Auto: see Config.gcSettings); GOMEMLIMIT in the
	// environment wins over it.
	MemoryLimit int64
	// CallerInFlight bounds the requests of one caller (bearer key) that are
	// worked on at once; more wait in line (0: no bound).
	CallerInFlight int
	// RequestsInFlight bounds the requests worked on at once in all; more
	// wait in line, each caller in turn (0: no bound).
	RequestsInFlight int
	// CallerRefusals paces a caller whose requests are refused through its
	// own fault more than that many times a second (in bursts of twice that):
	// one of its requests a 1/CallerRefusals second is admitted (0: never).
	CallerRefusals int
	// PersistedDocuments is a manifest of trusted documents (document id →
	// text, as Relay and graphql-codegen write it), which requests may name
	// by documentId or doc_id; empty: none.
	PersistedDocuments string
	// OnlyPersisted runs nothing but the trusted documents of
	// PersistedDocuments, and turns automatic persisted queries off.
	OnlyPersisted bool
	// AdminListen is the address of a second listener for operators, off
	// when empty: /metrics, /debug/pprof/, /healthz, /readyz and /version,
	// which are then not served on Listen.
	AdminListen string
	// RedisURL (redis://host:port/db) keeps the persisted-query store and
	// the rate limit in Redis, shared by every replica; empty keeps them in
	// memory.
	RedisURL string
	// RateLimit is the requests a second each API key may make (0: no
	// limit), across every replica with RedisURL.
	RateLimit int

	// Cache keeps the upstream's read answers across requests
	// (docs/caching.md): in process, and in Redis with RedisURL.
	Cache bool
	// CacheTTL is how long each operation's answers stay fresh
	// (upstream.ParseCacheTTL; 0 leaves one uncached).
	CacheTTL map[string]time.Duration
	// CacheStaleIfError is how long past its TTL an entry may answer when
	// the upstream fails (0: never).
	CacheStaleIfError time.Duration
	// CacheMaxBytes bounds the entries held in process.
	CacheMaxBytes int64
	// KeyRecheck is how long the upstream's last acceptance of a key lets
	// the key be served from the cache.
	KeyRecheck time.Duration

	// Version makes the binary print its build information and exit.
	Version bool
	// HealthCheck makes the binary ask the gateway listening on AdminListen
	// (Listen without one) for /healthz and exit 0 if it answers 200, 1
	// otherwise: a container health check for an image with no shell or curl.
	HealthCheck bool
}

// Defaults of the configuration that no other package owns.
const (
	DefaultListen         = ":8080"
	DefaultRequestTimeout = 30 * time.Second
	// DefaultRequestsInFlight and the Auto settings of the collector are
	// what docs/performance.md measured for a request-shaped heap: bounded
	// memory at 200 concurrent clients without less throughput.
	DefaultRequestsInFlight = 32
	// DefaultCallerRefusals paces a caller refused more than 10 times a
	// second: no client that reads its errors comes near it (docs/security.md).
	DefaultCallerRefusals = 10
	// Auto, the default of GCPercent and MemoryLimit, has the gateway choose
	// them (Config.gcSettings).
	Auto = -2
	// autoGCPercent is the collector's target under a memory limit: the heap
	// may grow to five times what is live between collections, so a small
	// heap is collected a fifth as often, and the limit bounds a large one.
	autoGCPercent = 400
	// autoLimitBase and autoLimitPerRequest make the automatic memory
	// limit: the base for what any process holds, and about twice what one
	// request of the benchmarks held live at most (docs/performance.md).
	autoLimitBase       = 8 << 20
	autoLimitPerRequest = 2 << 20
	// containerFraction of the container's memory is the automatic memory
	// limit: the rest is for what the runtime does not count (the binary's
	// pages, C stacks: about 14 MiB) and for a margin before the kernel's
	// out-of-memory killer.
	containerFraction = 0.9
	// maxAutoLimitRequests is where requests in flight stop being a bound
	// that an automatic limit could follow (2 TiB of it).
	maxAutoLimitRequests = 1 << 20
	defaultLogFormat     = "auto"
	// corsLocalhost is the CORSOrigins entry for loopback origins.
	corsLocalhost = "localhost"
	// The cache's defaults (docs/caching.md).
	DefaultCacheStaleIfError = 10 * time.Minute
	DefaultCacheMaxBytes     = 64 << 20
	DefaultKeyRecheck        = 30 * time.Second
)

// DefaultCORSAllowedHeaders are the request headers browsers may send by
// default: the key, the media types, the request id, W3C trace context and
// baggage, Sentry's trace header, Apollo's client identification, and
// Cache-Control (no-cache reads nothing from the answer cache).
var DefaultCORSAllowedHeaders = []string{"Authorization", "Content-Type", "Accept", "X-Request-Id", "traceparent",
	"tracestate", "baggage", "sentry-trace", "apollographql-client-name", "apollographql-client-version", "Cache-Control"}

// envPrefix starts the name of every environment variable of the gateway.
const envPrefix = "COSTGW"

// newFlagSet declares every flag of c with its default.
func newFlagSet(c *Config, cors *originList, output io.Writer) *config.FlagSet {
	fs := config.New("costgw", envPrefix, output)
	fs.StringVar(&c.Listen, "listen", DefaultListen, "address to serve on")
	fs.StringVar(&c.Upstream, "upstream", "", "base `URL` of the Cost Management API; empty runs the built-in simulator")
	fs.StringVar(&c.CursorSecret, "cursor-secret", "", "`secret` that signs connection cursors; empty means random per process")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", upstream.DefaultTimeout, "timeout of one upstream call attempt")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", DefaultRequestTimeout, "deadline of one request: receiving its body, all its upstream calls, and writing its answer (cut off 2s after)")
	fs.Var(cors, "cors-origins", "comma-separated `origins` allowed to call from a browser on another origin: exact, with one *, "+
		"\"localhost\" (any port on localhost, 127.0.0.1, [::1]) or \"*\"; default localhost on the simulator, none against -upstream")
	allowed := &listValue{list: &c.CORSAllowedHeaders, def: DefaultCORSAllowedHeaders}
	*allowed.list = append([]string(nil), allowed.def...)
	fs.Var(allowed, "cors-allowed-headers", "comma-separated request `headers` a browser may send from another origin")
	fs.BoolVar(&c.Playground, "playground", true, "serve the GraphiQL playground at /")
	fs.BoolVar(&c.Introspection, "introspection", true, "answer introspection queries (the playground's docs need them)")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo, "lowest `level` logged: debug, info, warn or error")
	fs.Want("log-level", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", defaultLogFormat, "log `format`: json, text, or auto (text when standard error is a terminal, else json)")
	def := limits.Defaults()
	fs.IntVar(&c.Limits.MaxTokens, "max-tokens", def.MaxTokens, "most lexical tokens of a query document (0: no limit)")
	fs.IntVar(&c.Limits.MaxSelections, "max-selections", def.MaxSelections, "most field selections of a document with its fragments expanded, and most field pairs validation compares (0: no limit)")
	fs.IntVar(&c.Limits.MaxDepth, "max-depth", def.MaxDepth, "deepest field nesting of an operation (0: no limit)")
	fs.IntVar(&c.Limits.MaxAliases, "max-aliases", def.MaxAliases, "most aliased fields of an operation (0: no limit)")
	fs.IntVar(&c.Limits.MaxRootFields, "max-root-fields", def.MaxRootFields, "most root fields of an operation (0: no limit)")
	fs.IntVar(&c.Limits.MaxCost, "max-cost", def.MaxCost, "most upstream calls an operation is estimated to make (0: no limit)")
	fs.IntVar(&c.Limits.MaxAnswerValues, "max-answer-values", def.MaxAnswerValues, "most values (object fields and list items) of an answer, counted as it is resolved (0: no limit)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", graph.DefaultMaxBodyBytes, "largest request body, in bytes")
	fs.IntVar(&c.RequestFanout, "request-fanout", loaders.DefaultMaxConcurrency, "most upstream calls one request has in flight")
	fs.IntVar(&c.UpstreamInFlight, "upstream-in-flight", upstream.DefaultMaxInFlight, "most upstream calls in flight across all requests (0: no bound)")
	c.GCPercent = Auto
	fs.Var(gcPercent{&c.GCPercent}, "gc-percent", "garbage collection target `percentage`, as GOGC (-1: off); auto: 400 under a memory limit, 100 without one; GOGC in the environment wins")
	fs.Want("gc-percent", "auto, -1 or a percentage such as 100")
	c.MemoryLimit = Auto
	fs.Var(memoryLimit{&c.MemoryLimit}, "memory-limit", "soft memory `limit` of the Go runtime, as GOMEMLIMIT: bytes with an optional unit such as 80MiB (0: none); "+
		"auto: 90% of the container's memory limit (cgroup); without one, 8 MiB, 2 MiB for each of -requests-in-flight and -cache-max-bytes, none if -requests-in-flight is 0; GOMEMLIMIT in the environment wins")
	fs.Want("memory-limit", "auto or a size such as 80MiB, 1GiB or 0")
	fs.IntVar(&c.CallerInFlight, "caller-in-flight", 0, "most requests of one caller (API key; all requests without a key are one caller) worked on at once, more wait in line (0: no bound)")
	fs.IntVar(&c.RequestsInFlight, "requests-in-flight", DefaultRequestsInFlight, "most requests worked on at once in all, more wait in line, each caller in turn (0: no bound)")
	fs.IntVar(&c.CallerRefusals, "caller-refusals", DefaultCallerRefusals, "refused requests a second (in bursts of twice that) a caller may have before it is paced to one request in 1/N s; "+
		"refused: answered without data for no or an unknown key, a scope the key lacks, a document or HTTP request the gateway refuses, invalid input (0: never paced)")
	fs.StringVar(&c.PersistedDocuments, "persisted-documents", "", "trusted documents: a JSON `file` of document id to document text (Relay, graphql-codegen) or an Apollo persisted query manifest")
	fs.BoolVar(&c.OnlyPersisted, "only-persisted", false, "run only the documents of -persisted-documents; no automatic persisted queries")
	fs.StringVar(&c.AdminListen, "admin-listen", "", "`address` of a second listener for /metrics, /debug/pprof/ and the health endpoints, which then leave -listen; empty: off")
	fs.StringVar(&c.RedisURL, "redis-url", "", "`URL` (redis://host:port/db) of the Redis that keeps persisted queries and the rate limit for every replica; empty: in memory")
	fs.IntVar(&c.RateLimit, "rate-limit", 0, "requests a second each API key may make (requests without a key share one allowance), across replicas with -redis-url (0: no limit)")
	c.Cache = true
	fs.Var(onOff{&c.Cache}, "cache", "on or off: keep the upstream's read answers across requests, private to each API key, evicted by writes (docs/caching.md)")
	fs.Want("cache", "on or off")
	c.CacheTTL = upstream.DefaultCacheTTL
	fs.Var(ttlList{&c.CacheTTL}, "cache-ttl", "how long answers stay fresh: op=duration,… (an operation, or explorer or budgets for all of theirs) over the defaults, or one duration for all (0: not cached); "+
		"default listBudgets=30s, getBudget, getBudgetActuals, getBudgetPlanning and listScheduledNotifications 1m, the others 5m")
	fs.Want("cache-ttl", "a duration such as 30s, or op=duration pairs such as listBudgets=30s,explorer=5m")
	fs.DurationVar(&c.CacheStaleIfError, "cache-stale-if-error", DefaultCacheStaleIfError, "how long past its TTL a cached answer may still be served when the upstream fails (0: never)")
	c.CacheMaxBytes = DefaultCacheMaxBytes
	fs.Var(byteSize{&c.CacheMaxBytes}, "cache-max-bytes", "`bound` of the in-process cache: bytes with an optional unit such as 64MiB")
	fs.Want("cache-max-bytes", "a size such as 64MiB")
	fs.DurationVar(&c.KeyRecheck, "key-recheck", DefaultKeyRecheck, "how long the upstream's last acceptance of an API key lets it be served from the cache; a revoked key reads nothing cached past it")
	fs.BoolVar(&c.Version, "version", false, "print the build information and exit")
	fs.BoolVar(&c.HealthCheck, "healthcheck", false, "GET /healthz of the gateway at -admin-listen, or -listen without one, on loopback; exit 0 if it answers 200, else 1")
	fs.Action("version", "healthcheck")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: costgw [flags]

costgw serves a GraphQL API at /graphql and the GraphiQL playground at / in
front of the Cost Management REST API. Without -upstream it runs on a built-in
simulator of that API; send "Authorization: Bearer demo-key".
Also served: /healthz (liveness), /readyz (the upstream answers), /version;
on the admin listener instead when -admin-listen is set, with /metrics and
/debug/pprof/.

Every flag but -version and -healthcheck can be set with the environment
variable named after it; a flag wins over its variable.

`)
		fs.PrintDefaults()
	}
	return fs
}

// ParseConfig reads the environment (lookupEnv), then the flags, which win.
// Help goes to output; -h returns flag.ErrHelp.
func ParseConfig(args []string, lookupEnv func(string) (string, bool), output io.Writer) (Config, error) {
	var c Config
	var cors originList
	fs := newFlagSet(&c, &cors, output)
	if err := fs.Parse(args, lookupEnv); err != nil {
		return c, err
	}
	c.CORSOrigins = cors.origins
	if !cors.set && c.Upstream == "" {
		c.CORSOrigins = []string{corsLocalhost}
	}
	return c, fs.Explain(c.validate())
}

func (c Config) validate() error {
	var errs config.Errors
	if c.LogFormat != "json" && c.LogFormat != "text" && c.LogFormat != "auto" {
		errs.Addf("log-format", c.LogFormat, "want json, text or auto")
	}
	if c.UpstreamTimeout <= 0 {
		errs.Addf("upstream-timeout", c.UpstreamTimeout, "want a positive duration such as 15s")
	}
	if c.RequestTimeout <= 0 {
		errs.Addf("request-timeout", c.RequestTimeout, "want a positive duration such as 30s")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max-tokens", c.Limits.MaxTokens}, {"max-selections", c.Limits.MaxSelections}, {"max-depth", c.Limits.MaxDepth}, {"max-aliases", c.Limits.MaxAliases},
		{"max-root-fields", c.Limits.MaxRootFields}, {"max-cost", c.Limits.MaxCost}, {"max-answer-values", c.Limits.MaxAnswerValues}, {"upstream-in-flight", c.UpstreamInFlight},
		{"caller-in-flight", c.CallerInFlight}, {"requests-in-flight", c.RequestsInFlight}, {"caller-refusals", c.CallerRefusals},
		{"rate-limit", c.RateLimit}} {
		if f.v < 0 {
			errs.Addf(f.name, f.v, "want 0 (no limit) or a positive whole number")
		}
	}
	if c.GCPercent < -1 && c.GCPercent != Auto {
		errs.Addf("gc-percent", c.GCPercent, "want auto, -1 (off) or a percentage such as 100")
	}
	if _, limit := c.gcSettings(containerMemory()); c.GCPercent == -1 && limit == 0 {
		errs.Addf("gc-percent", c.GCPercent, "want a -memory-limit too: with neither, the heap would grow without bound")
	}
	if c.MaxBodyBytes <= 0 {
		errs.Addf("max-body-bytes", c.MaxBodyBytes, "want a positive number of bytes")
	}
	if c.RequestFanout <= 0 {
		errs.Addf("request-fanout", c.RequestFanout, "want a positive whole number")
	}
	if c.Upstream != "" {
		if u, err := url.Parse(c.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf("upstream", c.Upstream, "want an absolute http(s) URL such as https://api.example.com")
		}
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			errs.Addf("redis-url", c.RedisURL, "want a URL such as redis://localhost:6379/0")
		}
	}
	if c.CacheStaleIfError < 0 {
		errs.Addf("cache-stale-if-error", c.CacheStaleIfError, "want 0 (never) or a positive duration such as 10m")
	}
	if c.CacheMaxBytes <= 0 {
		errs.Addf("cache-max-bytes", c.CacheMaxBytes, "want a positive size such as 64MiB")
	}
	if c.KeyRecheck <= 0 {
		errs.Addf("key-recheck", c.KeyRecheck, "want a positive duration such as 30s")
	}
	if c.OnlyPersisted && c.PersistedDocuments == "" {
		errs.Addf("only-persisted", true, "want -persisted-documents too: there would be nothing to run")
	}
	for _, o := range c.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			errs.Addf("cors-origins", strings.Join(c.CORSOrigins, ","), "%v", err)
		}
	}
	for _, h := range c.CORSAllowedHeaders {
		if !isToken(h) {
			errs.Addf("cors-allowed-headers", strings.Join(c.CORSAllowedHeaders, ","), "%q is not a header name", h)
		}
	}
	return errs.Err()
}

// isToken reports whether s is an HTTP token (RFC 9110), as a header name is.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// listValue is a comma-separated flag value that replaces its default.
type listValue struct {
	list *[]string
	def  []string
}

func (l *listValue) String() string {
	if l == nil || l.list == nil {
		return ""
	}
	return strings.Join(*l.list, ",")
}

func (l *listValue) Set(s string) error {
	*l.list = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l.list = append(*l.list, v)
		}
	}
	return nil
}

// originList is the value of -cors-origins. It remembers whether it was set,
// since its default depends on -upstream.
type originList struct {
	origins []string
	set     bool
}

func (l *originList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.origins, ",")
}

func (l *originList) Set(s string) error {
	l.set = true
	l.origins = nil
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			l.origins = append(l.origins, o)
		}
	}
	return nil
}

// gcSettings resolves the Auto values of GCPercent and MemoryLimit. The
// automatic memory limit follows the container's: containerFraction of
// container (its cgroup's memory limit), when there is one. Without one it
// is autoLimitBase and autoLimitPerRequest for each request
// RequestsInFlight lets in at once (72 MiB at the default 32), and
// CacheMaxBytes when the cache is on; none when requests are not bounded
// either (0, or more than maxAutoLimitRequests). The automatic target is
// autoGCPercent under a memory limit, the runtime's 100 without one:
// without a limit nothing would bound the heap at five times what is live.
func (c Config) gcSettings(container int64) (percent int, limit int64) {
	percent, limit = c.GCPercent, c.MemoryLimit
	if limit == Auto {
		limit = 0
		if container > 0 {
			limit = int64(float64(container) * containerFraction)
		} else if n := c.RequestsInFlight; n > 0 && n <= maxAutoLimitRequests {
			limit = autoLimitBase + int64(n)*autoLimitPerRequest
			if c.Cache {
				limit += c.CacheMaxBytes
			}
		}
	}
	if percent == Auto {
		percent = 100
		if limit > 0 {
			percent = autoGCPercent
		}
	}
	return percent, limit
}

// gcPercent is the value of -gc-percent: auto or a whole number.
type gcPercent struct{ n *int }

func (g gcPercent) String() string {
	if g.n == nil {
		return ""
	}
	if *g.n == Auto {
		return "auto"
	}
	return strconv.Itoa(*g.n)
}

func (g gcPercent) Set(s string) error {
	if s = strings.TrimSpace(s); s == "auto" {
		*g.n = Auto
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n == Auto {
		return errors.New("not a percentage")
	}
	*g.n = n
	return nil
}

// memoryLimit is the value of -memory-limit: auto, or a number of bytes
// with an optional unit, as GOMEMLIMIT takes it (B, KiB, MiB, GiB, TiB).
type memoryLimit struct{ n *int64 }

var memoryUnits = []struct {
	suffix string
	factor int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

func (m memoryLimit) String() string {
	if m.n == nil {
		return ""
	}
	if *m.n == Auto {
		return "auto"
	}
	return formatSize(*m.n)
}

func (m memoryLimit) Set(s string) error {
	if s = strings.TrimSpace(s); s == "auto" {
		*m.n = Auto
		return nil
	}
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*m.n = n
	return nil
}

// parseSize reads a number of bytes with an optional unit (B, KiB, MiB,
// GiB, TiB).
func parseSize(s string) (int64, error) {
	factor := int64(1)
	for _, u := range memoryUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, factor = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/factor {
		return 0, errors.New("not a size")
	}
	return n * factor, nil
}

// containerMemory is the memory limit of the cgroup the gateway runs in
// (v1 or v2, read by github.com/KimMachineGun/automemlimit), 0 when there
// is none.
func containerMemory() int64 {
	n, err := memlimit.FromCgroup()
	if err != nil || n == 0 || n > math.MaxInt64/2 {
		return 0 // none, or cgroup v1's "no limit", a page short of MaxInt64
	}
	return int64(n)
}

// formatSize writes n bytes in the largest unit that divides it.
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range memoryUnits {
		if n%u.factor == 0 {
			return strconv.FormatInt(n/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// byteSize is the value of a flag of a size in bytes.
type byteSize struct{ n *int64 }

func (b byteSize) String() string {
	if b.n == nil {
		return ""
	}
	return formatSize(*b.n)
}

func (b byteSize) Set(s string) error {
	n, err := parseSize(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*b.n = n
	return nil
}

// onOff is the value of a flag that is on or off.
type onOff struct{ v *bool }

func (o onOff) String() string {
	switch {
	case o.v == nil:
		return ""
	case *o.v:
		return "on"
	}
	return "off"
}

func (o onOff) Set(s string) error {
	switch strings.TrimSpace(s) {
	case "on":
		*o.v = true
	case "off":
		*o.v = false
	default:
		return errors.New("not on or off")
	}
	return nil
}

// ttlList is the value of -cache-ttl (upstream.ParseCacheTTL).
type ttlList struct{ m *map[string]time.Duration }

// String is "" for the defaults, which the flag's usage states.
func (t ttlList) String() string {
	if t.m == nil || *t.m == nil || maps.Equal(*t.m, upstream.DefaultCacheTTL) {
		return ""
	}
	ops := make([]string, 0, len(*t.m))
	for op := range *t.m {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for i, op := range ops {
		ops[i] = op + "=" + (*t.m)[op].String()
	}
	return strings.Join(ops, ",")
}

func (t ttlList) Set(s string) error {
	m, err := upstream.ParseCacheTTL(s)
	if err != nil {
		return err
	}
	*t.m = m
	return nil
}
