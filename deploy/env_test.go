package deploy

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/costgw/gateway/internal/server"
)

// otelVars are the standard OpenTelemetry variables the gateway reads
// (issue 11), with the values the Go SDK accepts.
var otelVars = map[string]func(string) error{
	"OTEL_SERVICE_NAME": func(v string) error {
		if v == "" {
			return errors.New("empty")
		}
		return nil
	},
	"OTEL_EXPORTER_OTLP_ENDPOINT": func(v string) error {
		u, err := url.Parse(v)
		if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Port() == "") {
			err = errors.New("want http(s)://host:port")
		}
		return err
	},
	"OTEL_EXPORTER_OTLP_PROTOCOL": oneOf("http/protobuf", "grpc"),
	"OTEL_TRACES_SAMPLER": oneOf("always_on", "always_off", "traceidratio",
		"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"),
	"OTEL_TRACES_SAMPLER_ARG": func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && (f < 0 || f > 1) {
			err = errors.New("want a ratio from 0 to 1")
		}
		return err
	},
	"OTEL_RESOURCE_ATTRIBUTES": func(v string) error {
		for _, kv := range strings.Split(v, ",") {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("%q is not key=value", kv)
			}
		}
		return nil
	},
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("want one of %s", strings.Join(values, ", "))
		}
		return nil
	}
}

// envRef matches the names of variables a usage text lists: "(env NAME)".
var envRef = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)\)`)

// gatewayVars returns the variables of the gateway's flags, read from its
// real flag set through its -h text.
func gatewayVars(t *testing.T) []string {
	t.Helper()
	var usage bytes.Buffer
	_, err := server.ParseConfig([]string{"-h"}, func(string) (string, bool) { return "", false }, &usage)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("costgw -h: %v", err)
	}
	var names []string
	for _, m := range envRef.FindAllStringSubmatch(usage.String(), -1) {
		names = append(names, m[1])
	}
	if !slices.Contains(names, "COSTGW_UPSTREAM") {
		t.Fatalf("costgw -h names no COSTGW_UPSTREAM; its usage text changed form:\n%s", usage.String())
	}
	return names
}

// checkGatewayEnv checks the environment env that where gives the gateway:
// every COSTGW_ variable is a flag's, the gateway's
// own parser accepts the values, and the OpenTelemetry variables are
// standard ones with values the SDK accepts. Names in others are set for
// another reason (Kubernetes' own, GOMEMLIMIT) and not checked.
func checkGatewayEnv(t *testing.T, where string, env map[string]string, others ...string) {
	t.Helper()
	known := gatewayVars(t)
	for name, v := range env {
		switch {
		case strings.HasPrefix(name, "COSTGW_"):
			if !slices.Contains(known, name) {
				t.Errorf("%s: %s is no flag's variable; the gateway ignores it (costgw -h lists them: %s)", where, name, strings.Join(known, ", "))
			}
		case strings.HasPrefix(name, "OTEL_"):
			check, ok := otelVars[name]
			if !ok {
				t.Errorf("%s: %s is not one of the OpenTelemetry variables the gateway reads", where, name)
			} else if err := check(v); err != nil {
				t.Errorf("%s: %s=%q: %v", where, name, v, err)
			}
		case !slices.Contains(others, name):
			t.Errorf("%s: %s: the gateway reads no such variable", where, name)
		}
	}
	if _, err := server.ParseConfig(nil, lookup(env), new(bytes.Buffer)); err != nil {
		t.Errorf("%s: the gateway refuses this environment: %v", where, err)
	}

	// OTLP's two protocols have their own standard ports; the other one's
	// is a mistake that loses every span.
	endpoint, protocol := env["OTEL_EXPORTER_OTLP_ENDPOINT"], env["OTEL_EXPORTER_OTLP_PROTOCOL"]
	if u, err := url.Parse(endpoint); endpoint != "" && err == nil {
		if protocol == "grpc" && u.Port() == "4318" || protocol != "grpc" && u.Port() == "4317" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT=%s with protocol %q: 4317 is OTLP/gRPC's port, 4318 OTLP/HTTP's (the default protocol is http/protobuf)", where, endpoint, protocol)
		}
	}
	if arg, ok := env["OTEL_TRACES_SAMPLER_ARG"]; ok && !strings.HasSuffix(env["OTEL_TRACES_SAMPLER"], "traceidratio") {
		t.Errorf("%s: OTEL_TRACES_SAMPLER_ARG=%s has no effect with OTEL_TRACES_SAMPLER=%q", where, arg, env["OTEL_TRACES_SAMPLER"])
	}
}

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

var costsimUsage struct {
	once sync.Once
	bin  string
	err  error
}

// runCostsim runs the simulator's command with -h and the environment env
// and returns what it prints: its usage, or its refusal of env. It builds
// the command once per test binary.
func runCostsim(t *testing.T, env map[string]string) (string, error) {
	t.Helper()
	costsimUsage.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		dir, err := os.MkdirTemp("", "deploy-costsim-")
		if err != nil {
			costsimUsage.err = err
			return
		}
		costsimUsage.bin = filepath.Join(dir, "costsim")
		cmd := exec.Command(goTool, "build", "-o", costsimUsage.bin, "./cmd/costsim")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			costsimUsage.err = fmt.Errorf("go build ./cmd/costsim: %v\n%s", err, out)
		}
	})
	if costsimUsage.err != nil {
		t.Fatal(costsimUsage.err)
	}
	cmd := exec.Command(costsimUsage.bin, "-h")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
