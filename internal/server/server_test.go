package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/testhttp"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/costgw/gateway/web/playground"
)

// defaults is the configuration with no flag and no environment variable.
func defaults() Config {
	return Config{
		Listen:             ":8080",
		UpstreamTimeout:    15 * time.Second,
		RequestTimeout:     30 * time.Second,
		CORSOrigins:        []string{"localhost"},
		CORSAllowedHeaders: DefaultCORSAllowedHeaders,
		Playground:         true,
		Introspection:      true,
		LogLevel:           slog.LevelInfo,
		LogFormat:          "auto",
		Limits:             limits.Defaults(),
		MaxBodyBytes:       512 << 10,
		RequestFanout:      100,
		UpstreamInFlight:   256,
		RequestsInFlight:   DefaultRequestsInFlight,
		CallerRefusals:     DefaultCallerRefusals,
		GCPercent:          Auto,
		MemoryLimit:        Auto,
		Cache:              true,
		CacheTTL:           upstream.DefaultCacheTTL,
		CacheStaleIfError:  10 * time.Minute,
		CacheMaxBytes:      64 << 20,
		KeyRecheck:         30 * time.Second,
	}
}

// TestParseConfig checks every flag and its environment variable.
func TestParseConfig(t *testing.T) {
	t.Parallel()
	type change func(*Config)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want change
	}{
		{"defaults", nil, nil, func(c *Config) {}},
		{"cors-allowed-headers", []string{"-cors-allowed-headers", "Authorization, X-Custom"}, nil, func(c *Config) { c.CORSAllowedHeaders = []string{"Authorization", "X-Custom"} }},
		{"persisted documents", nil, map[string]string{"COSTGW_PERSISTED_DOCUMENTS": "docs.json", "COSTGW_ONLY_PERSISTED": "true"},
			func(c *Config) { c.PersistedDocuments, c.OnlyPersisted = "docs.json", true }},
		{"listen flag", []string{"-listen", "127.0.0.1:9000"}, nil, func(c *Config) { c.Listen = "127.0.0.1:9000" }},
		{"listen env", nil, map[string]string{"COSTGW_LISTEN": ":9001"}, func(c *Config) { c.Listen = ":9001" }},
		{"upstream flag: no CORS origins by default", []string{"-upstream", "https://api.example.com/cost"}, nil, func(c *Config) {
			c.Upstream, c.CORSOrigins = "https://api.example.com/cost", nil
		}},
		{"upstream env", nil, map[string]string{"COSTGW_UPSTREAM": "https://api.example.com"}, func(c *Config) {
			c.Upstream, c.CORSOrigins = "https://api.example.com", nil
		}},
		{"cursor-secret flag", []string{"-cursor-secret", "s1"}, nil, func(c *Config) { c.CursorSecret = "s1" }},
		{"cursor-secret env", nil, map[string]string{"COSTGW_CURSOR_SECRET": "s2"}, func(c *Config) { c.CursorSecret = "s2" }},
		{"upstream-timeout flag", []string{"-upstream-timeout", "3s"}, nil, func(c *Config) { c.UpstreamTimeout = 3 * time.Second }},
		{"upstream-timeout env", nil, map[string]string{"COSTGW_UPSTREAM_TIMEOUT": "4s"}, func(c *Config) { c.UpstreamTimeout = 4 * time.Second }},
		{"request-timeout flag", []string{"-request-timeout", "5s"}, nil, func(c *Config) { c.RequestTimeout = 5 * time.Second }},
		{"request-timeout env", nil, map[string]string{"COSTGW_REQUEST_TIMEOUT": "1m"}, func(c *Config) { c.RequestTimeout = time.Minute }},
		{"cors-origins flag", []string{"-cors-origins", "https://a.example.com, https://*.b.example.com"}, nil, func(c *Config) {
			c.CORSOrigins = []string{"https://a.example.com", "https://*.b.example.com"}
		}},
		{"cors-origins env", nil, map[string]string{"COSTGW_CORS_ORIGINS": "*"}, func(c *Config) { c.CORSOrigins = []string{"*"} }},
		{"cors-origins empty turns CORS off on the simulator", []string{"-cors-origins", ""}, nil, func(c *Config) { c.CORSOrigins = nil }},
		{"cors-origins with upstream", []string{"-upstream", "http://u:1", "-cors-origins", "localhost"}, nil, func(c *Config) {
			c.Upstream, c.CORSOrigins = "http://u:1", []string{"localhost"}
		}},
		{"playground flag", []string{"-playground=false"}, nil, func(c *Config) { c.Playground = false }},
		{"playground env", nil, map[string]string{"COSTGW_PLAYGROUND": "false"}, func(c *Config) { c.Playground = false }},
		{"introspection flag", []string{"-introspection=false"}, nil, func(c *Config) { c.Introspection = false }},
		{"introspection env", nil, map[string]string{"COSTGW_INTROSPECTION": "0"}, func(c *Config) { c.Introspection = false }},
		{"log-level flag", []string{"-log-level", "debug"}, nil, func(c *Config) { c.LogLevel = slog.LevelDebug }},
		{"log-level env", nil, map[string]string{"COSTGW_LOG_LEVEL": "WARN"}, func(c *Config) { c.LogLevel = slog.LevelWarn }},
		{"log-format flag", []string{"-log-format", "text"}, nil, func(c *Config) { c.LogFormat = "text" }},
		{"log-format env", nil, map[string]string{"COSTGW_LOG_FORMAT": "text"}, func(c *Config) { c.LogFormat = "text" }},
		{"max-tokens flag", []string{"-max-tokens", "100"}, nil, func(c *Config) { c.Limits.MaxTokens = 100 }},
		{"max-tokens env", nil, map[string]string{"COSTGW_MAX_TOKENS": "0"}, func(c *Config) { c.Limits.MaxTokens = 0 }},
		{"max-depth flag", []string{"-max-depth", "7"}, nil, func(c *Config) { c.Limits.MaxDepth = 7 }},
		{"max-depth env", nil, map[string]string{"COSTGW_MAX_DEPTH": "8"}, func(c *Config) { c.Limits.MaxDepth = 8 }},
		{"max-aliases flag", []string{"-max-aliases", "3"}, nil, func(c *Config) { c.Limits.MaxAliases = 3 }},
		{"max-aliases env", nil, map[string]string{"COSTGW_MAX_ALIASES": "4"}, func(c *Config) { c.Limits.MaxAliases = 4 }},
		{"max-root-fields flag", []string{"-max-root-fields", "2"}, nil, func(c *Config) { c.Limits.MaxRootFields = 2 }},
		{"max-root-fields env", nil, map[string]string{"COSTGW_MAX_ROOT_FIELDS": "5"}, func(c *Config) { c.Limits.MaxRootFields = 5 }},
		{"max-cost flag", []string{"-max-cost", "50"}, nil, func(c *Config) { c.Limits.MaxCost = 50 }},
		{"max-cost env", nil, map[string]string{"COSTGW_MAX_COST": "60"}, func(c *Config) { c.Limits.MaxCost = 60 }},
		{"max-body-bytes flag", []string{"-max-body-bytes", "1000"}, nil, func(c *Config) { c.MaxBodyBytes = 1000 }},
		{"max-body-bytes env", nil, map[string]string{"COSTGW_MAX_BODY_BYTES": "2000"}, func(c *Config) { c.MaxBodyBytes = 2000 }},
		{"request-fanout flag", []string{"-request-fanout", "8"}, nil, func(c *Config) { c.RequestFanout = 8 }},
		{"request-fanout env", nil, map[string]string{"COSTGW_REQUEST_FANOUT": "9"}, func(c *Config) { c.RequestFanout = 9 }},
		{"upstream-in-flight flag", []string{"-upstream-in-flight", "0"}, nil, func(c *Config) { c.UpstreamInFlight = 0 }},
		{"upstream-in-flight env", nil, map[string]string{"COSTGW_UPSTREAM_IN_FLIGHT": "32"}, func(c *Config) { c.UpstreamInFlight = 32 }},
		{"requests-in-flight flag", []string{"-requests-in-flight", "0"}, nil, func(c *Config) { c.RequestsInFlight = 0 }},
		{"requests-in-flight env", nil, map[string]string{"COSTGW_REQUESTS_IN_FLIGHT": "16"}, func(c *Config) { c.RequestsInFlight = 16 }},
		{"caller-refusals flag", []string{"-caller-refusals", "0"}, nil, func(c *Config) { c.CallerRefusals = 0 }},
		{"caller-refusals env", nil, map[string]string{"COSTGW_CALLER_REFUSALS": "3"}, func(c *Config) { c.CallerRefusals = 3 }},
		{"gc-percent flag", []string{"-gc-percent", "400"}, nil, func(c *Config) { c.GCPercent = 400 }},
		{"gc-percent env", nil, map[string]string{"COSTGW_GC_PERCENT": "150"}, func(c *Config) { c.GCPercent = 150 }},
		{"gc-percent off with a memory limit", []string{"-gc-percent", "-1", "-memory-limit", "1GiB"}, nil, func(c *Config) {
			c.GCPercent, c.MemoryLimit = -1, 1<<30
		}},
		{"memory-limit flag", []string{"-memory-limit", "80MiB"}, nil, func(c *Config) { c.MemoryLimit = 80 << 20 }},
		{"memory-limit env", nil, map[string]string{"COSTGW_MEMORY_LIMIT": "1000000"}, func(c *Config) { c.MemoryLimit = 1_000_000 }},
		{"memory-limit off", []string{"-memory-limit", "0"}, nil, func(c *Config) { c.MemoryLimit = 0 }},
		{"gc-percent off under the automatic memory limit", []string{"-gc-percent", "-1"}, nil, func(c *Config) { c.GCPercent = -1 }},
		{"automatic settings named", []string{"-gc-percent", "100", "-gc-percent", "auto"},
			map[string]string{"COSTGW_MEMORY_LIMIT": "auto"}, func(c *Config) {}},
		{"version", []string{"-version"}, nil, func(c *Config) { c.Version = true }},
		{"healthcheck", []string{"-healthcheck"}, nil, func(c *Config) { c.HealthCheck = true }},
		{"a flag wins over its variable", []string{"-listen", ":1", "-playground=true"},
			map[string]string{"COSTGW_LISTEN": ":2", "COSTGW_PLAYGROUND": "false"}, func(c *Config) { c.Listen = ":1" }},
		{"actions have no variable", nil, map[string]string{"COSTGW_VERSION": "true", "COSTGW_HEALTHCHECK": "true"}, func(c *Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseConfig(tt.args, envMap(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseConfig(%q, %v) (-want +got):\n%s", tt.args, tt.env, diff)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // in the error
	}{
		{"bad duration in env", nil, map[string]string{"COSTGW_REQUEST_TIMEOUT": "soon"}, "COSTGW_REQUEST_TIMEOUT"},
		{"bad bool in env", nil, map[string]string{"COSTGW_PLAYGROUND": "maybe"}, "COSTGW_PLAYGROUND"},
		{"bad level in env", nil, map[string]string{"COSTGW_LOG_LEVEL": "loud"}, "COSTGW_LOG_LEVEL"},
		{"bad log format", []string{"-log-format", "xml"}, nil, "-log-format"},
		{"zero request timeout", []string{"-request-timeout", "0s"}, nil, "-request-timeout"},
		{"negative upstream timeout", []string{"-upstream-timeout", "-1s"}, nil, "-upstream-timeout"},
		{"relative upstream", []string{"-upstream", "api.example.com"}, nil, "-upstream"},
		{"origin with a path", []string{"-cors-origins", "https://a.example.com/app"}, nil, "-cors-origins"},
		{"origin with two stars", []string{"-cors-origins", "https://*.*.example.com"}, nil, "-cors-origins"},
		{"bad memory limit", []string{"-memory-limit", "lots"}, nil, "-memory-limit"},
		{"negative memory limit", nil, map[string]string{"COSTGW_MEMORY_LIMIT": "-5MiB"}, "COSTGW_MEMORY_LIMIT"},
		{"gc off without a memory limit", []string{"-gc-percent", "-1", "-memory-limit", "0"}, nil, "-gc-percent"},
		{"gc off with no automatic memory limit", []string{"-gc-percent", "-1", "-requests-in-flight", "0"}, nil, "-gc-percent"},
		{"gc percent below -1", []string{"-gc-percent", "-2"}, nil, "-gc-percent"},
		{"gc percent far below -1", []string{"-gc-percent", "-3"}, nil, "-gc-percent"},
		{"gc percent not a number", nil, map[string]string{"COSTGW_GC_PERCENT": "high"}, "COSTGW_GC_PERCENT"},
		{"negative requests in flight", []string{"-requests-in-flight", "-1"}, nil, "-requests-in-flight"},
		{"negative rate limit", []string{"-rate-limit", "-1"}, nil, "-rate-limit"},
		{"negative rate limit in env", nil, map[string]string{"COSTGW_RATE_LIMIT": "-1"}, "-rate-limit"},
		{"a header name with a space", nil, map[string]string{"COSTGW_CORS_ALLOWED_HEADERS": "Authorization,bad header"}, "-cors-allowed-headers"},
		{"a header name with parentheses", []string{"-cors-allowed-headers", "(x)"}, nil, "-cors-allowed-headers"},
		{"unknown flag", []string{"-nope"}, nil, "-nope"},
		{"stray argument", []string{"serve"}, nil, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig(tt.args, envMap(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseConfig(%q, %v) = %v, want an error naming %s", tt.args, tt.env, err, tt.want)
			}
		})
	}
}

// TestGCSettings checks what the automatic settings of the collector come
// to: a memory limit that follows the container's, or without one grows
// with the requests let in at once and the cache, and the higher target
// only where a limit bounds the heap.
func TestGCSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		percent   int
		limit     int64
		inFlight  int
		cache     bool
		container int64
		wantPct   int
		wantLimit int64
	}{
		{"defaults, no container", Auto, Auto, DefaultRequestsInFlight, true, 0, 400, 136 << 20},
		{"without the cache", Auto, Auto, DefaultRequestsInFlight, false, 0, 400, 72 << 20},
		{"in a container", Auto, Auto, DefaultRequestsInFlight, true, 1 << 30, 400, 1 << 30 * 9 / 10},
		{"in a container, requests not bounded", Auto, Auto, 0, true, 512 << 20, 400, 512 << 20 * 9 / 10},
		{"more requests in flight", Auto, Auto, 64, false, 0, 400, 136 << 20},
		{"requests not bounded", Auto, Auto, 0, true, 0, 100, 0},
		{"requests past any limit", Auto, Auto, math.MaxInt, false, 0, 100, 0},
		{"most requests an automatic limit follows", Auto, Auto, maxAutoLimitRequests, false, 0, 400, 8<<20 + 2<<40},
		{"no limit", Auto, 0, DefaultRequestsInFlight, true, 1 << 30, 100, 0},
		{"a limit given", Auto, 1 << 30, DefaultRequestsInFlight, true, 256 << 20, 400, 1 << 30},
		{"a target given", 150, Auto, DefaultRequestsInFlight, false, 0, 150, 72 << 20},
		{"both given", -1, 50 << 20, 8, true, 0, -1, 50 << 20},
	}
	for _, tt := range tests {
		c := Config{GCPercent: tt.percent, MemoryLimit: tt.limit, RequestsInFlight: tt.inFlight, Cache: tt.cache,
			CacheMaxBytes: DefaultCacheMaxBytes}
		if pct, limit := c.gcSettings(tt.container); pct != tt.wantPct || limit != tt.wantLimit {
			t.Errorf("%s: gcSettings = %d, %d; want %d, %d", tt.name, pct, limit, tt.wantPct, tt.wantLimit)
		}
	}
}

// TestSetGC checks that setGC applies the automatic settings, leaves a
// variable of the runtime's in force and chooses the target by it, and says
// what applies and where it comes from.
func TestSetGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	auto := Config{GCPercent: Auto, MemoryLimit: Auto, RequestsInFlight: 32}
	tests := []struct {
		name      string
		cfg       Config
		env       map[string]string
		runtime   int64 // the limit the runtime read from GOMEMLIMIT, when set
		wantPct   int
		wantLimit int64
		wantLog   []string
	}{
		{"automatic", auto, nil, 0, 400, 72 << 20,
			[]string{`"gc_percent":"400"`, `"gc_percent_from":"auto"`, `"memory_limit":"72MiB"`, `"memory_limit_from":"auto"`}},
		{"no limit", Config{GCPercent: Auto, MemoryLimit: 0, RequestsInFlight: 32}, nil, 0, 100, 0,
			[]string{`"gc_percent":"100"`, `"memory_limit":"0"`, `"memory_limit_from":"flag"`}},
		{"GOMEMLIMIT", auto, map[string]string{"GOMEMLIMIT": "300MiB"}, 300 << 20, 400, 300 << 20,
			[]string{`"gc_percent":"400"`, `"memory_limit":"300MiB"`, `"memory_limit_from":"GOMEMLIMIT"`}},
		{"GOMEMLIMIT off", auto, map[string]string{"GOMEMLIMIT": "off"}, math.MaxInt64, 100, 0,
			[]string{`"gc_percent":"100"`, `"memory_limit":"0"`, `"memory_limit_from":"GOMEMLIMIT"`}},
		{"GOMEMLIMIT off, collector off", Config{GCPercent: -1, MemoryLimit: Auto, RequestsInFlight: 32},
			map[string]string{"GOMEMLIMIT": "off"}, math.MaxInt64, 100, 0,
			[]string{`"level":"WARN"`, `"gc_percent":"100"`}},
		{"collector off under a limit", Config{GCPercent: -1, MemoryLimit: 100 << 20, RequestsInFlight: 32}, nil, 0, -1, 100 << 20,
			[]string{`"gc_percent":"-1"`, `"gc_percent_from":"flag"`, `"memory_limit":"100MiB"`, `"memory_limit_from":"flag"`}},
		{"GOMEMLIMIT empty is unset", auto, map[string]string{"GOMEMLIMIT": ""}, math.MaxInt64, 400, 72 << 20,
			[]string{`"memory_limit":"72MiB"`, `"memory_limit_from":"auto"`}},
	}
	for _, tt := range tests {
		if tt.runtime != 0 {
			debug.SetMemoryLimit(tt.runtime)
		}
		logs.Reset()
		setGC(tt.cfg, envMap(tt.env))(log)
		if pct, limit := appliedGC(); pct != tt.wantPct || limit != tt.wantLimit {
			t.Errorf("%s: GOGC %d, limit %d; want %d, %d", tt.name, pct, limit, tt.wantPct, tt.wantLimit)
		}
		for _, want := range tt.wantLog {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("%s: log %s lacks %s", tt.name, logs.String(), want)
			}
		}
	}
}

// TestHelpAndREADMEListEveryFlag checks that -h documents every flag with
// its environment variable, and that the README's configuration table has
// one row per flag with the same variable and default.
func TestHelpAndREADMEListEveryFlag(t *testing.T) {
	t.Parallel()
	var help bytes.Buffer
	_, err := ParseConfig([]string{"-h"}, envMap(nil), &help)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if strings.Contains(help.String(), "panic") || !strings.Contains(help.String(), "(default 32)") {
		t.Errorf("-h does not list the defaults (-requests-in-flight's 32) as it should:\n%s", help.String())
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	fs := newFlagSet(&c, &originList{}, io.Discard)
	rows := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		rows[f.Name] = true
		if !strings.Contains(help.String(), "  -"+f.Name) {
			t.Errorf("-h does not list -%s", f.Name)
		}
		env := "`" + fs.EnvName(f.Name) + "`"
		if fs.IsAction(f.Name) {
			env = "—"
			if strings.Contains(help.String(), fs.EnvName(f.Name)) {
				t.Errorf("-h names a variable for the action -%s", f.Name)
			}
		} else if !strings.Contains(help.String(), "(env "+fs.EnvName(f.Name)+")") {
			t.Errorf("-h does not name the variable of -%s", f.Name)
		}
		row := regexp.MustCompile("(?m)^\\| `-" + regexp.QuoteMeta(f.Name) + "` \\| (.*?) \\| (.*?) \\|")
		m := row.FindSubmatch(readme)
		if m == nil {
			t.Errorf("the README's configuration table has no row for -%s", f.Name)
			return
		}
		if string(m[1]) != env {
			t.Errorf("README: -%s has variable %s, want %s", f.Name, m[1], env)
		}
		if def := f.DefValue; def != "" && def != "false" && !strings.Contains(strings.ToLower(string(m[2])), strings.ToLower(def)) {
			t.Errorf("README: -%s has default %s, want %s", f.Name, m[2], def)
		}
	})
	for _, m := range regexp.MustCompile("(?m)^\\| `-([a-z-]+)` \\|").FindAllSubmatch(readme, -1) {
		if !rows[string(m[1])] {
			t.Errorf("the README documents -%s, which does not exist", m[1])
		}
	}
}

// TestPlaygroundSwitch checks -playground and the playground's preset
// headers in both modes.
func TestPlaygroundSwitch(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{})
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantOn     bool
		wantPreset bool
	}{
		{"on by default, on the simulator", nil, nil, true, true},
		{"off by flag", []string{"-playground=false"}, nil, false, false},
		{"off by env", nil, map[string]string{"COSTGW_PLAYGROUND": "false"}, false, false},
		{"against an upstream: no preset key", []string{"-upstream", up.URL}, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, tt.env, tt.args...)
			status, _, body := testhttp.Get(t, gw.url+"/")
			if !tt.wantOn {
				if status != http.StatusNotFound {
					t.Errorf("GET / = %d, want 404", status)
				}
				return
			}
			if !playground.Built() {
				if status != http.StatusServiceUnavailable || !strings.Contains(body, "npm run build") {
					t.Errorf("GET / without a build = %d %q, want 503 with how to build", status, body)
				}
				return
			}
			if status != http.StatusOK {
				t.Fatalf("GET / = %d", status)
			}
			if got := strings.Contains(body, `"Authorization":"Bearer demo-key"`); got != tt.wantPreset {
				t.Errorf("preset demo key = %v, want %v:\n%s", got, tt.wantPreset, body)
			}
			if !strings.Contains(body, `budgets(first: 5)`) {
				t.Errorf("the page has no starter query:\n%s", body)
			}
		})
	}
}

// TestStarterQueryRuns runs the playground's starter query against the
// schema, so a schema change that breaks it fails here.
func TestStarterQueryRuns(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, starterQuery(true))
	if err != nil || status != http.StatusOK || len(ans.Errors) > 0 {
		t.Fatalf("starter query: %d %v %+v", status, err, ans.Errors)
	}
	var data struct {
		Budgets struct {
			Nodes []struct {
				Name      string
				Plannings []json.RawMessage
				Actuals   struct{ Total float64 }
			}
		}
	}
	if err := json.Unmarshal(ans.Data, &data); err != nil {
		t.Fatal(err)
	}
	if n := len(data.Budgets.Nodes); n != 5 {
		t.Fatalf("starter query: %d budgets, want 5", n)
	}
	for _, b := range data.Budgets.Nodes {
		if b.Name == "" || len(b.Plannings) == 0 || b.Actuals.Total <= 0 {
			t.Errorf("budget without name, plannings or actuals: %+v", b)
		}
	}
	if starterQuery(false) == starterQuery(true) || !strings.Contains(starterQuery(false), "your key") {
		t.Errorf("the starter query against an upstream does not ask for a key")
	}
}

// TestIntrospectionSwitch checks -introspection.
func TestIntrospectionSwitch(t *testing.T) {
	t.Parallel()
	const q = `{ __schema { queryType { name } } }`
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		on   bool
	}{
		{"on by default", nil, nil, true},
		{"off by flag", []string{"-introspection=false"}, nil, false},
		{"off by env", nil, map[string]string{"COSTGW_INTROSPECTION": "false"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, tt.env, tt.args...)
			status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, "", q)
			if err != nil {
				t.Fatal(err)
			}
			if tt.on {
				if status != http.StatusOK || len(ans.Errors) > 0 || !strings.Contains(string(ans.Data), `"Query"`) {
					t.Errorf("introspection on: %d %s %+v", status, ans.Data, ans.Errors)
				}
				return
			}
			if len(ans.Errors) == 0 || strings.Contains(string(ans.Data), `"Query"`) {
				t.Errorf("introspection off: %d %s, want an error", status, ans.Data)
			}
			// Ordinary queries still work.
			status, ans, err = postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, `{ budgets(first: 1) { nodes { name } } }`)
			if err != nil || status != http.StatusOK || len(ans.Errors) > 0 {
				t.Errorf("a query with introspection off: %d %v %+v", status, err, ans.Errors)
			}
		})
	}
}

// TestCORS checks allowed and denied origins, for simple and preflight
// requests, in both modes.
func TestCORS(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{})
	type check struct {
		origin string
		allow  bool
	}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		checks []check
	}{
		{"simulator: localhost origins", nil, nil, []check{
			{"http://localhost:5173", true},
			{"http://127.0.0.1:3000", true},
			{"http://[::1]:8081", true},
			{"https://localhost", true},
			{"https://app.example.com", false},
			{"http://localhost.example.com", false},
			{"null", false},
		}},
		{"upstream: none by default", []string{"-upstream", up.URL}, nil, []check{
			{"http://localhost:5173", false},
			{"https://app.example.com", false},
		}},
		{"upstream: a list from the environment", []string{"-upstream", up.URL},
			map[string]string{"COSTGW_CORS_ORIGINS": "https://app.example.com,https://*.preview.example.com"}, []check{
				{"https://app.example.com", true},
				{"https://pr-12.preview.example.com", true},
				{"https://preview.example.com", false},
				{"http://app.example.com", false},
				{"https://evil.example.org", false},
				{"http://localhost:5173", false},
			}},
		{"simulator: switched off", []string{"-cors-origins="}, nil, []check{
			{"http://localhost:5173", false},
		}},
		{"any origin", []string{"-cors-origins", "*"}, nil, []check{
			{"https://anything.example.net", true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, tt.env, tt.args...)
			for _, c := range tt.checks {
				// Preflight.
				req, _ := http.NewRequest(http.MethodOptions, gw.url+"/graphql", nil)
				req.Header.Set("Origin", c.origin)
				req.Header.Set("Access-Control-Request-Method", "POST")
				// Sorted and lower-cased, as browsers send it (the Fetch standard).
				req.Header.Set("Access-Control-Request-Headers", "apollographql-client-name,authorization,content-type,traceparent")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got := resp.Header.Get("Access-Control-Allow-Origin")
				if allowed := got == c.origin; allowed != c.allow {
					t.Errorf("preflight from %s: Access-Control-Allow-Origin %q, want allowed=%v", c.origin, got, c.allow)
				}
				if allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")); c.allow &&
					(!strings.Contains(allowed, "authorization") || !strings.Contains(allowed, "traceparent")) {
					t.Errorf("preflight from %s does not allow the Authorization and traceparent headers: %v", c.origin, resp.Header)
				}
				if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
					t.Errorf("preflight from %s allows credentials", c.origin)
				}
				// The request itself.
				_, h, _ := testhttp.Get(t, gw.url+"/healthz", "Origin", c.origin)
				got = h.Get("Access-Control-Allow-Origin")
				if allowed := got == c.origin; allowed != c.allow {
					t.Errorf("GET from %s: Access-Control-Allow-Origin %q, want allowed=%v", c.origin, got, c.allow)
				}
				if c.allow && h.Get("Access-Control-Expose-Headers") != "X-Request-Id" {
					t.Errorf("GET from %s: X-Request-Id not exposed: %v", c.origin, h)
				}
			}
		})
	}
}

// A request of two Origin headers gets no CORS answer: rs/cors allowed the
// first and echoed both in Access-Control-Allow-Origin, the second any
// origin at all.
func TestCORSTwoOrigins(t *testing.T) {
	t.Parallel()
	h := withCORS([]string{"localhost"}, []string{"Authorization"}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, method := range []string{http.MethodOptions, http.MethodPost} {
		req := httptest.NewRequest(method, "/graphql", nil)
		req.Header.Add("Origin", "http://localhost:3000")
		req.Header.Add("Origin", "https://evil.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Values("Access-Control-Allow-Origin"); len(got) > 0 {
			t.Errorf("%s with two origins: Access-Control-Allow-Origin %q", method, got)
		}
	}
}

func TestOriginMatcher(t *testing.T) {
	t.Parallel()
	m := newOriginMatcher([]string{"localhost", "https://App.example.com/", "https://*.x.example.com"})
	for origin, want := range map[string]bool{
		"http://localhost":              true,
		"http://LOCALHOST:1":            true,
		"https://app.example.com":       true,
		"https://a.x.example.com":       true,
		"https://.x.example.com":        false,
		"https://x.example.com":         false,
		"https://a.x.example.com.evil":  false,
		"http://user@localhost:1":       false,
		"ftp://localhost":               false,
		"http://localhost:1/path":       false,
		"http://127.0.0.2:1":            false,
		"":                              false,
		"https://app.example.com:8443":  false,
		"https://a.x.example.com:8443":  false,
		"http://localhost%2f@evil.com":  false,
		"https://evil.com#.x.example.c": false,
	} {
		if got := m.allow(origin); got != want {
			t.Errorf("allow(%q) = %v, want %v", origin, got, want)
		}
	}
	if newOriginMatcher(nil).allow("http://localhost:1") {
		t.Error("an empty list allows localhost")
	}
	if !newOriginMatcher([]string{"*"}).allow("https://a.example.com") {
		t.Error("* does not allow an origin")
	}
}

// TestRequestTimeout checks that -request-timeout cuts a slow upstream
// with an error instead of a hang, and that -upstream-timeout bounds one
// upstream call.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{Latency: sim.Latency{Fixed: 5 * time.Second}})
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"request-timeout flag", []string{"-request-timeout", "300ms"}, nil},
		{"request-timeout env", nil, map[string]string{"COSTGW_REQUEST_TIMEOUT": "300ms"}},
		{"upstream-timeout", []string{"-upstream-timeout", "150ms"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, tt.env, append([]string{"-upstream", up.URL}, tt.args...)...)
			start := time.Now()
			status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, `{ budgets(first: 1) { nodes { name } } }`)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if took > 3*time.Second {
				t.Errorf("the answer took %v against an upstream that takes 5s", took)
			}
			if status != http.StatusOK || len(ans.Errors) == 0 || ans.Errors[0].Extensions["code"] != "UPSTREAM_UNAVAILABLE" {
				t.Errorf("status %d, errors %+v, want UPSTREAM_UNAVAILABLE", status, ans.Errors)
			}
		})
	}
}

// TestLogs checks the formats and levels, the access line, and that no
// line ever holds a key, whatever the request carries.
func TestLogs(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-7f3a9c2e1b-do-not-log"
	// send makes requests that carry the secret everywhere a client might
	// put it, and one with the demo key.
	send := func(t *testing.T, gw *gateway) {
		t.Helper()
		postGraphQL(t, http.DefaultClient, gw.url, secret, `query Leak { budgets(first: 1) { nodes { name } } }`)
		postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, `query Named { budgets(first: 2) { nodes { name metrics { variance } } } }`)
		testhttp.Get(t, gw.url+"/graphql?query=%7B__typename%7D&key="+secret, "Authorization", "Bearer "+secret, "X-Api-Key", secret, "Cookie", "k="+secret)
		testhttp.Get(t, gw.url+"/healthz", "Authorization", "Bearer "+secret)
		testhttp.Get(t, gw.url+"/readyz")
	}
	// The start-up line names the public demo key, as the README's run
	// command promises; no other line holds it, and none holds a caller's key.
	noSecret := func(t *testing.T, logs string) {
		t.Helper()
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
		banner := 0
		for _, line := range strings.Split(logs, "\n") {
			if !strings.Contains(line, sim.DemoKey) {
				continue
			}
			if strings.Contains(line, "built-in simulator") && banner == 0 {
				banner++
				continue
			}
			t.Errorf("a log line other than the start-up line holds the demo key: %s", line)
		}
		if banner != 1 && strings.Contains(logs, "built-in simulator") {
			t.Errorf("the start-up line does not name the demo key:\n%s", logs)
		}
	}

	t.Run("json, info", func(t *testing.T) {
		t.Parallel()
		gw := startGateway(t, nil)
		send(t, gw)
		noSecret(t, gw.logs.String())
		var access []map[string]any
		for _, l := range gw.logs.JSONLines(t) {
			if l["msg"] == "request" {
				access = append(access, l)
			}
		}
		// Probes are at debug level, so three lines.
		if len(access) != 3 {
			t.Fatalf("%d access lines, want 3:\n%s", len(access), gw.logs)
		}
		named := access[1]
		for k, want := range map[string]any{
			"method": "POST", "path": "/graphql", "status": 200.0, "operation": "Named", "upstream_calls": 3.0,
		} {
			if named[k] != want {
				t.Errorf("access line %s = %v, want %v: %v", k, named[k], want, named)
			}
		}
		if d, ok := named["duration_ms"].(float64); !ok || d <= 0 {
			t.Errorf("access line duration_ms = %v", named["duration_ms"])
		}
		if id, _ := named["request_id"].(string); len(id) < 8 {
			t.Errorf("access line request_id = %v", named["request_id"])
		}
		if access[0]["operation"] != "Leak" || access[0]["upstream_calls"] != 1.0 {
			t.Errorf("access line of the unauthenticated query: %v", access[0])
		}
	})
	t.Run("text, debug", func(t *testing.T) {
		t.Parallel()
		gw := startGateway(t, nil, "-log-format", "text", "-log-level", "debug")
		send(t, gw)
		logs := gw.logs.String()
		noSecret(t, logs)
		if strings.HasPrefix(strings.TrimSpace(logs), "{") {
			t.Fatalf("text logs look like JSON:\n%s", logs)
		}
		for _, want := range []string{
			`level=INFO msg=request`,
			`operation=Named upstream_calls=3`,
			`level=DEBUG msg=request`,
			`path=/healthz status=200`,
			`path=/readyz status=200`,
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("text logs lack %q:\n%s", want, logs)
			}
		}
	})
	t.Run("json, warn, from the environment", func(t *testing.T) {
		t.Parallel()
		// Without the playground: an unbuilt one (a fresh clone before
		// `make`) rightly warns, and that is not what this checks.
		gw := startGateway(t, map[string]string{"COSTGW_LOG_LEVEL": "warn", "COSTGW_LOG_FORMAT": "json", "COSTGW_PLAYGROUND": "false"})
		send(t, gw)
		logs := gw.logs.String()
		noSecret(t, logs)
		if logs != "" {
			t.Errorf("at warn level, a healthy run logs nothing, got:\n%s", logs)
		}
	})
}

// TestHealth checks /healthz, /readyz with the upstream up, down and
// failing, and /version.
func TestHealth(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{})
	_, failing := simUpstream(t, sim.Options{Faults: sim.Faults{Error503: 1}})
	down := closedAddr(t)

	for _, tt := range []struct {
		name      string
		args      []string
		wantReady int
	}{
		{"simulator", nil, http.StatusOK},
		{"upstream up", []string{"-upstream", up.URL + "/"}, http.StatusOK},
		{"upstream down", []string{"-upstream", "http://" + down}, http.StatusServiceUnavailable},
		{"upstream failing", []string{"-upstream", failing.URL}, http.StatusServiceUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, nil, tt.args...)
			status, h, body := testhttp.Get(t, gw.url+"/healthz")
			if status != http.StatusOK || !strings.Contains(body, `"ok"`) || h.Get("Content-Type") != "application/json" {
				t.Errorf("/healthz = %d %q", status, body)
			}
			status, _, body = testhttp.Get(t, gw.url+"/readyz")
			if status != tt.wantReady {
				t.Errorf("/readyz = %d %q, want %d", status, body, tt.wantReady)
			}
			if strings.Contains(body, "127.0.0.1") {
				t.Errorf("/readyz names the upstream: %q", body)
			}
		})
	}

	t.Run("version", func(t *testing.T) {
		t.Parallel()
		gw := startGateway(t, nil)
		status, _, body := testhttp.Get(t, gw.url+"/version")
		var v buildInfo
		if err := json.Unmarshal([]byte(body), &v); err != nil || status != http.StatusOK {
			t.Fatalf("/version = %d %q: %v", status, body, err)
		}
		if v.Go != runtime.Version() || v.Version == "" {
			t.Errorf("/version = %+v", v)
		}
	})

	t.Run("-version", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		if err := Run(context.Background(), []string{"-version"}, envMap(nil), &out, io.Discard, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "costgw ") || !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("-version printed %q", out.String())
		}
	})

	t.Run("-healthcheck", func(t *testing.T) {
		t.Parallel()
		gw := startGateway(t, nil)
		_, port, _ := net.SplitHostPort(gw.addr)
		for _, tt := range []struct {
			args []string
			env  map[string]string
			ok   bool
		}{
			{[]string{"-healthcheck", "-listen", gw.addr}, nil, true},
			{[]string{"-healthcheck", "-listen", ":" + port}, nil, true},
			{[]string{"-healthcheck"}, map[string]string{"COSTGW_LISTEN": "0.0.0.0:" + port}, true},
			{[]string{"-healthcheck", "-listen", down}, nil, false},
		} {
			err := Run(context.Background(), tt.args, envMap(tt.env), io.Discard, io.Discard, nil)
			if (err == nil) != tt.ok {
				t.Errorf("Run(%q, %v) = %v, want ok=%v", tt.args, tt.env, err, tt.ok)
			}
		}
	})
}

// closedAddr returns a loopback address that takes connections and hangs up
// at once, as a dead server does. It stays bound for the test's life, so no
// other server of a parallel test can get its port.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestRequestID checks that a plain incoming id is kept and anything else
// replaced.
func TestRequestID(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	_, h, _ := testhttp.Get(t, gw.url+"/healthz", "X-Request-Id", "edge-1234.abc")
	if got := h.Get("X-Request-Id"); got != "edge-1234.abc" {
		t.Errorf("kept id = %q", got)
	}
	for _, bad := range []string{"", "has space", strings.Repeat("a", 129), "quote\"", "new\u2028line"} {
		_, h, _ := testhttp.Get(t, gw.url+"/healthz", "X-Request-Id", bad)
		if got := h.Get("X-Request-Id"); got == bad || len(got) != 36 {
			t.Errorf("for %q the id is %q, want a fresh UUID", bad, got)
		}
	}
}

// TestRoutes checks what unknown paths and methods get.
func TestRoutes(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	for path, want := range map[string]int{
		"/nope":           http.StatusNotFound,
		"/assets/nope.js": http.StatusNotFound,
		"/healthz":        http.StatusOK,
	} {
		if status, _, _ := testhttp.Get(t, gw.url+path); status != want {
			t.Errorf("GET %s = %d, want %d", path, status, want)
		}
	}
	resp, err := http.Post(gw.url+"/healthz", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", resp.StatusCode)
	}
}

// TestLimitFlagsReachTheEndpoint checks that the limit flags configure the
// GraphQL endpoint the server runs.
func TestLimitFlagsReachTheEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		query string
		code  string
	}{
		{"max-cost", []string{"-max-cost", "5"}, `{ budgets(first: 10) { nodes { metrics { variance } } } }`, "COST_ESTIMATED_TOO_EXPENSIVE"},
		{"max-depth", []string{"-max-depth", "2"}, `{ budgets { nodes { name } } }`, "MAX_DEPTH_LIMIT"},
		{"max-aliases", []string{"-max-aliases", "1"}, `{ a: __typename b: __typename }`, "MAX_ALIASES_LIMIT"},
		{"max-root-fields", []string{"-max-root-fields", "1"}, `{ __typename explorer { __typename } }`, "MAX_ROOT_FIELDS_LIMIT"},
		{"max-tokens", []string{"-max-tokens", "3"}, `{ __typename __typename }`, "MAX_TOKENS_LIMIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, nil, tt.args...)
			_, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if len(ans.Errors) != 1 || ans.Errors[0].Extensions["code"] != tt.code {
				t.Fatalf("errors %+v, want %s", ans.Errors, tt.code)
			}
		})
	}
	gw := startGateway(t, nil, "-max-body-bytes", "100")
	_, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, "{ "+strings.Repeat("__typename ", 20)+"}")
	if err != nil || len(ans.Errors) != 1 || ans.Errors[0].Extensions["code"] != "REQUEST_TOO_LARGE" {
		t.Fatalf("body over -max-body-bytes: %+v, %v", ans.Errors, err)
	}
}

// TestCallerInFlight checks admission through the whole middleware chain:
// with -caller-in-flight 1, a caller's second request waits for its first,
// while another key, a request without a key and a key the upstream does
// not know are answered meanwhile; no key reaches the log. The upstream
// holds the caller's calls until the test lets them go, so that what went
// up while one was held is what ran beside it.
func TestCallerInFlight(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-admission-do-not-log"
	s := sim.New(sim.Options{})
	var holding atomic.Bool
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(release) })
	t.Cleanup(letGo)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if holding.Load() && r.Header.Get("Authorization") == "Bearer "+sim.DemoKey {
			arrived <- struct{}{}
			<-release
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	gw := startGateway(t, nil, "-upstream", up.URL, "-caller-in-flight", "1", "-cache", "off")
	const q = `{ budgets(first: 1) { nodes { name } } }`
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		// Once each, so that the upstream has accepted the key.
		if status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, key, q); err != nil || status != 200 || len(ans.Errors) > 0 {
			t.Fatalf("%d %+v %v", status, ans.Errors, err)
		}
	}
	holding.Store(true)
	type answer struct {
		name   string
		status int
		code   any
	}
	answered := make(chan answer, 5)
	var wg sync.WaitGroup
	send := func(name, key, query string) {
		wg.Go(func() {
			status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, key, query)
			if err != nil {
				t.Error(err)
			}
			var code any
			if len(ans.Errors) > 0 {
				code = ans.Errors[0].Extensions["code"]
			}
			answered <- answer{name, status, code}
		})
	}
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s in 10s", what)
		}
	}
	send("first", sim.DemoKey, q)
	wait(arrived, "upstream call of the first request") // it holds the caller's place from now on
	send("second", sim.DemoKey, q)
	send("other key", sim.OtherOrgKey, q)
	send("no key", "", "{ __typename }")
	send("unknown key", secret, q)
	got := map[string]answer{}
	for range 3 {
		select {
		case a := <-answered:
			got[a.name] = a
		case <-time.After(10 * time.Second):
			t.Fatalf("after 10s, of the other callers' requests only %v were answered while the caller's first was in flight", got)
		}
	}
	if _, ok := got["second"]; ok {
		t.Errorf("the caller's second request was answered while its first was in flight")
	}
	// A slow machine can only hide a fault here: the second request may not
	// have come to its turn yet.
	select {
	case <-arrived:
		t.Errorf("the caller's second request went up while its first was in flight")
	default:
	}
	letGo()
	wg.Wait()
	close(answered)
	for a := range answered {
		got[a.name] = a
	}
	for _, name := range []string{"first", "second", "other key", "no key"} {
		if a := got[name]; a.status != 200 || a.code != nil {
			t.Errorf("the %s request: %d %v", name, a.status, a.code)
		}
	}
	if a := got["unknown key"]; a.code != "UNAUTHENTICATED" {
		t.Errorf("the unknown key: %d %v", a.status, a.code)
	}
	logs := gw.logs.String()
	for _, key := range []string{secret, sim.DemoKey, sim.OtherOrgKey} {
		if strings.Contains(logs, key) {
			t.Errorf("the log holds the key %q:\n%s", key, logs)
		}
	}
}

// TestCallerRefusals checks pacing through the whole middleware chain: with
// -caller-refusals 1 (a burst of 2), a caller's third refused request in a
// row is admitted and its fourth waits its turn, a second away, past the
// -request-timeout, and is answered 504; another key is served meanwhile.
// (A machine that stalls for a second between two requests gives back one
// refusal of the allowance, so a 504 may come a request later.)
func TestCallerRefusals(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{})
	gw := startGateway(t, nil, "-upstream", up.URL, "-caller-refusals", "1", "-request-timeout", "300ms")
	const q = `{ budgets(first: 1) { nodes { name } } }`
	if status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, q); err != nil || status != 200 || len(ans.Errors) > 0 {
		t.Fatalf("%d %+v %v", status, ans.Errors, err)
	}
	var got []string
	for range 8 {
		status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, "", q)
		if err != nil || len(ans.Errors) == 0 {
			t.Fatalf("%d %+v %v", status, ans, err)
		}
		got = append(got, fmt.Sprint(status, " ", ans.Errors[0].Extensions["code"]))
		if status == http.StatusGatewayTimeout {
			break
		}
	}
	checkPaced(t, "requests without a key in a row", got, "401 UNAUTHENTICATED", 3)
	if logs := gw.logs.String(); !strings.Contains(logs, "a caller is paced") || !strings.Contains(logs, `"caller":"keyless"`) {
		t.Errorf("the log does not say that the requests without a key are paced:\n%s", logs)
	}
	if status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, q); err != nil || status != 200 || len(ans.Errors) > 0 {
		t.Errorf("another caller, while one is paced: %d %+v %v", status, ans.Errors, err)
	}
}

// TestRateLimit checks the in-memory -rate-limit through the whole chain: a
// key over it is answered 429 with Retry-After while another key is not
// limited, and requests without a key share one allowance. (A limit of 1 a
// second: of several requests sent back to back, all but the first are
// over it unless the machine stalls for a second between two.)
func TestRateLimit(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{})
	gw := startGateway(t, nil, "-upstream", up.URL, "-rate-limit", "1")
	const q = `{ budgets(first: 1) { nodes { name } } }`
	overLimit := func(key, query string) bool {
		t.Helper()
		for range 5 {
			resp, err := http.DefaultClient.Do(graphQLRequest(gw.url, key, map[string]string{"query": query}))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusTooManyRequests:
				if ra := resp.Header.Get("Retry-After"); ra != "1" {
					t.Errorf("429 with Retry-After %q, want 1", ra)
				}
				// As every answer of the endpoint: it lacked the Vary.
				if h := resp.Header; h.Get("Cache-Control") != "no-store" || !slices.Contains(h.Values("Vary"), "Authorization") {
					t.Errorf("429 with Cache-Control %q, Vary %q; want no-store and Authorization", h.Get("Cache-Control"), h.Values("Vary"))
				}
				return true
			case http.StatusOK:
			default:
				t.Fatalf("%s", resp.Status)
			}
		}
		return false
	}
	if !overLimit(sim.DemoKey, q) {
		t.Error("five requests of one key back to back: none over a limit of one a second")
	}
	if status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.OtherOrgKey, q); err != nil || status != 200 || len(ans.Errors) > 0 {
		t.Errorf("another key, while one is over the limit: %d %+v %v", status, ans.Errors, err)
	}
	if !overLimit("", "{ __typename }") {
		t.Error("five requests without a key back to back: none over the allowance they share")
	}
}

// checkPaced checks answers of a caller sent back to back with
// -caller-refusals 1: at least first of them (the allowance of 2 and the
// first paced request) are refused, then one waits past the deadline.
func checkPaced(t *testing.T, what string, got []string, refused string, first int) {
	t.Helper()
	last := len(got) - 1
	if last < first || got[last] != "504 REQUEST_TIMEOUT" {
		t.Errorf("%s: %q, want %d or more %q, then 504 REQUEST_TIMEOUT", what, got, first, refused)
		return
	}
	for _, g := range got[:last] {
		if g != refused {
			t.Errorf("%s: %q, want %q before the 504", what, got, refused)
			return
		}
	}
}

// TestFirstLogLines: on the simulator the first lines say which key to send
// and where the playground is, before anything about the garbage collector
// or the playground's build (which came first, so a person running `make
// run` read of GOGC before the playground's address).
func TestFirstLogLines(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, nil)
	var msgs []string
	for _, l := range gw.logs.JSONLines(t) {
		msgs = append(msgs, fmt.Sprint(l["msg"]))
	}
	if len(msgs) < 3 || !strings.Contains(msgs[0], "built-in simulator") || !strings.Contains(msgs[0], sim.DemoKey) ||
		msgs[1] != "serving" || !slices.Contains(msgs[2:], "garbage collector") {
		t.Errorf("the first log lines are %q; want the simulator's line with the demo key, then serving, and the garbage collector after", msgs)
	}
}

// TestLogFormatAuto: the automatic format is JSON where the log goes to
// anything but a terminal: a pipe, a file, /dev/null (a character device,
// which a first version took for a terminal).
func TestLogFormatAuto(t *testing.T) {
	t.Parallel()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	var buf bytes.Buffer
	for _, w := range []io.Writer{&buf, devNull} {
		if _, ok := newLogger(Config{LogFormat: "auto"}, w).Handler().(*slog.JSONHandler); !ok {
			t.Errorf("-log-format auto to %T is not JSON", w)
		}
	}
	if _, ok := newLogger(Config{LogFormat: "text"}, &buf).Handler().(*slog.TextHandler); !ok {
		t.Error("-log-format text is not text")
	}
}

// TestUpstreamFailuresLoggedOncePerRequest: a request whose upstream calls
// fail and are retried writes one line about it at most, and its access
// line counts the failed attempts; the line names the upstream's host and
// port for the operator. (10 Overview requests at 30 % injected 503s wrote
// 235 warnings, one an attempt, none saying where the upstream was.)
func TestUpstreamFailuresLoggedOncePerRequest(t *testing.T) {
	t.Parallel()
	// 500s: the simulator's 503s ask for a second's pause before a retry.
	_, up := simUpstream(t, sim.Options{Faults: sim.Faults{Error500: 0.3}})
	gw := startGateway(t, nil, "-upstream", up.URL)
	const overview = `query Overview { budgets(first: 5) { nodes { metrics { variance } actuals { total } } } }`
	const requests = 5
	for range requests {
		postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, overview)
	}
	failures, failed := 0, 0.0
	for _, l := range gw.logs.JSONLines(t) {
		switch l["msg"] {
		case "upstream call failed":
			failures++
			if l["server"] != strings.TrimPrefix(up.URL, "http://") {
				t.Errorf("the line names the upstream %v, want %s", l["server"], strings.TrimPrefix(up.URL, "http://"))
			}
		case "request":
			if l["operation"] == "Overview" {
				n, _ := l["upstream_failures"].(float64)
				failed += n
			}
		}
	}
	if failures == 0 || failures > requests || failed <= float64(failures) {
		t.Errorf("%d requests with %v failed attempts wrote %d lines of upstream failures, want 1 to %d, fewer than the attempts",
			requests, failed, failures, requests)
	}
}
