// Package config reads a command's settings from its flags and from
// environment variables named after them, the way both commands of this
// module do: PREFIX_ and the flag's name in capitals with underscores for
// dashes (-log-level: COSTGW_LOG_LEVEL). The environment is read first and
// the command line wins.
//
// Every error names the flag or variable, the value given and the form
// expected, so a typo in a manifest is found from the first log line.
package config

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"time"
)

// FlagSet is a flag.FlagSet whose flags also read the environment.
type FlagSet struct {
	*flag.FlagSet
	prefix  string
	actions map[string]bool
	wants   map[string]string
	fromEnv map[string]string // what the environment set each flag to that the command line did not
}

// New returns a FlagSet for the command name whose environment variables
// start with prefix (such as "COSTGW"). Help and errors go to output.
func New(name, prefix string, output io.Writer) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	return &FlagSet{FlagSet: fs, prefix: prefix, actions: map[string]bool{}, wants: map[string]string{}, fromEnv: map[string]string{}}
}

// EnvName is the environment variable of the flag name.
func (fs *FlagSet) EnvName(name string) string {
	return fs.prefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Action marks flags that run once and exit instead of configuring the
// command (-version): they have no environment variable, which would turn
// every start into that action.
func (fs *FlagSet) Action(names ...string) {
	for _, n := range names {
		fs.actions[n] = true
	}
}

// IsAction reports whether the flag name was marked with Action.
func (fs *FlagSet) IsAction(name string) bool { return fs.actions[name] }

// Want records the form a flag's value must have, for its error messages
// ("a duration such as 15s"). Flags of the basic kinds have one by default.
func (fs *FlagSet) Want(name, form string) { fs.wants[name] = form }

// Parse reads the environment (lookupEnv, usually os.LookupEnv), then args.
// It names each flag's variable in its usage line, refuses arguments that
// are not flags, and returns flag.ErrHelp for -h, having written the usage.
// Other errors are returned, not written: the command says them once,
// where the flag package would write each before the whole list of flags.
func (fs *FlagSet) Parse(args []string, lookupEnv func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if zeroDefault(f) {
			f.DefValue = "" // what the zero described's String says (-h)
		}
		f.Value = described{Value: f.Value, want: fs.want(f)}
		if fs.actions[f.Name] {
			return
		}
		f.Usage += " (env " + fs.EnvName(f.Name) + ")"
		if v, ok := lookupEnv(fs.EnvName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (the variable of -%s): %w", fs.EnvName(f.Name), v, f.Name, err))
			}
			fs.fromEnv[f.Name] = v
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.FlagSet.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.usage()
		return err
	}
	if err != nil {
		return fmt.Errorf("%w (-h lists the flags)", err)
	}
	fs.Visit(func(f *flag.Flag) { delete(fs.fromEnv, f.Name) }) // the command line won
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s (every setting is a -flag)", strings.Join(fs.Args(), " "))
	}
	return nil
}

// usage writes the list of flags, as the flag package does for -h.
func (fs *FlagSet) usage() {
	if fs.Usage != nil {
		fs.Usage()
		return
	}
	fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
	fs.PrintDefaults()
}

// Explain names, in the FlagErrors err holds (Errors.Err), the variable a
// value came from when the environment set it and the command line did not,
// as the errors of Parse do: a value from a manifest's environment is then
// found under the name the manifest gives it.
func (fs *FlagSet) Explain(err error) error {
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *FlagError:
			if v, ok := fs.fromEnv[e.Name]; ok {
				e.env, e.raw = fs.EnvName(e.Name), v
			}
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return err
}

// want is the form the value of f must have.
func (fs *FlagSet) want(f *flag.Flag) string {
	if w, ok := fs.wants[f.Name]; ok {
		return w
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case bool:
		return "true or false"
	case int, int64, uint, uint64:
		return "a whole number"
	case float64:
		return "a number"
	case time.Duration:
		return "a duration such as 15s, 500ms or 2m"
	}
	return ""
}

// described is a flag value whose parse errors say what form is wanted
// instead of the strconv error ("parse error").
type described struct {
	flag.Value
	want string
}

// zeroDefault reports whether f's default is the zero value of its type,
// which the list of flags (-h) does not show: the flag package tells by
// asking a zero value of the flag's type for its String.
func zeroDefault(f *flag.Flag) (zero bool) {
	defer func() {
		if recover() != nil {
			zero = false
		}
	}()
	t := reflect.TypeOf(f.Value)
	z := reflect.Zero(t)
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	}
	return z.Interface().(flag.Value).String() == f.DefValue
}

// String is the wrapped value's. The flag package calls it on a zero
// described too, which wraps nothing, to tell whether a flag's default is
// its type's zero value when it lists the defaults (-h).
func (d described) String() string {
	if d.Value == nil {
		return ""
	}
	return d.Value.String()
}

func (d described) Set(s string) error {
	err := d.Value.Set(s)
	if err == nil || d.want == "" {
		return err
	}
	return fmt.Errorf("want %s", d.want)
}

// Get keeps the flag.Getter of the wrapped value.
func (d described) Get() any {
	if g, ok := d.Value.(flag.Getter); ok {
		return g.Get()
	}
	return d.String()
}

// IsBoolFlag keeps -flag without a value working for boolean flags.
func (d described) IsBoolFlag() bool {
	b, ok := d.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Errors gathers the problems of a configuration, each naming its flag, so
// that one run reports them all.
type Errors []error

// Addf records a problem with the flag name's value v: "-name v: what".
func (e *Errors) Addf(name string, v any, format string, args ...any) {
	*e = append(*e, &FlagError{Name: name, Value: v, Problem: fmt.Sprintf(format, args...)})
}

// FlagError is a problem with a flag's value, as Errors.Addf records it.
type FlagError struct {
	Name    string // the flag's name, without its dash
	Value   any
	Problem string
	env     string // the variable the value came from (FlagSet.Explain); "" for the flag
	raw     string // what the variable held, as the manifest has it
}

func (e *FlagError) Error() string {
	if e.env != "" {
		return fmt.Sprintf("%s=%q (the variable of -%s): %s", e.env, e.raw, e.Name, e.Problem)
	}
	return fmt.Sprintf("-%s %v: %s", e.Name, quote(e.Value), e.Problem)
}

// Err returns the problems joined, or nil.
func (e Errors) Err() error { return errors.Join(e...) }

// quote quotes strings, so that an empty or spaced value shows as such.
func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// Main runs a command: run gets a context that ends on SIGINT or SIGTERM,
// and the command line's arguments. An error, other than the flag.ErrHelp
// of -h, is printed as "name: error" and exits 1.
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
