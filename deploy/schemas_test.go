package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate k8s/schemas from the Kubernetes OpenAPI documents")

// The schemas kubeconform validates the manifests against are generated
// here, not downloaded at CI time: CI reaches the Go module proxy but not
// the schema repositories kubeconform reads by default. The source is the
// Kubernetes API server's own /openapi/v3 documents of one minor version,
// which sigs.k8s.io/kubectl-validate ships in its module (it embeds them to
// validate offline), fetched like any module through the proxy.
const (
	kubernetesVersion = "1.30"
	openAPIModule     = "sigs.k8s.io/kubectl-validate@v0.0.4"
	openAPIDir        = "pkg/openapiclient/builtins/" + kubernetesVersion
	schemaDir         = "k8s/schemas"
)

// TestKubernetesSchemas checks that k8s/schemas holds exactly the schemas
// the manifests' kinds need, as generated from the OpenAPI documents, so
// that no schema is edited by hand to let a manifest pass. With -update it
// writes them. Without the module (offline, and not in the module cache)
// it skips; `make deploy-check` runs it where the proxy answers.
func TestKubernetesSchemas(t *testing.T) {
	dir, err := moduleDir(openAPIModule)
	if err != nil {
		if *update {
			t.Fatal(err)
		}
		t.Skipf("cannot check k8s/schemas against their source: %v", err)
	}
	want := map[string][]byte{}
	for _, tm := range manifestKinds(t) {
		name, b, err := generateSchema(filepath.Join(dir, openAPIDir), tm)
		if err != nil {
			t.Fatalf("%s %s: %v", tm.APIVersion, tm.Kind, err)
		}
		want[name] = b
	}

	have, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for _, f := range have {
			if _, ok := want[filepath.Base(f)]; !ok {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(schemaDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, f := range have {
		name := filepath.Base(f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch w, ok := want[name]; {
		case !ok:
			t.Errorf("%s: no manifest has its kind; remove it (go test ./deploy -run TestKubernetesSchemas -update)", f)
		case !bytes.Equal(b, w):
			t.Errorf("%s differs from what Kubernetes %s's OpenAPI document gives; regenerate it (go test ./deploy -run TestKubernetesSchemas -update) rather than edit it", f, kubernetesVersion)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("%s/%s is missing (go test ./deploy -run TestKubernetesSchemas -update)", schemaDir, name)
	}
}

// typeMeta is what every Kubernetes manifest starts with.
type typeMeta struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

// manifestKinds returns the distinct kinds of the manifests under k8s/,
// less kustomize's own file, which kubeconform skips.
func manifestKinds(t *testing.T) []typeMeta {
	t.Helper()
	var kinds []typeMeta
	for _, f := range manifestFiles(t) {
		for _, doc := range decodeYAMLDocs[typeMeta](t, f) {
			if doc.Kind != "Kustomization" && !slices.Contains(kinds, doc) {
				kinds = append(kinds, doc)
			}
		}
	}
	return kinds
}

// moduleDir downloads module (path@version) into the module cache, or finds
// it there, and returns its directory.
func moduleDir(module string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "mod", "download", "-json", module)
	cmd.Dir = os.TempDir() // outside this module: its go.mod stays as it is
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil {
		return "", fmt.Errorf("go mod download %s: %v %v", module, err, jerr)
	}
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", module, info.Error)
	}
	return info.Dir, err
}

// schemaFileName is the file kubeconform's -schema-location template
// {{.ResourceKind}}{{.KindSuffix}}.json names for tm: deployment-apps-v1.json.
func schemaFileName(tm typeMeta) string {
	group, version, ok := strings.Cut(tm.APIVersion, "/")
	if !ok {
		return strings.ToLower(tm.Kind) + "-" + strings.ToLower(group) + ".json"
	}
	group, _, _ = strings.Cut(group, ".")
	return strings.ToLower(tm.Kind) + "-" + strings.ToLower(group) + "-" + strings.ToLower(version) + ".json"
}

// generateSchema makes the standalone, strict JSON schema of tm from the
// OpenAPI v3 document of its group and version under dir, the way
// kubeconform's own schemas are made: references inlined, every object
// with properties closed to others (additionalProperties: false, as the API
// server's field validation does), kind and apiVersion fixed. Descriptions,
// defaults and x-kubernetes- annotations, which validation does not use,
// are left out; that keeps the files a tenth of their size.
func generateSchema(dir string, tm typeMeta) (string, []byte, error) {
	doc := filepath.Join(dir, "api", tm.APIVersion+".json")
	if strings.Contains(tm.APIVersion, "/") {
		doc = filepath.Join(dir, "apis", tm.APIVersion+".json")
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		return "", nil, err
	}
	var openapi struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &openapi); err != nil {
		return "", nil, fmt.Errorf("%s: %w", doc, err)
	}
	group, version, ok := strings.Cut(tm.APIVersion, "/")
	if !ok {
		group, version = "", tm.APIVersion
	}
	g := generator{schemas: openapi.Components.Schemas}
	for name, s := range g.schemas {
		gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, gvk := range gvks {
			m, _ := gvk.(map[string]any)
			if m["group"] != group || m["version"] != version || m["kind"] != tm.Kind {
				continue
			}
			root, err := g.resolve(s, []string{name})
			if err != nil {
				return "", nil, err
			}
			props := root.(map[string]any)["properties"].(map[string]any)
			props["apiVersion"] = map[string]any{"type": "string", "enum": []any{tm.APIVersion}}
			props["kind"] = map[string]any{"type": "string", "enum": []any{tm.Kind}}
			out, err := json.MarshalIndent(root, "", " ")
			if err != nil {
				return "", nil, err
			}
			return schemaFileName(tm), append(out, '\n'), nil
		}
	}
	return "", nil, fmt.Errorf("%s has no schema of kind %s", doc, tm.Kind)
}

// generator inlines the references of one OpenAPI document's schemas.
type generator struct {
	schemas map[string]map[string]any
}

const refPrefix = "#/components/schemas/"

// resolve returns s with its references inlined and its annotations left
// out; stack holds the schemas being resolved, to refuse a cycle (none of
// the built-in kinds has one; only CustomResourceDefinition's does).
func (g generator) resolve(s map[string]any, stack []string) (any, error) {
	if ref, ok := s["$ref"].(string); ok { // OpenAPI 3.0: siblings of $ref are ignored
		return g.ref(ref, stack)
	}
	out := map[string]any{}
	// A reference with a default or description of its own comes wrapped
	// in a one-element allOf: inline the referenced schema in its place.
	all, _ := s["allOf"].([]any)
	wrapped := len(all) == 1
	if wrapped {
		ref, _ := all[0].(map[string]any)["$ref"].(string)
		if ref == "" {
			return nil, fmt.Errorf("allOf without $ref: %v", all)
		}
		base, err := g.ref(ref, stack)
		if err != nil {
			return nil, err
		}
		for k, v := range base.(map[string]any) {
			out[k] = v
		}
	}
	for k, v := range s {
		switch {
		case k == "allOf" && wrapped:
		case k == "description", k == "default", k == "example", strings.HasPrefix(k, "x-kubernetes-"):
		case k == "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				r, err := g.resolve(p.(map[string]any), stack)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				props[name] = r
			}
			out[k] = props
		case k == "items", k == "not", k == "additionalProperties":
			m, ok := v.(map[string]any)
			if !ok { // additionalProperties: true or false
				out[k] = v
				continue
			}
			r, err := g.resolve(m, stack)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		case k == "allOf", k == "oneOf", k == "anyOf":
			var list []any
			for _, e := range v.([]any) {
				r, err := g.resolve(e.(map[string]any), stack)
				if err != nil {
					return nil, err
				}
				list = append(list, r)
			}
			out[k] = list
		default:
			out[k] = v
		}
	}
	if _, ok := out["properties"]; ok && out["additionalProperties"] == nil && s["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out, nil
}

func (g generator) ref(ref string, stack []string) (any, error) {
	name, ok := strings.CutPrefix(ref, refPrefix)
	if !ok {
		return nil, fmt.Errorf("reference %q outside %s", ref, refPrefix)
	}
	if slices.Contains(stack, name) {
		return nil, errors.New("reference cycle: " + strings.Join(append(stack, name), " → "))
	}
	s, ok := g.schemas[name]
	if !ok {
		return nil, fmt.Errorf("reference to unknown schema %s", name)
	}
	return g.resolve(s, append(slices.Clip(stack), name))
}
