package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if costsimUsage.bin != "" {
		os.RemoveAll(filepath.Dir(costsimUsage.bin))
	}
	os.Exit(code)
}

// manifestFiles returns the Kubernetes manifests under k8s/.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests under deploy/k8s")
	}
	return files
}

// decodeYAMLDocs decodes every document of the YAML file path into a T,
// refusing duplicate keys (which the YAML spec forbids and kubectl and
// compose treat differently).
func decodeYAMLDocs[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []T
	for {
		var doc T
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, doc)
	}
}

// decodeYAML decodes the YAML file path, which has one document, into v.
func decodeYAML[T any](t *testing.T, path string) T {
	t.Helper()
	docs := decodeYAMLDocs[T](t, path)
	if len(docs) != 1 {
		t.Fatalf("%s has %d YAML documents, want 1", path, len(docs))
	}
	return docs[0]
}

// envNames returns the names in env that start with one of prefixes.
func envNames(env map[string]string, prefixes ...string) []string {
	var names []string
	for k := range env {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				names = append(names, k)
				break
			}
		}
	}
	return names
}
