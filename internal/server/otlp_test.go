package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/costgw/gateway/internal/testlog"
	"github.com/costgw/gateway/upstream/sim"
)

// collector is a fake OpenTelemetry collector: it keeps the spans it is sent.
type collector struct {
	mu    sync.Mutex
	paths []string // of the HTTP requests
	spans []exported
}

// exported is a span as a collector got it, with its resource's
// attributes.
type exported struct {
	service, name string
	resource      map[string]string
}

func (c *collector) add(path string, req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, path)
	for _, rs := range req.GetResourceSpans() {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, exported{res["service.name"], s.GetName(), res})
			}
		}
	}
}

func (c *collector) got() ([]string, []exported) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.paths), slices.Clone(c.spans)
}

// ServeHTTP takes OTLP/HTTP exports in protobuf.
func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a POST of application/x-protobuf", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.add(r.URL.Path, &req)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// grpcCollector takes OTLP/gRPC exports into a collector.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	c *collector
}

func (g grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.c.add("grpc", req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// startGRPCCollector serves c over OTLP/gRPC on a loopback port until the
// test ends and returns its address.
func startGRPCCollector(t *testing.T, c *collector) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, grpcCollector{c: c})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// TestOTLPExport runs the gateway with the standard OpenTelemetry variables
// pointing at a fake collector, sends a request, stops the gateway (which
// flushes what it buffered) and reads what the collector got.
func TestOTLPExport(t *testing.T) {
	t.Parallel()
	_, up := simUpstream(t, sim.Options{})
	const query = `query Exported { budgets(first: 1) { nodes { name } } }`
	for _, tt := range []struct {
		name     string
		grpc     bool
		env      func(url string) map[string]string
		wantPath string // "" for no spans at all
		resource map[string]string
	}{
		{"http/protobuf", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "x"}
		}, "/v1/traces", map[string]string{"service.name": "x", "telemetry.sdk.language": "go"}},
		{"resource attributes, service name first", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SERVICE_NAME": "x",
				"OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored, service.instance.id=gateway-1,deployment.environment.name=eu%2Cwest"}
		}, "/v1/traces", map[string]string{"service.name": "x", "service.instance.id": "gateway-1", "deployment.environment.name": "eu,west"}},
		{"service name from the resource attributes", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_RESOURCE_ATTRIBUTES": "service.name=x"}
		}, "/v1/traces", map[string]string{"service.name": "x"}},
		{"http by default, traces endpoint as is", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + "/custom/traces", "OTEL_SERVICE_NAME": "x"}
		}, "/custom/traces", nil},
		{"grpc", true, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "x"}
		}, "grpc", nil},
		{"grpc by the traces protocol", true, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "x"}
		}, "grpc", nil},
		{"sampled at ratio 0", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SERVICE_NAME": "x",
				"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}
		}, "", nil},
		{"sdk disabled", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SDK_DISABLED": "true"}
		}, "", nil},
		{"exporter none", false, func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_TRACES_EXPORTER": "none"}
		}, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &collector{}
			var url string
			if tt.grpc {
				url = "http://" + startGRPCCollector(t, c)
			} else {
				srv := httptest.NewServer(c)
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			gw := startGateway(t, tt.env(url), "-upstream", up.URL)
			status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, query)
			if err != nil || status != http.StatusOK || len(ans.Errors) > 0 {
				t.Fatalf("query: %d %v %+v", status, err, ans.Errors)
			}
			if err := gw.stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			paths, spans := c.got()
			if tt.wantPath == "" {
				if len(spans) > 0 {
					t.Errorf("the collector got %v, want no span", spans)
				}
				return
			}
			for _, p := range paths {
				if p != tt.wantPath {
					t.Errorf("an export went to %s, want %s", p, tt.wantPath)
				}
			}
			var names []string
			for _, s := range spans {
				if s.service != "x" {
					t.Errorf("span %q of service %q, want x", s.name, s.service)
				}
				names = append(names, s.name)
				for k, want := range tt.resource {
					if got := s.resource[k]; got != want {
						t.Errorf("span %q: resource %s = %q, want %q", s.name, k, got, want)
					}
				}
			}
			for _, want := range []string{"POST /graphql", "query Exported", "GET /v1/budgets"} {
				if !slices.Contains(names, want) {
					t.Errorf("the collector got %q, not %q", names, want)
				}
			}
		})
	}
}

// TestTracingConfigErrors checks that a bad OpenTelemetry setting stops the
// gateway at start with an error naming the variable.
func TestTracingConfigErrors(t *testing.T) {
	t.Parallel()
	const endpoint = "http://127.0.0.1:4318"
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unknown sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "sometimes"},
			`OTEL_TRACES_SAMPLER "sometimes"`},
		{"ratio above 1", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
			"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, `OTEL_TRACES_SAMPLER_ARG "2"`},
		{"ratio not a number", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
			"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1%"}, `OTEL_TRACES_SAMPLER_ARG "1%"`},
		{"unknown protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			`OTEL_EXPORTER_OTLP_PROTOCOL "http/json"`},
		{"unknown traces protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
			`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "thrift"`},
		{"endpoint without scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			`OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318"`},
		{"traces endpoint without host", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http:///v1/traces"},
			`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "http:///v1/traces"`},
		{"resource attribute without value", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
			"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id"}, `OTEL_RESOURCE_ATTRIBUTES: "service.instance.id"`},
		{"grpc endpoint of another scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "unix:///run/otel.sock",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, `OTEL_EXPORTER_OTLP_ENDPOINT "unix:///run/otel.sock"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A setting wrongly taken would serve until the context ends.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			var logs testlog.Buffer
			err := Run(ctx, []string{"-listen", "127.0.0.1:0"}, envMap(tt.env), io.Discard, &logs, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want an error with %s", err, tt.want)
			}
			if strings.Contains(logs.String(), `"serving"`) {
				t.Errorf("the gateway served with a bad setting:\n%s", logs.String())
			}
		})
	}
}

// What OpenTelemetry reports in the background (here: exports the
// collector does not take) goes to the gateway's JSON log, at warn level.
// It went to Go's log package as plain text, past -log-format and
// -log-level. Not parallel: the batch processor's delay is read from the
// process's environment.
func TestOTelErrorsGoToTheLog(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	_, up := simUpstream(t, sim.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	gw := startGateway(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": closed}, "-upstream", up.URL)
	if status, _, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, `{ __typename }`); err != nil || status != 200 {
		t.Fatalf("status %d, %v", status, err)
	}
	gw.logs.Wait(t, 10*time.Second, "log line of the failed export", func(log string) bool {
		return strings.Contains(log, "OpenTelemetry reported an error")
	})
	for _, line := range strings.Split(strings.TrimSpace(gw.logs.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("a log line is not JSON: %s", line)
		} else if strings.Contains(line, "OpenTelemetry") && v["level"] != "WARN" {
			t.Errorf("the export's failure is logged at %v: %s", v["level"], line)
		}
	}
}
