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
// nothing from another origin and reports no error. The steps share one
// page, in order; a step that stops at a fatal failure ends the walk, since
// it leaves the page as the next ones do not expect.
func TestPlaygroundInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: no Chromium at %s (apt-get install chromium; .ci/run does)", chromiumPath)
	}
	if !playground.Built() {
		t.Skip("skipping the browser test: the playground is not built (make test builds it)")
	}
	gw := startGateway(t, nil)
	b := openBrowser(t, gw)
	for _, step := range []struct {
		name string
		run  func(*testing.T, *browser)
	}{
		{"the editors hold the starter query and the demo key", browserLoad},
		{"the run button shows the first budgets", browserRun},
		{"the documentation explorer lists the budgets field", browserDocs},
		{"a reload restores the demo key", browserReload},
	} {
		finished := false
		t.Run(step.name, func(t *testing.T) {
			step.run(t, b)
			finished = true // not after t.Fatal
		})
		if !finished {
			break
		}
	}
	b.check(t)
}

// browser is a page of headless Chromium on the playground of gw, with
// what the page requested and the errors it reported.
type browser struct {
	ctx       context.Context
	gw        *gateway
	firstName string // the first budget's name, asked for through the API

	mu                  sync.Mutex
	requested, problems []string
}

// openBrowser starts Chromium, closed when the test ends, recording every
// request of the page and every error it reports (exceptions, console
// errors, Content-Security-Policy violations).
func openBrowser(t *testing.T, gw *gateway) *browser {
	t.Helper()
	b := &browser{gw: gw, firstName: firstBudgetName(t, gw)}
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
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	b.ctx = ctx
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("log.enable: %v", err)
	}
	return b
}

// firstBudgetName asks gw for the first budget's name: the page must show it.
func firstBudgetName(t *testing.T, gw *gateway) string {
	t.Helper()
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
	return first.Budgets.Nodes[0].Name
}

// record keeps what the page requests and the errors it reports.
func (b *browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requested = append(b.requested, e.Request.URL)
	case *cdpruntime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, "exception: "+msg)
	case *cdpruntime.EventConsoleAPICalled:
		if e.Type == cdpruntime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.problems = append(b.problems, "console.error: "+strings.Join(args, " "))
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			b.problems = append(b.problems, fmt.Sprintf("%s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// report is the errors the page reported so far.
func (b *browser) report() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.problems, "\n")
}

// check fails if the page reported an error, or requested anything but
// the gateway's own.
func (b *browser) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(b.problems, "\n"))
	}
	for _, u := range b.requested {
		if !strings.HasPrefix(u, b.gw.url+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside the gateway", u)
		}
	}
	if len(b.requested) < 3 {
		t.Errorf("saw only %d requests: %q", len(b.requested), b.requested)
	}
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(artifactsDir(t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v\nproblems:\n%s", expr, err, b.report())
	}
	return v
}

func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("%s: %v\nproblems:\n%s", what, err, b.report())
	}
}

// editorValue is JavaScript that reads the whole text of the CodeMirror
// editor under selector, not only the lines it has drawn.
func editorValue(selector string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e && e.CodeMirror ? e.CodeMirror.getValue() : ""; })()`, selector)
}

func pagePoll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))
}

// The editors of the playground.
const (
	queryEditor   = ".graphiql-query-editor .CodeMirror"
	headersEditor = ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"
	resultPane    = ".result-window .CodeMirror"
)

func browserLoad(t *testing.T, b *browser) {
	b.do(t, "loading the playground",
		chromedp.Navigate(b.gw.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	)
	// GraphiQL fills its editors after it has drawn them.
	b.do(t, "waiting for the editors",
		pagePoll(editorValue(queryEditor)+`.includes("budgets")`),
		pagePoll(editorValue(headersEditor)+` !== ""`),
	)
	query := b.eval(t, editorValue(queryEditor))
	headers := b.eval(t, editorValue(headersEditor))
	if !strings.Contains(query, "budgets(first: 5)") || !strings.Contains(query, "plannings") {
		t.Errorf("the query editor does not hold the starter query:\n%s", query)
	}
	if !strings.Contains(headers, `"Authorization": "Bearer `+sim.DemoKey+`"`) {
		t.Errorf("the visible headers editor does not preset the demo key:\n%s", headers)
	}
}

// browserRun runs the starter query with GraphiQL's run button.
func browserRun(t *testing.T, b *browser) {
	b.do(t, "running the starter query",
		chromedp.Click(chromedp.CSS(".graphiql-execute-button")),
		pagePoll(editorValue(resultPane)+`.includes('"budgets"')`),
		pagePoll(fmt.Sprintf(`document.querySelector(".result-window").innerText.includes(%q)`, b.firstName)),
	)
	result := b.eval(t, editorValue(resultPane))
	rendered := b.eval(t, `document.querySelector(".result-window").innerText`)
	b.screenshot(t, "playground.png")

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
	case nodes[0].Name != b.firstName:
		t.Errorf("the first budget shown is %q, want %q", nodes[0].Name, b.firstName)
	case nodes[0].Metrics.TotalTarget <= 0 || len(nodes[0].Actuals.ByPeriod) == 0 ||
		len(nodes[0].Plannings) == 0 || len(nodes[0].Plannings[0].TargetItems) == 0:
		t.Errorf("the first budget lacks metrics, actuals or plannings: %+v", nodes[0])
	}
	if !strings.Contains(rendered, `"totalTarget"`) {
		t.Errorf("the rendered result pane does not show budget metrics:\n%s", rendered)
	}
}

// browserDocs opens the documentation explorer, then the Query type, which
// lists the budgets field.
func browserDocs(t *testing.T, b *browser) {
	b.do(t, "opening the documentation explorer",
		chromedp.Click(chromedp.CSS(`button[aria-label="Show Documentation Explorer"]`)),
		pagePoll(`[...document.querySelectorAll(".graphiql-doc-explorer a")].some(a => a.textContent === "Query")`),
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".graphiql-doc-explorer a")].find(a => a.textContent === "Query").click()`),
		pagePoll(`(document.querySelector(".graphiql-doc-explorer-title") || {}).textContent === "Query"`),
	)
	title := b.eval(t, `document.querySelector(".graphiql-doc-explorer-title").textContent`)
	docs := b.eval(t, `document.querySelector(".graphiql-doc-explorer-content").innerText`)
	b.screenshot(t, "playground-docs.png")
	if title != "Query" || !strings.Contains(docs, "budgets") {
		t.Errorf("the documentation explorer shows %q without the budgets field:\n%s", title, docs)
	}
}

// browserReload reloads the page, which restores the tabs from the
// browser's storage, where GraphiQL keeps no headers: the demo key must
// come back from the preset.
func browserReload(t *testing.T, b *browser) {
	b.do(t, "reloading the playground",
		chromedp.Navigate(b.gw.url+"/"),
		pagePoll(editorValue(queryEditor)+`.includes("budgets")`),
		pagePoll(editorValue(headersEditor)+` !== ""`),
	)
	if headers := b.eval(t, editorValue(headersEditor)); !strings.Contains(headers, "Bearer "+sim.DemoKey) {
		t.Errorf("after a reload the headers editor holds %q, want the demo key", headers)
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
