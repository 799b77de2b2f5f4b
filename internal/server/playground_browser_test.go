package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/costgw/gateway/upstream/sim"
	"github.com/costgw/gateway/web/playground"
)

// chromiumPath is Debian's Chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// defaultArtifacts is artifacts/ in the module root, which .gitignore
// leaves out; a test runs in its package's folder, two below the root.
var defaultArtifacts = filepath.Join("..", "..", "artifacts")

// artifactsDir is where the browser test keeps its screenshots: $ARTIFACTS_DIR,
// or defaultArtifacts.
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		dir = defaultArtifacts
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPlaygroundInBrowser opens the playground of a gateway on the
// simulator in headless Chromium, runs the starter query through GraphiQL's
// run button, checks that budget data is rendered, keeps screenshots, and
// opens the documentation explorer. It also checks that the page loads
// nothing from another origin and reports no error.
func TestPlaygroundInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: no Chromium at %s (apt-get install chromium; .ci/run does)", chromiumPath)
	}
	if !playground.Built() {
		t.Skip("skipping the browser test: the playground is not built (make test builds it)")
	}
	gw := startGateway(t, nil)

	// The first budget's name, asked for independently through the API: the
	// page must show it.
	status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, `{ budgets(first: 1) { nodes { name } } }`)
	if err != nil || status != http.StatusOK || len(ans.Errors) > 0 {
		t.Fatalf("first budget: status %d, %v, %+v", status, err, ans.Errors)
	}
	var first struct {
		Budgets struct{ Nodes []struct{ Name string } }
	}
	if err := json.Unmarshal(ans.Data, &first); err != nil || len(first.Budgets.Nodes) != 1 {
		t.Fatalf("first budget: %s: %v", ans.Data, err)
	}
	firstName := first.Budgets.Nodes[0].Name

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	// Everything the page requests, and every error it reports (exceptions,
	// console errors, Content-Security-Policy violations), is recorded.
	var mu sync.Mutex
	var requested, problems []string
	err = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requested = append(requested, e.Request.URL)
		case *cdpruntime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problems = append(problems, "exception: "+msg)
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console.error: "+strings.Join(args, " "))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, fmt.Sprintf("%s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	report := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(problems, "\n")
	}

	dir := artifactsDir(t)
	screenshot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	// editorValue is JavaScript that reads the whole text of the CodeMirror
	// editor under selector, not only the lines it has drawn.
	editorValue := func(selector string) string {
		return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e && e.CodeMirror ? e.CodeMirror.getValue() : ""; })()`, selector)
	}
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v\nproblems:\n%s", expr, err, report())
		}
		return v
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v\nproblems:\n%s", what, err, report())
		}
	}

	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("log.enable: %v", err)
	}
	do("loading the playground",
		chromedp.Navigate(gw.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	)
	// GraphiQL fills its editors after it has drawn them.
	do("waiting for the editors",
		poll(editorValue(".graphiql-query-editor .CodeMirror")+`.includes("budgets")`),
		poll(editorValue(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")+` !== ""`),
	)
	query := eval(editorValue(".graphiql-query-editor .CodeMirror"))
	headers := eval(editorValue(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"))
	if !strings.Contains(query, "budgets(first: 5)") || !strings.Contains(query, "plannings") {
		t.Errorf("the query editor does not hold the starter query:\n%s", query)
	}
	if !strings.Contains(headers, `"Authorization": "Bearer `+sim.DemoKey+`"`) {
		t.Errorf("the visible headers editor does not preset the demo key:\n%s", headers)
	}

	// Run the starter query with GraphiQL's run button.
	do("running the starter query",
		chromedp.Click(chromedp.CSS(".graphiql-execute-button")),
		poll(editorValue(".result-window .CodeMirror")+`.includes('"budgets"')`),
		poll(fmt.Sprintf(`document.querySelector(".result-window").innerText.includes(%q)`, firstName)),
	)
	result := eval(editorValue(".result-window .CodeMirror"))
	rendered := eval(`document.querySelector(".result-window").innerText`)
	screenshot("playground.png")

	var got struct {
		Data struct {
			Budgets struct {
				Nodes []struct {
					Name    string
					Metrics struct{ TotalTarget float64 }
					Actuals struct {
						Total    float64
						ByPeriod []struct{ Period string }
					}
					Plannings []struct {
						Dimension1  string
						TargetItems []struct{ DimensionValue string }
					}
				}
			}
		}
		Errors []any
	}
	if err := json.Unmarshal([]byte(result), &got); err != nil {
		t.Fatalf("the result pane does not hold JSON: %v\n%s", err, result)
	}
	nodes := got.Data.Budgets.Nodes
	switch {
	case len(got.Errors) > 0:
		t.Errorf("the starter query answered errors: %v", got.Errors)
	case len(nodes) != 5:
		t.Errorf("the result shows %d budgets, want 5", len(nodes))
	case nodes[0].Name != firstName:
		t.Errorf("the first budget shown is %q, want %q", nodes[0].Name, firstName)
	case nodes[0].Metrics.TotalTarget <= 0 || len(nodes[0].Actuals.ByPeriod) == 0 ||
		len(nodes[0].Plannings) == 0 || len(nodes[0].Plannings[0].TargetItems) == 0:
		t.Errorf("the first budget lacks metrics, actuals or plannings: %+v", nodes[0])
	}
	if !strings.Contains(rendered, `"totalTarget"`) {
		t.Errorf("the rendered result pane does not show budget metrics:\n%s", rendered)
	}

	// The documentation explorer: open it, then the Query type, which lists
	// the budgets field.
	do("opening the documentation explorer",
		chromedp.Click(chromedp.CSS(`button[aria-label="Show Documentation Explorer"]`)),
		poll(`[...document.querySelectorAll(".graphiql-doc-explorer a")].some(a => a.textContent === "Query")`),
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".graphiql-doc-explorer a")].find(a => a.textContent === "Query").click()`),
		poll(`(document.querySelector(".graphiql-doc-explorer-title") || {}).textContent === "Query"`),
	)
	title := eval(`document.querySelector(".graphiql-doc-explorer-title").textContent`)
	docs := eval(`document.querySelector(".graphiql-doc-explorer-content").innerText`)
	screenshot("playground-docs.png")
	if title != "Query" || !strings.Contains(docs, "budgets") {
		t.Errorf("the documentation explorer shows %q without the budgets field:\n%s", title, docs)
	}

	// A reload restores the tabs from the browser's storage, where GraphiQL
	// keeps no headers: the demo key must come back from the preset.
	do("reloading the playground",
		chromedp.Navigate(gw.url+"/"),
		poll(editorValue(".graphiql-query-editor .CodeMirror")+`.includes("budgets")`),
		poll(editorValue(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")+` !== ""`),
	)
	if headers := eval(editorValue(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")); !strings.Contains(headers, "Bearer "+sim.DemoKey) {
		t.Errorf("after a reload the headers editor holds %q, want the demo key", headers)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(problems, "\n"))
	}
	for _, u := range requested {
		if !strings.HasPrefix(u, gw.url+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside the gateway", u)
		}
	}
	if len(requested) < 3 {
		t.Errorf("saw only %d requests: %q", len(requested), requested)
	}
}

// TestArtifactsAreIgnored: the screenshots go where git does not track
// them, so `make test` changes no tracked file (they went to
// internal/server/artifacts/, which was committed).
func TestArtifactsAreIgnored(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	dir, err := filepath.Abs(defaultArtifacts)
	if err != nil || dir != filepath.Join(root, "artifacts") {
		t.Fatalf("the screenshots go to %s, want %s", dir, filepath.Join(root, "artifacts"))
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git to ask what it ignores")
	}
	if out, err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", "artifacts/playground.png").CombinedOutput(); err != nil {
		t.Errorf("git does not ignore artifacts/ (%v %s)", err, out)
	}
}
