// Package golden gives tests one -update flag and one way to compare what
// they made with a file kept in the tree: a golden file under testdata, or a
// document of docs/ with a part generated from the code.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files and the generated parts of docs/ instead of comparing with them")

// Updating says whether the tests run under -update.
func Updating() bool { return *update }

// Compare fails the test if got, named what, differs from the file at path;
// under -update it writes got there instead.
func Compare(t testing.TB, path, what string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from %s (-golden +got); run with -update if the change is intended:\n%s", what, path, diff)
	}
}
