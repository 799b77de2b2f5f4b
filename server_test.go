package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"testing"
)

// The command's main is server.go, as the design names it (the root of a
// request's path), and stays thin: a signal context and server.Run.
func TestServerGoIsTheMain(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "server.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var funcs []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok {
			funcs = append(funcs, fn.Name.Name)
		}
	}
	if f.Name.Name != "main" || len(funcs) != 1 || funcs[0] != "main" {
		t.Errorf("server.go is package %s with the functions %v; want package main with main alone", f.Name.Name, funcs)
	}
	if _, err := os.Stat("main.go"); err == nil {
		t.Error("main.go exists beside server.go: the command's main is server.go")
	}
}
