package main

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// makeRecipes returns the commands of the Makefile's recipes, with its
// simple variables expanded.
func makeRecipes(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	var cmds []string
	continued := false // the line before ended in a backslash
	for _, line := range strings.Split(string(b), "\n") {
		if m := regexp.MustCompile(`^([A-Z_]+) :?= (.*)$`).FindStringSubmatch(line); m != nil {
			vars[m[1]] = m[2]
		}
		if strings.HasPrefix(line, "\t") && !continued {
			cmds = append(cmds, strings.TrimSpace(line))
		}
		continued = strings.HasSuffix(line, "\\")
	}
	expand := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	for i, c := range cmds {
		cmds[i] = expand.ReplaceAllStringFunc(c, func(v string) string { return vars[v[2:len(v)-1]] })
	}
	return cmds
}

// dockerfileRuns checks that every RUN of the Dockerfile file is a command
// of the Makefile's recipes, run in the same folder, and returns how many
// RUN instructions it has.
func dockerfileRuns(t *testing.T, file string, recipes []string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const root = "/src"
	workdir := "/"
	var runs int
	for _, line := range strings.Split(string(b), "\n") {
		instr, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			workdir = "/"
		case "WORKDIR":
			workdir = path.Join(workdir, arg)
		case "RUN":
			runs++
			rel, ok := strings.CutPrefix(workdir, root)
			if !ok {
				t.Errorf("%s: RUN %s runs in %s, outside the source folder %s", file, arg, workdir, root)
				continue
			}
			want := arg
			if rel = strings.TrimPrefix(rel, "/"); rel != "" {
				want = "cd " + rel + " && " + arg
			}
			found := false
			for _, r := range recipes {
				found = found || r == want
			}
			if !found {
				t.Errorf("%s runs %q, which no Makefile recipe runs; recipes:\n%s", file, want, strings.Join(recipes, "\n"))
			}
		}
	}
	return runs
}

// TestDockerfileRunsTheMakefile checks that every RUN of the Dockerfiles is
// a command of the Makefile's recipes, run in the same folder, so that CI,
// which runs `make test`, `make build` and `make deploy-check`, runs what
// the images' builds run. (No container engine runs here to build the
// images themselves.)
func TestDockerfileRunsTheMakefile(t *testing.T) {
	t.Parallel()
	recipes := makeRecipes(t)
	if runs := dockerfileRuns(t, "Dockerfile", recipes); runs < 4 {
		t.Errorf("the Dockerfile has %d RUN instructions, want the npm and go steps", runs)
	}
	// The simulator's image, for deploy/compose.yaml: the same Go and
	// runtime images as the gateway's.
	if runs := dockerfileRuns(t, "deploy/costsim.Dockerfile", recipes); runs < 2 {
		t.Errorf("deploy/costsim.Dockerfile has %d RUN instructions, want the go steps", runs)
	}
	sim, err := os.ReadFile("deploy/costsim.Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FROM golang:1.26 AS build",
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"USER nonroot",
	} {
		if !strings.Contains(string(sim), want) {
			t.Errorf("deploy/costsim.Dockerfile lacks %q", want)
		}
	}

	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}

	// The image builds with the Node.js major that .nvmrc names, which CI
	// installs too.
	nvmrc, err := os.ReadFile(".nvmrc")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FROM node:" + strings.TrimSpace(string(nvmrc)) + " AS playground",
		"FROM golang:1.26 AS build",
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"USER nonroot",
		"EXPOSE 8080",
		`CMD ["/costgw", "-healthcheck"]`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}

	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"make test", "make build", "make deploy-check"} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).Match(ci) {
			t.Errorf(".ci/run does not run %q", want)
		}
	}
	if want := "\nNODE_VERSION=" + strings.TrimSpace(string(nvmrc)) + "."; !strings.Contains(string(ci), want) {
		t.Errorf(".ci/run does not install the Node.js major of .nvmrc (%q)", want[1:])
	}
}
