// Package playground serves the GraphiQL playground that is built from this
// folder (index.html, src/, package.json) into dist/ and embedded in the
// binary, so the gateway serves every asset itself and the playground works
// with no network.
//
// A fresh clone holds only a placeholder in dist/, so the gateway compiles
// before the playground is built; until then the handler answers 503 with a
// page that says how to build it (`make run` does).
package playground

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dist is the Vite build. The all: prefix takes the placeholder file too,
// which is all there is before the first build.
//
//go:embed all:dist
var dist embed.FS

// Config is what the playground is told by the gateway that serves it. It is
// written into index.html as JSON.
type Config struct {
	// Endpoint is the URL of the GraphQL endpoint, relative to the page.
	Endpoint string `json:"endpoint"`
	// Headers preset the headers editor, such as the demo key on the
	// simulator. Empty against a real upstream: the gateway holds no key.
	Headers map[string]string `json:"headers,omitempty"`
	// Query is the starter query of the first tab.
	Query string `json:"query,omitempty"`
}

// ContentSecurityPolicy is sent with every playground page. It forbids
// loading anything from another origin: the playground is entirely served by
// the gateway. Inline style attributes are allowed because GraphiQL sets
// them; fonts and a few icons are data: URLs inside GraphiQL's stylesheet.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'none'; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'self'; form-action 'none'"

// The element of index.html whose contents the gateway replaces with Config.
const (
	configOpen  = `<script id="costgw-config" type="application/json">`
	configClose = `</script>`
)

// Built reports whether the embedded folder holds a built playground.
func Built() bool {
	_, err := fs.Stat(dist, "dist/index.html")
	return err == nil
}

// Handler serves the playground: index.html with c written into it at / and
// /index.html, and the built assets. Asset names carry a content hash, so
// they are cached for a year; index.html is revalidated on every load.
// Without a build it answers 503 with instructions.
func Handler(c Config) http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// dist is a literal directory of this package; Sub cannot fail on it.
		panic(err)
	}
	return newHandler(sub, c)
}

// handler serves a built playground from memory.
type handler struct {
	files map[string]*file // by slash path without the leading slash
	err   error            // why the playground cannot be served, if it cannot
}

// file is one asset, read once when the handler is built.
type file struct {
	body        []byte
	contentType string
	cache       string
	etag        string
	gzipped     func() []byte // nil for types not worth compressing
}

func newHandler(fsys fs.FS, c Config) http.Handler {
	h := &handler{files: map[string]*file{}}
	index, err := fs.ReadFile(fsys, "index.html")
	if err != nil {
		h.err = errNotBuilt
		return h
	}
	index, err = inject(index, c)
	if err != nil {
		h.err = err
		return h
	}
	h.files["index.html"] = newFile("index.html", index)
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "index.html" || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		h.files[p] = newFile(p, body)
		return nil
	})
	if err != nil {
		h.err = fmt.Errorf("reading the playground build: %w", err)
	}
	return h
}

var errNotBuilt = errors.New("the playground is not built")

// inject writes c as JSON into the config element of index.html. The JSON
// encoder escapes <, > and &, so no value can end the script element.
func inject(index []byte, c Config) ([]byte, error) {
	start := bytes.Index(index, []byte(configOpen))
	if start < 0 {
		return nil, errors.New("the playground's index.html has no config element")
	}
	start += len(configOpen)
	end := bytes.Index(index[start:], []byte(configClose))
	if end < 0 {
		return nil, errors.New("the playground's config element is not closed")
	}
	js, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(index)+len(js))
	out = append(out, index[:start]...)
	out = append(out, js...)
	return append(out, index[start+end:]...), nil
}

func newFile(name string, body []byte) *file {
	sum := sha256.Sum256(body)
	f := &file{
		body:        body,
		contentType: contentType(name),
		etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		cache:       "no-cache",
	}
	if strings.HasPrefix(name, "assets/") {
		f.cache = "public, max-age=31536000, immutable"
	}
	if compressible(f.contentType) && len(body) > 1024 {
		// Compressed on first use rather than at start, so a gateway whose
		// playground nobody opens pays nothing for it.
		f.gzipped = sync.OnceValue(func() []byte {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			_, _ = zw.Write(body)
			_ = zw.Close()
			return b.Bytes()
		})
	}
	return f
}

// contentType names the types a Vite build holds itself, so the answer does
// not depend on the host's MIME tables (a distroless image has none).
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json", ".map":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	case ".woff2":
		return "font/woff2"
	case ".woff":
		return "font/woff"
	case ".ttf":
		return "font/ttf"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func compressible(contentType string) bool {
	return strings.HasPrefix(contentType, "text/") || strings.HasPrefix(contentType, "application/json") ||
		strings.HasPrefix(contentType, "image/svg")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	if h.err != nil {
		if name != "index.html" {
			http.NotFound(w, r)
			return
		}
		notBuilt(w, h.err)
		return
	}
	f, ok := h.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", f.contentType)
	hdr.Set("Cache-Control", f.cache)
	if name == "index.html" {
		hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
		hdr.Set("Referrer-Policy", "no-referrer")
	}
	body, etag := f.body, f.etag
	if f.gzipped != nil {
		hdr.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body, etag = f.gzipped(), strings.TrimSuffix(f.etag, `"`)+`-gz"`
			hdr.Set("Content-Encoding", "gzip")
		}
	}
	hdr.Set("ETag", etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether the request accepts gzip with a non-zero
// quality.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

// notBuilt answers 503 with a short page that says how to build the
// playground.
func notBuilt(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `<!doctype html>
<meta charset="utf-8">
<title>costgw: playground not built</title>
<h1>The playground is not built</h1>
<p>%s. The gateway embeds the playground when it is compiled, so build it, then start the gateway again:</p>
<pre>make run</pre>
<p>or by hand:</p>
<pre>cd web/playground &amp;&amp; npm ci &amp;&amp; npm run build &amp;&amp; cd ../.. &amp;&amp; go run .</pre>
<p>GraphQL itself works meanwhile at <code>/graphql</code>.</p>
`, html.EscapeString(capitalize(err.Error())))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
