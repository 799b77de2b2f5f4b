package deploy

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The parts of the manifests these tests read. kubeconform checks their
// form against the schemas; these tests check what a schema cannot: that
// the objects fit together and that the gateway would accept its settings.

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string `yaml:"name"`
	Image string `yaml:"image"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional *bool  `yaml:"optional"`
			} `yaml:"secretKeyRef"`
			ConfigMapKeyRef *struct{ Name, Key string } `yaml:"configMapKeyRef"`
			FieldRef        *struct{ FieldPath string } `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Privileged               *bool `yaml:"privileged"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

type deployment struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Replicas *int          `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
				EnableServiceLinks            *bool `yaml:"enableServiceLinks"`
				TerminationGracePeriodSeconds int   `yaml:"terminationGracePeriodSeconds"`
				SecurityContext               struct {
					RunAsNonRoot   *bool  `yaml:"runAsNonRoot"`
					RunAsUser      *int64 `yaml:"runAsUser"`
					SeccompProfile struct {
						Type string `yaml:"type"`
					} `yaml:"seccompProfile"`
				} `yaml:"securityContext"`
				TopologySpreadConstraints []struct {
					TopologyKey   string        `yaml:"topologyKey"`
					LabelSelector labelSelector `yaml:"labelSelector"`
				} `yaml:"topologySpreadConstraints"`
				Affinity   map[string]any `yaml:"affinity"`
				Containers []container    `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type service struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// cluster is every object of the manifests, by kind.
type cluster struct {
	deployment    deployment
	configMaps    map[string]map[string]string // name: data
	secrets       map[string]map[string]string // name: stringData
	services      []service
	selectors     map[string]labelSelector // "PodDisruptionBudget costgw": its selector
	hpa           horizontalPodAutoscaler
	kustomization struct {
		Resources []string `yaml:"resources"`
	}
}

type horizontalPodAutoscaler struct {
	Spec struct {
		ScaleTargetRef struct{ APIVersion, Kind, Name string } `yaml:"scaleTargetRef"`
		MinReplicas    int                                     `yaml:"minReplicas"`
		MaxReplicas    int                                     `yaml:"maxReplicas"`
	} `yaml:"spec"`
}

// object is what readCluster reads of every object: its kind and name, and
// a ConfigMap's data, a Secret's stringData, a PodDisruptionBudget's
// spec.selector or a NetworkPolicy's spec.podSelector.
type object struct {
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector    labelSelector `yaml:"selector"`
		PodSelector labelSelector `yaml:"podSelector"`
	} `yaml:"spec"`
}

func readCluster(t *testing.T) cluster {
	t.Helper()
	c := cluster{configMaps: map[string]map[string]string{}, secrets: map[string]map[string]string{}, selectors: map[string]labelSelector{}}
	deployments := 0
	for _, f := range manifestFiles(t) {
		o := decodeYAML[object](t, f)
		switch o.Kind {
		case "Deployment":
			c.deployment = decodeYAML[deployment](t, f)
			deployments++
		case "ConfigMap":
			c.configMaps[o.Metadata.Name] = o.Data
		case "Secret":
			c.secrets[o.Metadata.Name] = o.StringData
		case "Service":
			c.services = append(c.services, decodeYAML[service](t, f))
		case "PodDisruptionBudget":
			c.selectors["PodDisruptionBudget "+o.Metadata.Name] = o.Spec.Selector
		case "NetworkPolicy":
			c.selectors["NetworkPolicy "+o.Metadata.Name] = o.Spec.PodSelector
		case "HorizontalPodAutoscaler":
			c.hpa = decodeYAML[horizontalPodAutoscaler](t, f)
		case "Kustomization":
			c.kustomization = decodeYAML[struct {
				Resources []string `yaml:"resources"`
			}](t, f)
		default:
			t.Errorf("%s: kind %s, which these tests do not know", f, o.Kind)
		}
	}
	if deployments != 1 || len(c.deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one Deployment of one container; %d Deployments", deployments)
	}
	return c
}

func (c cluster) gateway() container { return c.deployment.Spec.Template.Spec.Containers[0] }

// env returns the gateway's environment as the kubelet would make it, with
// the example Secret's values for its secret references.
func (c cluster) env(t *testing.T) map[string]string {
	t.Helper()
	g := c.gateway()
	env := map[string]string{}
	for _, from := range g.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			data, ok := c.configMaps[from.ConfigMapRef.Name]
			if !ok {
				t.Errorf("the gateway's envFrom names ConfigMap %s, which no manifest has", from.ConfigMapRef.Name)
			}
			maps.Copy(env, data)
		default:
			t.Errorf("the gateway's envFrom has a source other than the ConfigMap; name secrets one by one")
		}
	}
	for _, e := range g.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := c.secrets[ref.Name][ref.Key]
			if !ok {
				t.Errorf("%s comes from key %q of Secret %s, which secret.example.yaml does not have", e.Name, ref.Key, ref.Name)
			}
			if ref.Optional != nil && *ref.Optional {
				t.Errorf("%s is optional: a pod without it would start with a setting of its own", e.Name)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "from-" + e.ValueFrom.FieldRef.FieldPath
		default:
			t.Errorf("%s: a value source these tests do not know", e.Name)
		}
	}
	return env
}

func TestKubernetesEnvironment(t *testing.T) {
	t.Parallel()
	c := readCluster(t)
	env := c.env(t)
	checkGatewayEnv(t, "deploy/k8s", env, "GOMEMLIMIT", "POD_NAME", "POD_NAMESPACE")

	// Settings go in the ConfigMap, secrets in the Secret: a ConfigMap is
	// readable by whoever may read the namespace's configuration.
	for name, data := range c.configMaps {
		for _, k := range []string{"COSTGW_CURSOR_SECRET", "COSTGW_REDIS_URL"} {
			if _, ok := data[k]; ok {
				t.Errorf("ConfigMap %s holds %s, which is (or may carry) a secret: take it from the Secret", name, k)
			}
		}
	}
	for _, k := range []string{"COSTGW_CURSOR_SECRET", "COSTGW_REDIS_URL", "COSTGW_ADMIN_LISTEN", "COSTGW_UPSTREAM"} {
		if env[k] == "" {
			t.Errorf("the gateway's environment does not set %s", k)
		}
	}
	for k, want := range map[string]string{"COSTGW_PLAYGROUND": "false", "COSTGW_INTROSPECTION": "false"} {
		if env[k] != want {
			t.Errorf("%s=%q; a production endpoint sets %s (docs/security.md)", k, env[k], want)
		}
	}

	// GOMEMLIMIT must leave the runtime room under the container's limit,
	// and must be under it at all: set to the limit, the runtime collects
	// hard only when the kernel is about to kill the pod.
	g := c.gateway()
	limit, err := parseQuantity(g.Resources.Limits["memory"])
	if err != nil {
		t.Fatalf("limits.memory: %v", err)
	}
	soft, err := parseGoMemLimit(env["GOMEMLIMIT"])
	if err != nil {
		t.Fatalf("GOMEMLIMIT=%q: %v", env["GOMEMLIMIT"], err)
	}
	if ratio := soft / limit; ratio < 0.5 || ratio > 0.9 {
		t.Errorf("GOMEMLIMIT=%s is %.0f %% of the memory limit %s; keep it between 50 and 90 %%", env["GOMEMLIMIT"], ratio*100, g.Resources.Limits["memory"])
	}
	for _, r := range []string{"cpu", "memory"} {
		req, err1 := parseQuantity(g.Resources.Requests[r])
		lim, err2 := parseQuantity(g.Resources.Limits[r])
		if err1 != nil || err2 != nil {
			t.Errorf("resources %s: request %q, limit %q: want both", r, g.Resources.Requests[r], g.Resources.Limits[r])
		} else if req > lim {
			t.Errorf("resources %s: request %s above limit %s", r, g.Resources.Requests[r], g.Resources.Limits[r])
		}
	}

	// The pod may be told to stop while requests run: the grace period
	// covers the preStop sleep, then the gateway's own drain, which lasts
	// up to 5 s for requests still being sent (internal/httpx's
	// newConnWait) and then the request timeout + 5 s.
	timeout, err := time.ParseDuration(env["COSTGW_REQUEST_TIMEOUT"])
	if err != nil {
		timeout = 30 * time.Second
	}
	need := 5*time.Second + timeout + 5*time.Second
	if ps := g.Lifecycle.PreStop; ps != nil && ps.Sleep != nil {
		need += time.Duration(ps.Sleep.Seconds) * time.Second
	}
	if got := time.Duration(c.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; got < need {
		t.Errorf("terminationGracePeriodSeconds is %v, want at least %v (preStop, 5 s, request timeout, 5 s)", got, need)
	}
}

// parseQuantity reads the Kubernetes quantities the manifests use: "500m",
// "2", "128Mi".
func parseQuantity(q string) (float64, error) {
	units := []struct {
		suffix string
		factor float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(q, u.suffix); ok && n != "" {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return 0, fmt.Errorf("quantity %q: %v", q, err)
			}
			return f * u.factor, nil
		}
	}
	return 0, fmt.Errorf("quantity %q", q)
}

// parseGoMemLimit reads GOMEMLIMIT's form: bytes, with B, KiB, MiB, GiB.
func parseGoMemLimit(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		factor float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}, {"", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok && n != "" {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return 0, err
			}
			return f * u.factor, nil
		}
	}
	return 0, fmt.Errorf("want a size such as 320MiB")
}

func TestKubernetesPodSecurity(t *testing.T) {
	t.Parallel()
	c := readCluster(t)
	pod := c.deployment.Spec.Template.Spec
	g := c.gateway()
	isTrue := func(b *bool) bool { return b != nil && *b }
	isFalse := func(b *bool) bool { return b != nil && !*b }
	for _, check := range []struct {
		ok   bool
		want string
	}{
		{isTrue(pod.SecurityContext.RunAsNonRoot), "runAsNonRoot: true"},
		// The image's USER is a name, which the kubelet cannot check.
		{pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser > 0, "a numeric non-root runAsUser"},
		{pod.SecurityContext.SeccompProfile.Type == "RuntimeDefault", "seccompProfile RuntimeDefault"},
		{isFalse(g.SecurityContext.AllowPrivilegeEscalation), "allowPrivilegeEscalation: false"},
		{isTrue(g.SecurityContext.ReadOnlyRootFilesystem), "readOnlyRootFilesystem: true"},
		{!isTrue(g.SecurityContext.Privileged), "not privileged"},
		{slices.Equal(g.SecurityContext.Capabilities.Drop, []string{"ALL"}), "capabilities drop ALL"},
		{isFalse(pod.AutomountServiceAccountToken), "automountServiceAccountToken: false"},
		// Service links would put COSTGW_PORT=tcp://… and the like in the
		// gateway's own variable namespace.
		{isFalse(pod.EnableServiceLinks), "enableServiceLinks: false"},
		{len(pod.TopologySpreadConstraints) > 0 || pod.Affinity["podAntiAffinity"] != nil, "replicas spread over nodes"},
	} {
		if !check.ok {
			t.Errorf("the gateway's pod lacks %s", check.want)
		}
	}
	if _, tag, ok := strings.Cut(filepath.Base(g.Image), ":"); !ok && !strings.Contains(g.Image, "@sha256:") || tag == "latest" {
		t.Errorf("image %q is not pinned to a tag or digest", g.Image)
	}
}

func TestKubernetesWiring(t *testing.T) {
	t.Parallel()
	c := readCluster(t)
	pod := c.deployment.Spec.Template
	g := c.gateway()
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if pod.Metadata.Labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(c.deployment.Spec.Selector.MatchLabels) {
		t.Errorf("the Deployment's selector %v does not select its own pods %v", c.deployment.Spec.Selector.MatchLabels, pod.Metadata.Labels)
	}
	for what, sel := range c.selectors {
		if !matches(sel.MatchLabels) {
			t.Errorf("%s selects %v, not the gateway's pods %v", what, sel.MatchLabels, pod.Metadata.Labels)
		}
	}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if !matches(tsc.LabelSelector.MatchLabels) {
			t.Errorf("the spread over %s counts %v, not the gateway's pods", tsc.TopologyKey, tsc.LabelSelector.MatchLabels)
		}
	}

	// Container ports by name, and the admin one is where the gateway
	// listens with COSTGW_ADMIN_LISTEN.
	ports := map[string]int{}
	for _, p := range g.Ports {
		ports[p.Name] = p.ContainerPort
	}
	env := c.env(t)
	adminPort := listenPort(t, env["COSTGW_ADMIN_LISTEN"])
	if strconv.Itoa(ports["admin"]) != adminPort || strconv.Itoa(ports["http"]) != "8080" {
		t.Errorf("container ports %v, want http 8080 and admin %s (COSTGW_ADMIN_LISTEN)", ports, adminPort)
	}
	portOf := func(p any) int {
		if name, ok := p.(string); ok {
			return ports[name]
		}
		n, _ := strconv.Atoi(fmt.Sprint(p))
		return n
	}

	// Health on the admin port: with COSTGW_ADMIN_LISTEN set, the public
	// one no longer serves it.
	for name, want := range map[string]struct {
		p    *probe
		path string
	}{"startupProbe": {g.StartupProbe, "/healthz"}, "livenessProbe": {g.LivenessProbe, "/healthz"}, "readinessProbe": {g.ReadinessProbe, "/readyz"}} {
		switch p := want.p; {
		case p == nil || p.HTTPGet == nil:
			if name != "startupProbe" {
				t.Errorf("the gateway has no HTTP %s", name)
			}
		case p.HTTPGet.Path != want.path || portOf(p.HTTPGet.Port) != ports["admin"]:
			t.Errorf("%s gets %s on port %v, want %s on the admin port", name, p.HTTPGet.Path, p.HTTPGet.Port, want.path)
		}
	}

	// The public Service exposes the public port alone; the admin port is
	// on a Service of its own.
	var public, admin int
	for _, s := range c.services {
		if !matches(s.Spec.Selector) {
			t.Errorf("Service %s selects %v, not the gateway's pods", s.Metadata.Name, s.Spec.Selector)
		}
		if s.Spec.Type != "" && s.Spec.Type != "ClusterIP" {
			t.Errorf("Service %s is of type %s; expose the public one through an Ingress or an overlay, never the admin one", s.Metadata.Name, s.Spec.Type)
		}
		for _, p := range s.Spec.Ports {
			switch portOf(p.TargetPort) {
			case ports["http"]:
				public++
				if len(s.Spec.Ports) != 1 {
					t.Errorf("Service %s exposes the public port with others: %+v", s.Metadata.Name, s.Spec.Ports)
				}
			case ports["admin"]:
				admin++
				if len(s.Spec.Ports) != 1 {
					t.Errorf("Service %s exposes the admin port with others: %+v", s.Metadata.Name, s.Spec.Ports)
				}
			default:
				t.Errorf("Service %s targets port %v, which the gateway does not have", s.Metadata.Name, p.TargetPort)
			}
		}
	}
	if public != 1 || admin != 1 {
		t.Errorf("%d Services on the public port and %d on the admin port, want one each", public, admin)
	}

	hpa := c.hpa.Spec
	if hpa.ScaleTargetRef.Kind != "Deployment" || hpa.ScaleTargetRef.Name != c.deployment.Metadata.Name {
		t.Errorf("the HorizontalPodAutoscaler scales %s %s, not the Deployment %s", hpa.ScaleTargetRef.Kind, hpa.ScaleTargetRef.Name, c.deployment.Metadata.Name)
	}
	if hpa.MinReplicas < 2 || hpa.MaxReplicas < hpa.MinReplicas {
		t.Errorf("the HorizontalPodAutoscaler keeps %d to %d replicas, want at least 2", hpa.MinReplicas, hpa.MaxReplicas)
	}
	if r := c.deployment.Spec.Replicas; r != nil {
		t.Errorf("the Deployment sets replicas: %d; the HorizontalPodAutoscaler owns the count, which every apply would reset", *r)
	}

	// kustomization.yaml applies every manifest but the Secret's example,
	// so that `kubectl apply -k` never ships its placeholders.
	var want []string
	for _, f := range manifestFiles(t) {
		if b := filepath.Base(f); b != "kustomization.yaml" && !strings.HasSuffix(b, ".example.yaml") {
			want = append(want, b)
		}
	}
	if got := slices.Sorted(slices.Values(c.kustomization.Resources)); !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml's resources are %v, want every manifest but the examples: %v", got, want)
	}
}
