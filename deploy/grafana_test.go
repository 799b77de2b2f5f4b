package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/costgw/gateway/internal/telemetry"
	"github.com/costgw/gateway/upstream"
	dto "github.com/prometheus/client_model/go"

	"github.com/costgw/gateway/graph/codes"
)

// metric is a metric the gateway exports: its labels, and for some labels
// the values it can have.
type metric struct {
	labels    []string
	histogram bool // also name_bucket (with le), name_sum, name_count
}

// exportedMetrics are the gateway's own metrics, read from its registry:
// every metric is touched once, so each family and its labels show in a
// Gather.
var exportedMetrics = gatherMetrics()

func gatherMetrics() map[string]metric {
	m := telemetry.NewMetrics(func() int { return 0 })
	m.RequestStarted()("query", "OK", time.Millisecond, false)
	m.UpstreamAttempt(upstream.AttemptResult{Attempt: upstream.Attempt{Route: "/v1/budgets", Number: 2}, Status: 200})
	m.CacheLookup(true)
	m.RateLimited()
	m.Panic("resolver")
	families, err := m.Registry.Gather()
	if err != nil {
		panic(err)
	}
	out := map[string]metric{}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "costgw_") {
			continue
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		out[name] = metric{labels: labels, histogram: f.GetType() == dto.MetricType_HISTOGRAM}
	}
	return out
}

// runtimeMetrics are the Go and process collectors' metrics the dashboard
// may use (prometheus/client_golang's defaults).
var runtimeMetrics = map[string]metric{
	"go_gc_duration_seconds":        {labels: []string{"quantile"}},
	"go_gc_duration_seconds_sum":    {},
	"go_gc_duration_seconds_count":  {},
	"go_gc_gogc_percent":            {},
	"go_gc_gomemlimit_bytes":        {},
	"go_goroutines":                 {},
	"go_threads":                    {},
	"go_info":                       {labels: []string{"version"}},
	"go_memstats_alloc_bytes":       {},
	"go_memstats_heap_alloc_bytes":  {},
	"go_memstats_heap_inuse_bytes":  {},
	"go_memstats_heap_objects":      {},
	"go_memstats_next_gc_bytes":     {},
	"go_memstats_stack_inuse_bytes": {},
	"go_memstats_sys_bytes":         {},
	"go_sched_gomaxprocs_threads":   {},
	"process_cpu_seconds_total":     {},
	"process_open_fds":              {},
	"process_max_fds":               {},
	"process_resident_memory_bytes": {},
	"process_start_time_seconds":    {},
	"process_virtual_memory_bytes":  {},
}

// labelValues checks the values a label of the gateway's metrics can have.
var labelValues = map[string]func(string) bool{
	"operation_type": func(v string) bool { return slices.Contains([]string{"query", "mutation", "unknown"}, v) },
	"code": func(v string) bool {
		return v == "OK" || slices.Contains(codes.All(), codes.Code(v))
	},
	"limit": func(v string) bool {
		return slices.Contains([]string{"tokens", "selections", "depth", "aliases", "root_fields", "cost", "body"}, v)
	},
	"result": func(v string) bool { return v == "hit" || v == "miss" },
	"status": regexp.MustCompile(`^(none|[1-5][0-9.]{2})$`).MatchString,
	"route":  func(v string) bool { return strings.HasPrefix(v, "/") },
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// labelsOf returns the labels of the series name, and whether the gateway
// exports it.
func labelsOf(name string) ([]string, bool) {
	if m, ok := exportedMetrics[name]; ok && !m.histogram {
		return append(slices.Clone(m.labels), targetLabels...), true
	}
	if m, ok := runtimeMetrics[name]; ok {
		return append(slices.Clone(m.labels), targetLabels...), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if m, known := exportedMetrics[base]; ok && known && m.histogram {
			labels := append(slices.Clone(m.labels), targetLabels...)
			if suffix == "_bucket" {
				labels = append(labels, "le")
			}
			return labels, true
		}
	}
	return nil, false
}

// dashboard is what the test reads of grafana/costgw.json.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {query: …} for Prometheus queries
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *struct{ UID any } `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Panels     []panel `json:"panels"` // a collapsed row's
	Targets    []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("grafana/costgw.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/costgw.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("grafana/costgw.json has no uid or title; Grafana's provisioning needs a uid to keep it stable")
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		q, ok := v.Query.(map[string]any)
		if !ok || v.Type != "query" {
			continue
		}
		expr, _ := q["query"].(string)
		m := regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`).FindStringSubmatch(expr)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(series, label)", v.Name, expr)
			continue
		}
		labels := checkQuery(t, "variable "+v.Name, m[1], nil)
		if !slices.Contains(labels, m[2]) {
			t.Errorf("variable %s: %s has no label %s", v.Name, m[1], m[2])
		}
	}
	if !vars["datasource"] {
		t.Error("grafana/costgw.json has no datasource variable; imported elsewhere, its panels would name a data source that does not exist")
	}

	used := map[string]bool{}
	ids := map[int]string{}
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			if other, ok := ids[p.ID]; ok {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
				t.Errorf("panel %q: gridPos %+v is outside the 24 columns", p.Title, p.GridPos)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not use the datasource variable", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				labels := checkQuery(t, fmt.Sprintf("panel %q", p.Title), tg.Expr, used)
				for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(tg.LegendFormat, -1) {
					if !slices.Contains(labels, m[1]) {
						t.Errorf("panel %q: legend %q names label %s, which %s does not have", p.Title, tg.LegendFormat, m[1], tg.Expr)
					}
				}
			}
		}
	}
	walk(d.Panels)
	for _, name := range slices.Sorted(maps.Keys(exportedMetrics)) {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// checkQuery checks the PromQL expression expr of where: every series it
// selects is one the gateway exports, every label it matches or groups by
// is a label of those series, and every label value it matches is one the
// gateway can give. It returns the labels of the series it selects, and
// marks the gateway's metrics it uses in used.
func checkQuery(t *testing.T, where, expr string, used map[string]bool) []string {
	t.Helper()
	toks, err := lexPromQL(expr)
	if err != nil {
		t.Errorf("%s: %v in %s", where, err, expr)
		return nil
	}
	var all []string     // labels of every series selected
	var grouped []string // labels of by (…), on (…) and the like
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		next := func(k int) token {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return token{}
		}
		switch {
		case tok.kind == tokIdent && groupingKeywords[tok.text] && next(1).text == "(":
			i += 2
			for ; i < len(toks) && toks[i].text != ")"; i++ {
				if toks[i].kind == tokIdent {
					grouped = append(grouped, toks[i].text)
				}
			}
		case tok.kind == tokIdent && next(1).text == "(":
			// A function or an aggregation.
		case tok.kind == tokIdent && !keywords[tok.text]:
			labels, ok := labelsOf(tok.text)
			if !ok {
				t.Errorf("%s: %s is no metric the gateway exports", where, tok.text)
			}
			all = append(all, labels...)
			if base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(tok.text, "_bucket"), "_sum"), "_count"); used != nil {
				if _, ok := exportedMetrics[base]; ok {
					used[base] = true
				}
			}
			if next(1).text != "{" {
				continue
			}
			for i += 2; i+2 < len(toks) && toks[i].text != "}"; i += 3 {
				label, op, value := toks[i].text, toks[i+1].text, toks[i+2]
				if !slices.Contains(labels, label) && ok {
					t.Errorf("%s: %s has no label %s", where, tok.text, label)
				}
				if value.kind != tokString {
					t.Errorf("%s: matcher %s%s%s: want a quoted value", where, label, op, value.text)
				}
				checkLabelValue(t, where, label, op, value.text)
				if i+3 < len(toks) && toks[i+3].text == "," {
					i++
				}
			}
		case tok.text == "{":
			t.Errorf("%s: a selector without a metric name in %s", where, expr)
		}
	}
	for _, l := range grouped {
		if !slices.Contains(all, l) {
			t.Errorf("%s: groups by %s, which none of its series has: %s", where, l, expr)
		}
	}
	return all
}

// checkLabelValue checks the value a matcher compares label with: for a
// regular expression, each of its plain alternatives.
func checkLabelValue(t *testing.T, where, label, op, value string) {
	t.Helper()
	valid, ok := labelValues[label]
	if !ok || strings.Contains(value, "$") {
		return // a label with free values, or a dashboard variable
	}
	alternatives := []string{value}
	if op == "=~" || op == "!~" {
		alternatives = strings.Split(value, "|")
	}
	for _, a := range alternatives {
		if label != "status" && strings.ContainsAny(a, `.*+?()[]\^`) {
			continue // a pattern, not a value
		}
		if !valid(a) {
			t.Errorf("%s: %s%s%q: the gateway gives %s no value %q", where, label, op, value, label, a)
		}
	}
}

// Words of PromQL that are not metric names.
var (
	groupingKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	keywords         = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
		// Aggregations, which may be followed by `by (…)` rather than "(".
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true}
)

type tokenKind int

const (
	tokIdent tokenKind = iota + 1
	tokString
	tokNumber
	tokPunct
)

type token struct {
	kind tokenKind
	text string // a string's without its quotes
}

// lexPromQL splits a PromQL expression into identifiers, strings, numbers
// and punctuation, leaving out range and subquery durations ([5m],
// [$__rate_interval]).
func lexPromQL(expr string) ([]token, error) {
	var toks []token
	for i := 0; i < len(expr); {
		c := rune(expr[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ at %d", i)
			}
			i += end + 1
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for ; j < len(expr) && rune(expr[j]) != c; j++ {
				if expr[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unclosed string at %d", i)
			}
			toks = append(toks, token{tokString, expr[i+1 : j]})
			i = j + 1
		case c == '_' || c == ':' || unicode.IsLetter(c):
			j := i
			for j < len(expr) && (expr[j] == '_' || expr[j] == ':' || unicode.IsLetter(rune(expr[j])) || unicode.IsDigit(rune(expr[j]))) {
				j++
			}
			toks = append(toks, token{tokIdent, expr[i:j]})
			i = j
		case unicode.IsDigit(c) || c == '.':
			j := i
			for j < len(expr) && (unicode.IsDigit(rune(expr[j])) || strings.ContainsRune(".eE", rune(expr[j]))) {
				j++
			}
			toks = append(toks, token{tokNumber, expr[i:j]})
			i = j
		case c == '$':
			return nil, fmt.Errorf("a dashboard variable outside a string or range at %d", i)
		default:
			op := string(c)
			if i+1 < len(expr) && strings.Contains("!=~<>", string(c)) && strings.ContainsRune("=~", rune(expr[i+1])) {
				op = expr[i : i+2]
			}
			toks = append(toks, token{tokPunct, op})
			i += len(op)
		}
	}
	return toks, nil
}
