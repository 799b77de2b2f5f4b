package config

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func newSet() (*FlagSet, *int, *time.Duration, *bool) {
	fs := New("cmd", "CMD", io.Discard)
	n := fs.Int("max-things", 3, "most things")
	d := fs.Duration("wait", time.Second, "how long")
	v := fs.Bool("version", false, "print the version")
	fs.Action("version")
	return fs, n, d, v
}

// A parseCase is a command line and an environment, and what the error
// they lead to must say.
type parseCase struct {
	name string
	args []string
	env  map[string]string
	want []string
}

// check fails t unless err says each of tc.want.
func (tc parseCase) check(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range tc.want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// Errors name the flag or variable, the value and the form wanted.
func TestErrorsSayWhatIsWanted(t *testing.T) {
	t.Parallel()
	for _, tc := range []parseCase{
		{"flag", []string{"-max-things", "many"}, nil, []string{"-max-things", `"many"`, "want a whole number"}},
		{"duration flag", []string{"-wait", "soon"}, nil, []string{"-wait", `"soon"`, "a duration such as 15s"}},
		{"variable", nil, map[string]string{"CMD_MAX_THINGS": "x"}, []string{`CMD_MAX_THINGS="x"`, "-max-things", "want a whole number"}},
		{"argument", []string{"serve"}, nil, []string{"unexpected arguments: serve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs, _, _, _ := newSet()
			tc.check(t, fs.Parse(tc.args, env(tc.env)))
		})
	}
}

// The environment sets a flag, the command line wins, and an action flag
// has no variable.
func TestEnvironmentThenFlags(t *testing.T) {
	t.Parallel()
	fs, n, d, v := newSet()
	err := fs.Parse([]string{"-wait", "2s"}, env(map[string]string{"CMD_MAX_THINGS": "7", "CMD_WAIT": "5s", "CMD_VERSION": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if *n != 7 || *d != 2*time.Second || *v {
		t.Errorf("max-things %d, wait %v, version %v", *n, *d, *v)
	}
	if u := fs.Lookup("max-things").Usage; !strings.Contains(u, "(env CMD_MAX_THINGS)") {
		t.Errorf("usage %q does not name the variable", u)
	}
	if u := fs.Lookup("version").Usage; strings.Contains(u, "env") {
		t.Errorf("the action's usage %q names a variable", u)
	}
	if err := fs.Parse([]string{"-h"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// A flag the command line gets wrong is said once, by the command, with a
// pointer to -h: the flag package wrote it before the whole list of flags,
// and the command said it again after.
func TestParseErrorIsSaidOnce(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-nope"}, {"-max-things", "many"}} {
		var out strings.Builder
		fs := New("cmd", "CMD", &out)
		fs.Int("max-things", 3, "most things")
		err := fs.Parse(args, env(nil))
		if err == nil || !strings.Contains(err.Error(), "-h lists the flags") {
			t.Errorf("%v: error %v, want one that points to -h", args, err)
		}
		if out.Len() > 0 {
			t.Errorf("%v: the flag set wrote %q besides returning %v", args, out.String(), err)
		}
	}
}

// A value the environment set, found wrong once parsed, is named by its
// variable as the errors of Parse name it; the flag's name is for a value
// the command line gave.
func TestExplainNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []parseCase{
		{"variable", nil, map[string]string{"CMD_WAIT": "-0.5m"}, []string{`CMD_WAIT="-0.5m" (the variable of -wait): want a positive duration`}},
		{"flag", []string{"-wait", "-1s"}, nil, []string{"-wait -1s: want a positive duration"}},
		{"flag over variable", []string{"-wait", "-2s"}, map[string]string{"CMD_WAIT": "-1s"}, []string{"-wait -2s: want a positive duration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs, _, d, _ := newSet()
			if err := fs.Parse(tc.args, env(tc.env)); err != nil {
				t.Fatal(err)
			}
			var errs Errors
			errs.Addf("max-things", 1, "fine, but said") // set by neither
			errs.Addf("wait", *d, "want a positive duration")
			tc.want = append(tc.want, "-max-things 1: fine") // named by its flag
			tc.check(t, fs.Explain(errs.Err()))
		})
	}
}

func TestErrorsGatherEveryProblem(t *testing.T) {
	t.Parallel()
	var errs Errors
	errs.Addf("log-format", "xml", "want json or text")
	errs.Addf("max-depth", -1, "want 0 (no limit) or a positive whole number")
	got := errs.Err().Error()
	for _, w := range []string{`-log-format "xml": want json or text`, "-max-depth -1: want 0"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
	if (Errors{}).Err() != nil {
		t.Error("no problems, but an error")
	}
}

// The list of flags (-h) gives each default that is not its type's zero
// value, and nothing else: the flag package asks a zero value of each
// flag's type for its String to tell, which wrapped nothing and panicked.
func TestHelpListsTheDefaults(t *testing.T) {
	t.Parallel()
	var help strings.Builder
	fs := New("cmd", "CMD", &help)
	fs.Int("max-things", 3, "most things")
	fs.Duration("wait", time.Second, "how long")
	fs.String("name", "", "a name")
	fs.Int("few", 0, "how few")
	fs.Bool("quiet", false, "say less")
	if err := fs.Parse([]string{"-h"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	out := help.String()
	for _, w := range []string{"(default 3)", "(default 1s)"} {
		if !strings.Contains(out, w) {
			t.Errorf("-h does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "panic") || strings.Count(out, "default") != 2 {
		t.Errorf("-h:\n%s", out)
	}
}
