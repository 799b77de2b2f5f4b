package deploy

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/costgw/gateway/internal/server"
)

// composeFile is what the tests read of compose.yaml (the Compose
// specification's names).
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Environment map[string]any `yaml:"environment"`
	Ports       []string       `yaml:"ports"`
	Volumes     []string       `yaml:"volumes"`
	DependsOn   any            `yaml:"depends_on"` // a list of names, or a map of name to condition
	Command     []string       `yaml:"command"`
}

// env returns the service's environment as strings, as Compose passes it.
func (s composeService) env() map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = fmt.Sprint(v)
		}
	}
	return env
}

func (s composeService) dependsOn() []string {
	switch d := s.DependsOn.(type) {
	case []any:
		var names []string
		for _, n := range d {
			names = append(names, fmt.Sprint(n))
		}
		return names
	case map[string]any:
		return slices.Sorted(maps.Keys(d))
	}
	return nil
}

// composeStack is compose.yaml with the gateway replicas found: the
// services built from the repository's Dockerfile.
type composeStack struct {
	composeFile
	gateways []string
}

func readCompose(t *testing.T) composeStack {
	t.Helper()
	c := composeStack{composeFile: decodeYAML[composeFile](t, "compose.yaml")}
	for _, name := range slices.Sorted(maps.Keys(c.Services)) {
		if b := c.Services[name].Build; b != nil && b.Context == ".." && b.Dockerfile == "Dockerfile" {
			c.gateways = append(c.gateways, name)
		}
	}
	if len(c.gateways) < 2 {
		t.Fatalf("compose.yaml builds %d gateway services from the Dockerfile (%v), want two replicas", len(c.gateways), c.gateways)
	}
	return c
}

// service returns the host and port of addr (a URL or host:port) and
// whether the host is one of the stack's services.
func (c composeStack) service(addr string) (host, port string, ok bool) {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "", false
	}
	_, ok = c.Services[host]
	return host, port, ok
}

// listenPort is the port of a listen address such as ":9090".
func listenPort(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	return port
}

func TestComposeGateways(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	first := c.Services[c.gateways[0]].env()
	for _, name := range c.gateways {
		env := c.Services[name].env()
		checkGatewayEnv(t, "compose.yaml "+name, env)

		// What replicas must share: the cursor secret (a cursor one signs,
		// the other checks) and Redis (persisted queries, the rate limit).
		// Everything else is the same too, but for the identity in traces.
		for _, v := range []string{"COSTGW_CURSOR_SECRET", "COSTGW_REDIS_URL", "COSTGW_ADMIN_LISTEN"} {
			if env[v] == "" {
				t.Errorf("compose.yaml %s: %s is not set", name, v)
			}
		}
		for k := range maps.Keys(first) {
			if k != "OTEL_RESOURCE_ATTRIBUTES" && env[k] != first[k] {
				t.Errorf("compose.yaml: %s=%q on %s but %q on %s; replicas differ only in their identity", k, env[k], name, first[k], c.gateways[0])
			}
		}
		if len(env) != len(first) {
			t.Errorf("compose.yaml: %s sets %d variables, %s %d", name, len(env), c.gateways[0], len(first))
		}
		if !strings.Contains(env["OTEL_RESOURCE_ATTRIBUTES"], "service.instance.id="+name) {
			t.Errorf("compose.yaml %s: OTEL_RESOURCE_ATTRIBUTES=%q, want service.instance.id=%s so that traces tell the replicas apart", name, env["OTEL_RESOURCE_ATTRIBUTES"], name)
		}

		// Every address a gateway is given is a service of the stack, at
		// the port that service listens on.
		for _, v := range []string{"COSTGW_UPSTREAM", "COSTGW_REDIS_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if host, _, ok := c.service(env[v]); !ok {
				t.Errorf("compose.yaml %s: %s=%q: %q is no service of the stack", name, v, env[v], host)
			}
		}
		if host, port, ok := c.service(env["COSTGW_UPSTREAM"]); ok {
			if want := listenPort(t, c.Services[host].env()["COSTSIM_LISTEN"]); port != want {
				t.Errorf("compose.yaml %s: COSTGW_UPSTREAM=%s, but %s listens on %s", name, env["COSTGW_UPSTREAM"], host, want)
			}
		}
	}
}

func TestComposeSimulator(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	upstream, _, _ := c.service(c.Services[c.gateways[0]].env()["COSTGW_UPSTREAM"])
	sim := c.Services[upstream]
	if sim.Build == nil || sim.Build.Dockerfile != "deploy/costsim.Dockerfile" {
		t.Errorf("compose.yaml: the upstream %s is not built from deploy/costsim.Dockerfile", upstream)
	}
	env := sim.env()
	usage, err := runCostsim(t, nil)
	if err != nil {
		t.Fatalf("costsim -h: %v\n%s", err, usage)
	}
	var known []string
	for _, m := range envRef.FindAllStringSubmatch(usage, -1) {
		known = append(known, m[1])
	}
	for name := range env {
		if !slices.Contains(known, name) {
			t.Errorf("compose.yaml %s: %s is no flag's variable of costsim (costsim -h lists: %s)", upstream, name, strings.Join(known, ", "))
		}
	}
	if out, err := runCostsim(t, env); err != nil {
		t.Errorf("compose.yaml %s: costsim refuses this environment: %v\n%s", upstream, err, out)
	}
	if host, _, _ := net.SplitHostPort(env["COSTSIM_LISTEN"]); host != "" {
		t.Errorf("compose.yaml %s: COSTSIM_LISTEN=%q listens on one address only; the gateways reach it from other containers", upstream, env["COSTSIM_LISTEN"])
	}
}

var digest = regexp.MustCompile(`^[^@:]+(:[\w][\w.-]*)?(@sha256:[0-9a-f]{64})?$`)

func TestComposeServices(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	for _, name := range slices.Sorted(maps.Keys(c.Services)) {
		s := c.Services[name]
		switch m := digest.FindStringSubmatch(s.Image); {
		case s.Build != nil:
			for _, f := range []string{s.Build.Context, filepath.Join(s.Build.Context, s.Build.Dockerfile)} {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("compose.yaml %s: build: %v", name, err)
				}
			}
		case m == nil || m[1] == "" || m[1] == ":latest":
			t.Errorf("compose.yaml %s: image %q is not pinned to a version tag (and a digest where it can be)", name, s.Image)
		}
		for _, d := range s.dependsOn() {
			if _, ok := c.Services[d]; !ok {
				t.Errorf("compose.yaml %s: depends on %q, which is no service", name, d)
			}
		}
		// Published on loopback only: the admin listeners serve profiles
		// and Redis has no password.
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("compose.yaml %s: port %q is published on every interface of the host; want 127.0.0.1:…", name, p)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") {
				continue // a named volume
			}
			if _, err := os.Stat(src); err != nil {
				t.Errorf("compose.yaml %s: volume %s: %v", name, v, err)
			}
		}
	}
}

// TestComposeMergeKeysFirst keeps every merge key (<<: *anchor) first in
// its mapping. The YAML spec, which Compose follows, lets a mapping's own
// keys win over merged ones wherever they stand; the YAML library these
// tests use lets whichever comes later win. With merges first, both read
// the same values.
func TestComposeMergeKeysFirst(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(trimmed, "<<:") && !strings.HasSuffix(prev, ":") {
			t.Errorf("compose.yaml:%d: a merge key after other keys of its mapping (%q); put it first", i+1, trimmed)
		}
		prev = trimmed
	}
}

// mounted returns where in service's container the file or folder src of
// the repository's deploy/ folder is mounted.
func (c composeStack) mounted(t *testing.T, service, src string) string {
	t.Helper()
	for _, v := range c.Services[service].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && filepath.Clean(parts[0]) == filepath.Clean(src) {
			return parts[1]
		}
	}
	t.Fatalf("compose.yaml: %s does not mount %s", service, src)
	return ""
}

// serviceMounting returns the service that mounts src.
func (c composeStack) serviceMounting(t *testing.T, src string) string {
	t.Helper()
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			if p, _, _ := strings.Cut(v, ":"); filepath.Clean(p) == filepath.Clean(src) {
				return name
			}
		}
	}
	t.Fatalf("compose.yaml: no service mounts %s", src)
	return ""
}

// gatewayPorts returns the public and admin ports of the gateway replicas.
func (c composeStack) gatewayPorts(t *testing.T) (public, admin string) {
	t.Helper()
	env := c.Services[c.gateways[0]].env()
	cfg, err := server.ParseConfig(nil, lookup(env), new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	return listenPort(t, cfg.Listen), listenPort(t, env["COSTGW_ADMIN_LISTEN"])
}

// TestComposeLoadBalancer checks that nginx.conf sends to every replica, at
// its public port, and listens where compose.yaml publishes it.
func TestComposeLoadBalancer(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	lb := c.serviceMounting(t, "./nginx.conf")
	b, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	public, _ := c.gatewayPorts(t)
	var servers []string
	for _, m := range regexp.MustCompile(`(?m)^\s*server\s+([\w.-]+:\d+)`).FindAllStringSubmatch(conf, -1) {
		servers = append(servers, m[1])
	}
	var want []string
	for _, g := range c.gateways {
		want = append(want, g+":"+public)
	}
	if !slices.Equal(servers, want) {
		t.Errorf("nginx.conf's upstream servers are %v, want every gateway replica at its public port: %v", servers, want)
	}
	listen := regexp.MustCompile(`(?m)^\s*listen\s+(\d+)\s*;`).FindStringSubmatch(conf)
	if listen == nil {
		t.Fatal("nginx.conf has no `listen PORT;`")
	}
	for _, p := range c.Services[lb].Ports {
		if !strings.HasSuffix(p, ":"+listen[1]) {
			t.Errorf("compose.yaml %s publishes %s, but nginx listens on %s", lb, p, listen[1])
		}
	}
	if len(c.Services[lb].Ports) == 0 {
		t.Errorf("compose.yaml %s publishes no port", lb)
	}
}

// TestComposePrometheus checks that Prometheus scrapes every replica's admin
// listener, and that Grafana's data source is that Prometheus.
func TestComposePrometheus(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	prom := c.serviceMounting(t, "./prometheus.yml")
	if got := c.mounted(t, prom, "./prometheus.yml"); got != "/etc/prometheus/prometheus.yml" {
		t.Errorf("compose.yaml %s mounts prometheus.yml at %s, not where the image reads it", prom, got)
	}
	cfg := decodeYAML[struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}](t, "prometheus.yml")
	_, admin := c.gatewayPorts(t)
	var want []string
	for _, g := range c.gateways {
		want = append(want, g+":"+admin)
	}
	var got []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.MetricsPath != "/metrics" {
			t.Errorf("prometheus.yml: job %s scrapes %q, not the admin listener's /metrics", sc.JobName, sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			got = append(got, st.Targets...)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("prometheus.yml scrapes %v, want every replica's admin listener: %v", got, want)
	}

	grafana := c.serviceMounting(t, "./grafana/provisioning")
	ds := decodeYAML[struct {
		Datasources []struct {
			Type string `yaml:"type"`
			UID  string `yaml:"uid"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}](t, "grafana/provisioning/datasources/prometheus.yaml")
	if len(ds.Datasources) != 1 {
		t.Fatalf("grafana/provisioning/datasources: %d data sources, want Prometheus alone", len(ds.Datasources))
	}
	if host, port, ok := c.service(ds.Datasources[0].URL); !ok || host != prom || port != "9090" {
		t.Errorf("grafana's data source is %s, want the stack's Prometheus (%s:9090)", ds.Datasources[0].URL, prom)
	}
	dash := decodeYAML[struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}](t, "grafana/provisioning/dashboards/costgw.yaml")
	at := c.mounted(t, grafana, "./grafana/costgw.json")
	if len(dash.Providers) != 1 || dash.Providers[0].Options.Path != filepath.Dir(at) {
		t.Errorf("grafana's dashboard provider reads %+v, but compose.yaml mounts costgw.json at %s", dash.Providers, at)
	}
	if got := c.mounted(t, grafana, "./grafana/provisioning"); got != "/etc/grafana/provisioning" {
		t.Errorf("compose.yaml %s mounts the provisioning folder at %s, not where Grafana reads it", grafana, got)
	}
}

// TestComposeCollector checks that the collector receives on the port and
// protocol the gateways send with, and exports to a service of the stack.
func TestComposeCollector(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	env := c.Services[c.gateways[0]].env()
	host, port, _ := c.service(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	if got := c.mounted(t, host, "./otel-collector.yaml"); got != "/etc/otelcol/config.yaml" {
		t.Errorf("compose.yaml %s mounts otel-collector.yaml at %s, not where the image reads it", host, got)
	}
	type endpoint struct {
		Endpoint string `yaml:"endpoint"`
	}
	cfg := decodeYAML[struct {
		Receivers struct {
			OTLP struct {
				Protocols struct {
					GRPC *endpoint `yaml:"grpc"`
					HTTP *endpoint `yaml:"http"`
				} `yaml:"protocols"`
			} `yaml:"otlp"`
		} `yaml:"receivers"`
		Processors map[string]any      `yaml:"processors"`
		Exporters  map[string]endpoint `yaml:"exporters"`
		Service    struct {
			Pipelines map[string]struct {
				Receivers  []string `yaml:"receivers"`
				Processors []string `yaml:"processors"`
				Exporters  []string `yaml:"exporters"`
			} `yaml:"pipelines"`
		} `yaml:"service"`
	}](t, "otel-collector.yaml")

	receiver := cfg.Receivers.OTLP.Protocols.HTTP
	if env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc" {
		receiver = cfg.Receivers.OTLP.Protocols.GRPC
	}
	if receiver == nil {
		t.Fatalf("otel-collector.yaml: the otlp receiver takes no %s", env["OTEL_EXPORTER_OTLP_PROTOCOL"])
	}
	if h, p, _ := net.SplitHostPort(receiver.Endpoint); p != port || h != "0.0.0.0" && h != "" {
		t.Errorf("otel-collector.yaml: the otlp receiver listens on %s; the gateways send to port %s of another container", receiver.Endpoint, port)
	}
	traces, ok := cfg.Service.Pipelines["traces"]
	if !ok {
		t.Fatal("otel-collector.yaml has no traces pipeline")
	}
	if !slices.Contains(traces.Receivers, "otlp") {
		t.Errorf("otel-collector.yaml: the traces pipeline does not receive from otlp: %v", traces.Receivers)
	}
	for _, p := range traces.Processors {
		if _, ok := cfg.Processors[p]; !ok {
			t.Errorf("otel-collector.yaml: the traces pipeline uses processor %s, which is not configured", p)
		}
	}
	if len(traces.Exporters) == 0 {
		t.Error("otel-collector.yaml: the traces pipeline exports nowhere")
	}
	for _, e := range traces.Exporters {
		exp, ok := cfg.Exporters[e]
		if !ok {
			t.Errorf("otel-collector.yaml: the traces pipeline uses exporter %s, which is not configured", e)
			continue
		}
		if h, _, ok := c.service(exp.Endpoint); !ok {
			t.Errorf("otel-collector.yaml: exporter %s sends to %s, no service of the stack", e, h)
		}
	}
}

// Redis is a cache with a bound: persisted queries and rate-limit counters
// are rebuilt by use, so when it is full it evicts the least recently used
// key rather than refuse writes (Redis's default), and nothing a client
// registers can take more memory than maxmemory.
func TestComposeRedisIsABoundedCache(t *testing.T) {
	t.Parallel()
	cmd := readCompose(t).Services["redis"].Command
	arg := func(name string) string {
		if i := slices.Index(cmd, name); i >= 0 && i+1 < len(cmd) {
			return cmd[i+1]
		}
		return ""
	}
	if arg("--maxmemory") == "" || arg("--maxmemory") == "0" || arg("--maxmemory-policy") != "allkeys-lru" {
		t.Errorf("redis's command %q has no --maxmemory with --maxmemory-policy allkeys-lru", cmd)
	}
}
