// Command gqlgen generates the GraphQL executor of graph/generated: gqlgen's
// own generator (github.com/99designs/gqlgen/api, configured by gqlgen.yml),
// then the executor rendered again from the same data with gqlgen's
// templates (codegen/*.gotpl of the gqlgen module in go.mod), of which those
// in templates/ in this directory take the place of gqlgen's own: they are
// gqlgen's of the version templatesBase, changed where they say "costgw:"
// (MIT licence in templates/LICENSE). What they call at run time is
// ordinary Go in graph/internal/executor. The resolvers' files are gqlgen's
// own, from resolver.gotpl in this directory (resolver.resolver_template in
// gqlgen.yml): gqlgen's template with each object's resolver a value rather
// than a pointer, so that handing one to the executor for a field allocates
// nothing. Run it from anywhere in the module:
//
//	go generate ./graph
//
// It fails when go.mod names another gqlgen than templatesBase, whose
// templates the fork's are not made from: docs/architecture.md ("The
// executor's fork") says how to carry the fork over to a new version, and
// what each change is for. It builds ./graph/... to check the result. The
// generated files stay generated: change them only here or in gqlgen.yml.
//
// What the templates change, so that a field that is a plain member of its
// Go value costs what marshalling it costs:
//
//   - A leaf field (scalar or enum) bound to a struct member, with no
//     arguments, directives or resolver, is marshalled straight from the
//     member: no field context unless an error may need the field's path,
//     no resolver closure, no boxing of the value, no middleware call. No
//     field middleware (AroundFields, a FieldInterceptor extension) sees
//     such a field; graph.NewHandler installs none.
//   - With exec.worker_limit 1, the elements of a list are marshalled one
//     after another on the caller's goroutine (executor.List).
//   - An object's own field set is an executor.Object, which writes itself
//     without gqlgen's map of aliases written, iterator and copy of each
//     field; deferred fields keep gqlgen's FieldSet (executor.Defer).
//   - The resolvers listed in inlineResolvers are called on the object's
//     goroutine rather than in a goroutine of their own: they compute from
//     the object alone and never wait.
//   - Such a leaf that cannot fail (no error needs its path) and whose
//     marshaler has an appender (a String, a Float, a Date, an enum of
//     graph/model…) is a record leaf: nothing is made for it when it is
//     resolved, and its object appends it from the struct member when the
//     answer is written.
//   - A list of values of an object type, whose selection asks only for
//     record leaves, is one executor.LeafList; an object held by a plain
//     member of its parent's record, one executor.LeafObject.
//   - An inline resolver of a scalar whose marshalling cannot fail (the
//     global ids), or of a list of objects whose selection asks only for
//     record leaves (and the loaded lists of loadedLists), is answered from
//     its resolver's answer with no field context; only an error makes the
//     field resolve the usual way, which reports it at the field's path.
package main

import (
	"embed"
	"errors"
	"fmt"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing/fstest"
	"text/template"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/99designs/gqlgen/codegen/templates"
)

//go:embed templates/*.gotpl
var templateFS embed.FS

// templatesBase is the version of gqlgen whose templates those of
// templates/ are made from, and the only one they are rendered with.
const templatesBase = "v0.17.98"

// gqlgenModule is the module whose codegen/*.gotpl are the executor's
// templates where templates/ has none of the name.
const gqlgenModule = "github.com/99designs/gqlgen"

// inlineResolvers are the resolvers that need no goroutine of their own:
// each computes its value from the object alone (an id encoded from the
// record's, a map sorted into a list, extra members re-encoded) and never
// waits for an upstream call. A resolver that loads anything stays
// concurrent, so that a list's loads overlap: TestListsOfNodesTakeOneTierPerLevel.
var inlineResolvers = map[string]bool{
	"Budget.id":                true,
	"Planning.id":              true,
	"Planning.targetItems":     true,
	"ExplorerReport.id":        true,
	"User.id":                  true,
	"Recommendation.id":        true,
	"Recommendation.extra":     true,
	"Anomaly.id":               true,
	"Anomaly.extra":            true,
	"ScheduledNotification.id": true,
}

// loadingFields counts the fields of o whose resolvers run concurrently
// (those not in inlineResolvers): the fields that may wait for an upstream
// read. An object with two or more asks the resolver root whether its reads
// are under way already (executor.ReadsStarted), and if so resolves
// them in turn on its own goroutine.
func loadingFields(o *codegen.Object) int {
	n := 0
	for _, f := range o.Fields {
		if f.IsConcurrent() && !inlineResolvers[o.Name+"."+f.Name] {
			n++
		}
	}
	return n
}

// loadedLists are resolvers of lists of objects that load, and that the
// executor may call twice: each answers from the request's loaders, which
// keep what a key came to, error included, so a second call makes no
// upstream call and answers the same (directList).
var loadedLists = map[string]bool{
	"Planning.actuals": true,
}

// neverNull are the marshal functions that never return graphql.Null and
// read no context: a non-null field marshalled by one of them cannot fail,
// so it needs no field context for an error's path.
var neverNull = map[string]bool{
	"github.com/99designs/gqlgen/graphql.MarshalString":     true,
	"github.com/99designs/gqlgen/graphql.MarshalBoolean":    true,
	"github.com/99designs/gqlgen/graphql.MarshalInt":        true,
	"github.com/99designs/gqlgen/graphql.MarshalInt32":      true,
	"github.com/99designs/gqlgen/graphql.MarshalInt64":      true,
	"github.com/99designs/gqlgen/graphql.MarshalID":         true,
	"github.com/costgw/gateway/graph/model.MarshalDate":     true,
	"github.com/costgw/gateway/graph/model.MarshalDateTime": true,
	"github.com/costgw/gateway/graph/model.MarshalFloat":    true,
	"github.com/costgw/gateway/graph/model.MarshalString":   true,
	"github.com/costgw/gateway/graph/model.MarshalID":       true,
	"github.com/costgw/gateway/graph/model.MarshalInt64":    true,
}

// modelPkg holds the enums bound to functions (graph/model/enums.go), whose
// marshal functions answer UNKNOWN for a value they do not know, never null.
const modelPkg = "github.com/costgw/gateway/graph/model"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gqlgen:", err)
		os.Exit(1)
	}
}

func run() error {
	// The templates first: gqlgen's generator writes its own executor, which
	// a wrong version would leave in graph/generated.
	tpl, err := executorTemplates()
	if err != nil {
		return err
	}
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		return err
	}
	if cfg.Exec.Layout != config.ExecLayoutSingleFile {
		return fmt.Errorf("exec.layout %q: only single-file is rendered with these templates", cfg.Exec.Layout)
	}
	if cfg.UseFunctionSyntaxForExecutionContext {
		return errors.New("use_function_syntax_for_execution_context: these templates call the executor's methods")
	}
	capture := &captureData{}
	if err := api.Generate(cfg, api.AddPlugin(capture)); err != nil {
		return err
	}
	data := capture.data
	if data == nil {
		return errors.New("gqlgen gave no data to render")
	}
	fieldDirectives := len(data.AllDirectives.LocationDirectives("FIELD")) > 0
	objects := map[string]*codegen.Object{}
	for _, o := range data.Objects {
		objects[o.Name] = o
	}
	// leafObject reports whether the field f holds an object that is
	// written like a record leaf when its selection allows (leafObjects);
	// heldLeafObjects are the types of such fields, which get the function.
	leafObject := func(f *codegen.Field) bool {
		if fieldDirectives || !plainMember(f) || f.TypeReference.IsSlice() {
			return false
		}
		o := objects[f.TypeReference.Definition.Name]
		return o != nil && leafObjects(o)
	}
	recordLeaves := func(o *codegen.Object) bool {
		return !fieldDirectives && slices.ContainsFunc(o.Fields, recordLeaf)
	}
	// quick reports whether the field f is a direct list as rendered.
	quick := func(f *codegen.Field) bool {
		if fieldDirectives || !directList(f) || cfg.Exec.WorkerLimit != 1 {
			return false
		}
		o := objects[f.TypeReference.Elem().Definition.Name]
		return o != nil && !o.Root && recordLeaves(o)
	}
	if err := checkInline(data, quick); err != nil {
		return err
	}
	// kept are the types of a mutation's outcome, which -max-answer-values
	// does not cut (its writes are made by the time its answer is): the
	// mutation root, the payloads its fields return, and the objects those
	// payloads list (userErrors). What a payload holds beyond them (its
	// budget, and all below) is counted and cut as any answer's.
	kept := map[string]bool{}
	if m := cfg.Schema.Mutation; m != nil {
		kept[m.Name] = true
		for _, f := range m.Fields {
			p := cfg.Schema.Types[f.Type.Name()]
			if p == nil || p.Kind != ast.Object {
				continue
			}
			kept[p.Name] = true
			for _, pf := range p.Fields {
				if pf.Type.Elem != nil && cfg.Schema.Types[pf.Type.Name()].Kind == ast.Object {
					kept[pf.Type.Name()] = true
				}
			}
		}
	}
	heldLeafObjects := map[string]bool{}
	for _, o := range data.Objects {
		for _, f := range o.Fields {
			if leafObject(f) {
				heldLeafObjects[f.TypeReference.Definition.Name] = true
			}
		}
	}
	err = templates.Render(templates.Options{
		PackageName:     cfg.Exec.Package,
		Filename:        cfg.Exec.Filename,
		Data:            data,
		RegionTags:      true,
		GeneratedHeader: true,
		Packages:        cfg.Packages,
		TemplateFS:      tpl,
		PruneOptions:    cfg.GetPruneOptions(),
		Funcs: template.FuncMap{
			"plainLeaf":      func(f *codegen.Field) bool { return !fieldDirectives && plainLeaf(f) },
			"leafNeedsPath":  leafNeedsPath,
			"inlineResolver": func(f *codegen.Field) bool { return inlineResolvers[f.Object.Name+"."+f.Name] },
			"loadingFields":  loadingFields,
			"recordLeaf":     func(f *codegen.Field) bool { return !fieldDirectives && recordLeaf(f) },
			"recordLeaves":   recordLeaves,
			"recordAppend":   recordAppend,
			"someRecordLeaves": func(t *config.TypeReference) bool {
				o := objects[t.Definition.Name]
				return o != nil && !o.Root && recordLeaves(o)
			},
			"recordCheck": recordCheck,
			"inPlace":     inPlace,
			"leafObjects": func(o *codegen.Object) bool { return heldLeafObjects[o.Name] },
			"leafObject":  leafObject,
			"quickResolver": func(f *codegen.Field) bool {
				return !fieldDirectives && quickResolver(f)
			},
			"recordChecks": func(name string) bool {
				o := objects[name]
				return o != nil && recordChecks(o)
			},
			"directList": quick,
			"answerKept": func(name string) bool { return kept[name] },
		},
	})
	if err != nil {
		return fmt.Errorf("rendering %s: %w", cfg.Exec.Filename, err)
	}
	build := exec.Command("go", "build", "./"+filepath.ToSlash(filepath.Dir(relative(cfg.Exec.Filename)))+"/...")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("the generated executor does not build: %w", err)
	}
	return nil
}

// executorTemplates returns gqlgen's executor templates (codegen/*.gotpl of
// the module in go.mod) with those of templates/ in place of gqlgen's of the
// same name.
func executorTemplates() (fs.FS, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", gqlgenModule).Output()
	if err != nil {
		return nil, fmt.Errorf("finding %s: %w", gqlgenModule, err)
	}
	version, dir, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || dir == "" {
		return nil, fmt.Errorf("finding %s: go list says %q (run go mod download)", gqlgenModule, out)
	}
	if version != templatesBase {
		return nil, fmt.Errorf("go.mod has %s %s, but the templates of internal/gqlgen/templates are made from %s's: "+
			"carry them over first (docs/architecture.md, \"Upgrading gqlgen\")", gqlgenModule, version, templatesBase)
	}
	ours, err := fs.Sub(templateFS, "templates")
	if err != nil {
		return nil, err
	}
	theirs, err := filepath.Glob(filepath.Join(dir, "codegen", "*.gotpl"))
	if err != nil {
		return nil, err
	}
	tpl := fstest.MapFS{}
	for _, path := range theirs {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		tpl[filepath.Base(path)] = &fstest.MapFile{Data: b}
	}
	forked, err := fs.Glob(ours, "*.gotpl")
	if err != nil {
		return nil, err
	}
	for _, name := range forked {
		if tpl[name] == nil {
			return nil, fmt.Errorf("templates/%s: gqlgen %s has no template of that name", name, version)
		}
		b, err := fs.ReadFile(ours, name)
		if err != nil {
			return nil, err
		}
		tpl[name] = &fstest.MapFile{Data: b}
	}
	return tpl, nil
}

// relative returns path relative to the working directory, the module root.
func relative(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil {
		return r
	}
	return path
}

// checkInline fails when inlineResolvers or loadedLists names a field that
// is not a resolver of the schema, a field in both, or a loaded list that is
// not rendered as a direct list (quick), so that neither list can go stale
// silently.
func checkInline(data *codegen.Data, quick func(*codegen.Field) bool) error {
	found := map[string]bool{}
	for _, o := range data.Objects {
		for _, f := range o.Fields {
			key := o.Name + "." + f.Name
			if !inlineResolvers[key] && !loadedLists[key] {
				continue
			}
			if !f.IsResolver || len(f.Args) > 0 || f.HasDirectives() || f.IsBatch() {
				return fmt.Errorf("%s is not a resolver without arguments or directives", key)
			}
			if inlineResolvers[key] && loadedLists[key] {
				return fmt.Errorf("%s is in both inlineResolvers and loadedLists: a resolver that loads is not inline", key)
			}
			if loadedLists[key] && !quick(f) {
				return fmt.Errorf("loadedLists: %s is not written as a direct list (a list of objects with record leaves)", key)
			}
			found[key] = true
		}
	}
	var missing []string
	for _, names := range []map[string]bool{inlineResolvers, loadedLists} {
		for key := range names {
			if !found[key] {
				missing = append(missing, key)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		return fmt.Errorf("no such field: %s", strings.Join(missing, ", "))
	}
	return nil
}

// plainLeaf reports whether f is a leaf (scalar or enum) bound to a struct
// member of a non-root object, with no resolver, arguments or directives:
// marshalling the member is all it takes.
func plainLeaf(f *codegen.Field) bool {
	if !plainMember(f) {
		return false
	}
	k := f.TypeReference.Definition.Kind
	return k == ast.Scalar || k == ast.Enum
}

// plainMember reports whether f is a member of its object's record, read
// as it is: no resolver, method, arguments or directives.
func plainMember(f *codegen.Field) bool {
	return !f.Object.Root && !f.Object.Stream && !f.IsResolver && f.IsVariable() && !f.HasHaser && !f.IsBatch() &&
		len(f.Args) == 0 && !f.HasDirectives() && f.TypeReference != nil && f.TypeReference.Definition != nil
}

// quickResolver reports whether f, one of inlineResolvers, is marshalled
// from its resolver's answer with no field context: a scalar or enum with no
// arguments or directives, whose marshaling cannot fail. The field context
// is made only when the resolver returns an error, by resolving the field
// again the usual way, which reports the error at the field's path; an
// inline resolver computes from the object alone, so it answers the same.
// It must not read the field context (graphql.GetFieldContext).
func quickResolver(f *codegen.Field) bool {
	if !inlineResolvers[f.Object.Name+"."+f.Name] || !bareResolver(f) {
		return false
	}
	k := f.TypeReference.Definition.Kind
	return (k == ast.Scalar || k == ast.Enum) && !leafNeedsPath(f)
}

// directList reports whether f, one of inlineResolvers or loadedLists, is
// written from its resolver's answer with no field context when its
// selection asks only for record leaves of its elements' type: a list of
// values (not pointers) of an object type, with no arguments or
// directives. Only then is the resolver called; an error or an element
// whose check fails makes the field resolve the usual way, which calls the
// resolver again and reports it at the field's path, and a panic is reported
// at that path at once. Like a quickResolver it must not read the field
// context.
func directList(f *codegen.Field) bool {
	key := f.Object.Name + "." + f.Name
	if !inlineResolvers[key] && !loadedLists[key] || !bareResolver(f) || !f.TypeReference.IsSlice() {
		return false
	}
	e := f.TypeReference.Elem()
	return e != nil && !e.IsSlice() && inPlace(e)
}

// bareResolver reports whether f, of an object that is not a root, has no
// arguments or directives and is not batched: what a quick resolver or a
// direct list may be.
func bareResolver(f *codegen.Field) bool {
	return !f.Object.Root && len(f.Args) == 0 && !f.HasDirectives() && !f.IsBatch() &&
		f.TypeReference != nil && f.TypeReference.Definition != nil
}

// leafObjects reports whether an object of type o, held by a plain member
// of its parent's record, is written like a record leaf when its selection
// asks only for record leaves (executor.LeafObject): o has record leaves, and none
// checks its value, whose failure would need the field's context for its
// error.
func leafObjects(o *codegen.Object) bool {
	if o.Root || !slices.ContainsFunc(o.Fields, recordLeaf) {
		return false
	}
	return !recordChecks(o)
}

// recordChecks reports whether a record leaf of o checks its value when it is
// resolved (recordCheck).
func recordChecks(o *codegen.Object) bool {
	return slices.ContainsFunc(o.Fields, func(f *codegen.Field) bool { return recordLeaf(f) && recordCheck(f, "v") != "" })
}

// leafNeedsPath reports whether marshalling the plain leaf f may report an
// error, which needs the field's context for its path: a context marshaler
// (it may fail), or a non-null field whose value may marshal to null.
func leafNeedsPath(f *codegen.Field) bool {
	t := f.TypeReference
	if t.IsContext || t.IsSlice() {
		return true
	}
	if !t.GQL.NonNull {
		return false
	}
	if t.IsNilable() || t.Marshaler == nil {
		return true
	}
	return !neverNullFunc(t.Marshaler, t.Definition.Kind == ast.Enum)
}

// appender is how a record leaf is written: fn(b, typ(v)) appends what the
// field's marshal function writes for v; check, when set, is called with v
// when the field is resolved, so that a value the marshaler would refuse
// panics where the executor recovers, not while the answer is written.
type appender struct{ fn, typ, check string }

// appenders are the marshal functions whose leaves may be written later,
// with the append function of graph/model that writes the same bytes.
var appenders = map[string]appender{
	"github.com/costgw/gateway/graph/model.MarshalString":   {fn: "model.AppendString", typ: "string"},
	"github.com/costgw/gateway/graph/model.MarshalID":       {fn: "model.AppendString", typ: "string"},
	"github.com/costgw/gateway/graph/model.MarshalFloat":    {fn: "model.AppendFloat", typ: "float64", check: "model.CheckFloat"},
	"github.com/costgw/gateway/graph/model.MarshalDate":     {fn: "model.AppendDate", typ: "upstream.Date"},
	"github.com/costgw/gateway/graph/model.MarshalDateTime": {fn: "model.AppendDateTime", typ: "upstream.Timestamp"},
	"github.com/costgw/gateway/graph/model.MarshalInt64":    {fn: "model.AppendInt64", typ: "int64"},
	"github.com/99designs/gqlgen/graphql.MarshalInt":        {fn: "model.AppendInt", typ: "int"},
	"github.com/99designs/gqlgen/graphql.MarshalBoolean":    {fn: "model.AppendBoolean", typ: "bool"},
}

// appenderOf returns the appender of a leaf of type t, if it has one: from
// appenders, or for an enum bound to graph/model's functions, its Append
// function (MarshalX's is AppendX, enums.go), which appends the upstream
// string's GraphQL value, UNKNOWN for one the schema does not know.
func appenderOf(t *config.TypeReference) (appender, bool) {
	if a, ok := appenders[funcName(t.Marshaler)]; ok {
		return a, true
	}
	fn := t.Marshaler
	if t.Definition.Kind == ast.Enum && fn.Pkg() != nil && fn.Pkg().Path() == modelPkg && strings.HasPrefix(fn.Name(), "Marshal") {
		return appender{fn: "model.Append" + strings.TrimPrefix(fn.Name(), "Marshal"), typ: "string"}, true
	}
	return appender{}, false
}

// recordLeaf reports whether the plain leaf f is written later: its
// executor.Object appends it from the struct member when the answer is written,
// with no Marshaler made for it when it is resolved. Such a leaf cannot
// fail (no path needed), and its marshaler has an appender.
func recordLeaf(f *codegen.Field) bool {
	if !plainLeaf(f) || leafNeedsPath(f) || f.TypeReference.Marshaler == nil {
		return false
	}
	_, ok := appenderOf(f.TypeReference)
	return ok
}

// recordAppend is the code that appends the record leaf f of o to b.
func recordAppend(f *codegen.Field, o string) string {
	a, _ := appenderOf(f.TypeReference)
	v := o + "." + f.GoFieldName
	if f.TypeReference.IsPtr() {
		return fmt.Sprintf("if %s == nil {\n\treturn append(b, \"null\"...)\n}\nreturn %s(b, %s(*%s))", v, a.fn, a.typ, v)
	}
	return fmt.Sprintf("return %s(b, %s(%s))", a.fn, a.typ, v)
}

// recordCheck is the code that checks the record leaf f of o when it is
// resolved, or nothing.
func recordCheck(f *codegen.Field, o string) string {
	a, _ := appenderOf(f.TypeReference)
	if a.check == "" {
		return ""
	}
	v := o + "." + f.GoFieldName
	if f.TypeReference.IsPtr() {
		return fmt.Sprintf("if %s != nil {\n\t%s(*%s)\n}", v, a.check, v)
	}
	return fmt.Sprintf("%s(%s)", a.check, v)
}

// inPlace reports whether a list's element of type t is resolved from the
// element itself (&v[i]) rather than from a copy: a value (not a pointer) of
// an object type, whose record leaves would otherwise keep the copy on the
// heap.
func inPlace(t *config.TypeReference) bool {
	return !t.IsNilable() && t.Definition.Kind == ast.Object
}

func funcName(fn *types.Func) string {
	if fn.Pkg() == nil {
		return fn.Name()
	}
	return fn.Pkg().Path() + "." + fn.Name()
}

func neverNullFunc(fn *types.Func, enum bool) bool {
	if fn.Pkg() == nil {
		return false
	}
	return neverNull[funcName(fn)] || (enum && fn.Pkg().Path() == modelPkg)
}

// captureData is a gqlgen plugin that keeps the data gqlgen renders its
// executor from.
type captureData struct{ data *codegen.Data }

func (*captureData) Name() string { return "costgw-exec-templates" }

func (c *captureData) GenerateCode(data *codegen.Data) error {
	c.data = data
	return nil
}
