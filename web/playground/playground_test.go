package playground

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

const testIndex = `<!doctype html><html><head>
<script id="costgw-config" type="application/json">{}</script>
<script type="module" crossorigin src="./assets/index-AbC123.js"></script>
</head><body><div id="graphiql"></div></body></html>`

func testFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":             {Data: []byte(testIndex)},
		"favicon.svg":            {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`)},
		"assets/index-AbC123.js": {Data: []byte("console.log(1);" + strings.Repeat("/* padding */", 200))},
		"assets/index-D4e5.css":  {Data: []byte("body{margin:0}")},
		"assets/font-X1.woff2":   {Data: []byte{0x77, 0x4f, 0x46, 0x32}},
		".gitkeep":               {Data: []byte("placeholder")},
	}
}

func serve(t *testing.T, h http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var configRE = regexp.MustCompile(`(?s)<script id="costgw-config" type="application/json">(.*?)</script>`)

// TestConfigInjection checks that the config reaches the page intact, and
// that no value can end the script element or open another.
func TestConfigInjection(t *testing.T) {
	t.Parallel()
	hostile := "</script><script>alert(1)</script><!-- & \u2028 '\""
	c := Config{
		Endpoint: "graphql",
		Headers:  map[string]string{"Authorization": "Bearer demo-key", "X-Odd": hostile},
		Query:    "# " + hostile + "\n{ budgets(first: 5) { nodes { name } } }",
	}
	rec := serve(t, newHandler(testFS(), c), http.MethodGet, "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d", rec.Code)
	}
	body := rec.Body.String()
	if strings.Count(body, "</script>") != 2 || strings.Contains(body, "alert(1)</script>") || strings.Contains(body, "<!--") {
		t.Fatalf("a config value escaped its element:\n%s", body)
	}
	m := configRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no config element:\n%s", body)
	}
	var got Config
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("config is not JSON: %v\n%s", err, m[1])
	}
	if got.Endpoint != c.Endpoint || got.Query != c.Query || got.Headers["X-Odd"] != hostile || got.Headers["Authorization"] != "Bearer demo-key" {
		t.Errorf("config round trip: got %+v, want %+v", got, c)
	}
	if !strings.Contains(body, `src="./assets/index-AbC123.js"`) {
		t.Errorf("the rest of index.html changed:\n%s", body)
	}

	// Without headers, nothing about a key is written.
	rec = serve(t, newHandler(testFS(), Config{Endpoint: "graphql"}), http.MethodGet, "/")
	if strings.Contains(rec.Body.String(), "headers") || strings.Contains(rec.Body.String(), "Authorization") {
		t.Errorf("a config without headers writes some:\n%s", rec.Body)
	}
}

// TestAssets checks content types, caching and what is not served.
func TestAssets(t *testing.T) {
	t.Parallel()
	h := newHandler(testFS(), Config{Endpoint: "graphql"})
	tests := []struct {
		path, contentType, cache string
		status                   int
	}{
		{"/", "text/html; charset=utf-8", "no-cache", 200},
		{"/index.html", "text/html; charset=utf-8", "no-cache", 200},
		{"/favicon.svg", "image/svg+xml", "no-cache", 200},
		{"/assets/index-AbC123.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", 200},
		{"/assets/index-D4e5.css", "text/css; charset=utf-8", "public, max-age=31536000, immutable", 200},
		{"/assets/font-X1.woff2", "font/woff2", "public, max-age=31536000, immutable", 200},
		{"/assets/../index.html", "text/html; charset=utf-8", "no-cache", 200},
		{"/assets/", "", "", 404},
		{"/assets", "", "", 404},
		{"/.gitkeep", "", "", 404},
		{"/missing.js", "", "", 404},
		{"/../../etc/passwd", "", "", 404},
	}
	for _, tt := range tests {
		rec := serve(t, h, http.MethodGet, tt.path)
		if rec.Code != tt.status {
			t.Errorf("GET %s = %d, want %d", tt.path, rec.Code, tt.status)
			continue
		}
		if tt.status != 200 {
			continue
		}
		hdr := rec.Header()
		if hdr.Get("Content-Type") != tt.contentType || hdr.Get("Cache-Control") != tt.cache {
			t.Errorf("GET %s: Content-Type %q, Cache-Control %q; want %q, %q",
				tt.path, hdr.Get("Content-Type"), hdr.Get("Cache-Control"), tt.contentType, tt.cache)
		}
		if hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("ETag") == "" {
			t.Errorf("GET %s: headers %v", tt.path, hdr)
		}
	}
	if csp := serve(t, h, http.MethodGet, "/").Header().Get("Content-Security-Policy"); csp != ContentSecurityPolicy {
		t.Errorf("index.html CSP = %q", csp)
	}

	// Revalidation, HEAD and methods.
	etag := serve(t, h, http.MethodGet, "/").Header().Get("ETag")
	if rec := serve(t, h, http.MethodGet, "/", "If-None-Match", etag); rec.Code != http.StatusNotModified {
		t.Errorf("GET / with its ETag = %d, want 304", rec.Code)
	}
	if rec := serve(t, h, http.MethodHead, "/assets/index-D4e5.css"); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD = %d with %d bytes", rec.Code, rec.Body.Len())
	}
	if rec := serve(t, h, http.MethodPost, "/"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", rec.Code)
	}
}

// TestGzip checks that text assets are compressed for clients that accept
// gzip, and only for them.
func TestGzip(t *testing.T) {
	t.Parallel()
	h := newHandler(testFS(), Config{Endpoint: "graphql"})
	want := testFS()["assets/index-AbC123.js"].Data
	plain := serve(t, h, http.MethodGet, "/assets/index-AbC123.js")
	if plain.Header().Get("Content-Encoding") != "" || !bytes.Equal(plain.Body.Bytes(), want) {
		t.Errorf("without Accept-Encoding: encoding %q", plain.Header().Get("Content-Encoding"))
	}
	for _, ae := range []string{"gzip", "br, gzip;q=0.8", "deflate, GZIP"} {
		rec := serve(t, h, http.MethodGet, "/assets/index-AbC123.js", "Accept-Encoding", ae)
		if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: headers %v", ae, rec.Header())
			continue
		}
		if rec.Header().Get("ETag") == plain.Header().Get("ETag") {
			t.Errorf("the gzipped and plain answers share an ETag")
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Accept-Encoding %q: the body does not decompress to the asset (%v)", ae, err)
		}
	}
	for _, ae := range []string{"gzip;q=0", "br", "identity"} {
		if rec := serve(t, h, http.MethodGet, "/assets/index-AbC123.js", "Accept-Encoding", ae); rec.Header().Get("Content-Encoding") != "" {
			t.Errorf("Accept-Encoding %q: got gzip", ae)
		}
	}
	// Tiny and binary files are not compressed.
	if rec := serve(t, h, http.MethodGet, "/assets/font-X1.woff2", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("a font was gzipped")
	}
}

// TestNotBuilt checks the answer of a gateway compiled before the
// playground was built.
func TestNotBuilt(t *testing.T) {
	t.Parallel()
	h := newHandler(fstest.MapFS{".gitkeep": {Data: []byte("placeholder")}}, Config{Endpoint: "graphql"})
	rec := serve(t, h, http.MethodGet, "/")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "make run") ||
		!strings.Contains(rec.Body.String(), "npm ci &amp;&amp; npm run build") {
		t.Errorf("GET / without a build = %d:\n%s", rec.Code, rec.Body)
	}
	if rec := serve(t, h, http.MethodGet, "/assets/index.js"); rec.Code != http.StatusNotFound {
		t.Errorf("GET an asset without a build = %d, want 404", rec.Code)
	}

	// An index.html without the config element is a build the gateway does
	// not understand: also 503, never a page without its config.
	h = newHandler(fstest.MapFS{"index.html": {Data: []byte("<html></html>")}}, Config{})
	if rec := serve(t, h, http.MethodGet, "/"); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "config element") {
		t.Errorf("GET / with a foreign index.html = %d:\n%s", rec.Code, rec.Body)
	}
}

// TestEmbeddedBuild checks the build embedded in this binary, when there is
// one: an index.html with the config element, and every asset it names.
func TestEmbeddedBuild(t *testing.T) {
	t.Parallel()
	if !Built() {
		t.Skip("the playground is not built (make test builds it)")
	}
	h := Handler(Config{Endpoint: "graphql"})
	rec := serve(t, h, http.MethodGet, "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d:\n%s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	refs := regexp.MustCompile(`(?:src|href)="\./([^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(refs) < 2 {
		t.Fatalf("index.html names %d assets:\n%s", len(refs), body)
	}
	for _, ref := range refs {
		if rec := serve(t, h, http.MethodGet, "/"+ref[1]); rec.Code != http.StatusOK {
			t.Errorf("GET /%s = %d", ref[1], rec.Code)
		}
	}
	if regexp.MustCompile(`(?:src|href)="(?:https?:)?//`).MatchString(body) {
		t.Errorf("index.html loads something from another origin:\n%s", body)
	}
}
