package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/upstream"
)

// Tracing is the gateway's OpenTelemetry tracing. It is configured by the
// standard environment variables: OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), an http or https URL, turns it on
// (anything else is an error), OTEL_EXPORTER_OTLP_PROTOCOL
// (or its _TRACES_ form) picks http/protobuf (the default) or grpc,
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service,
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG sample (parent-based
// always-on by default), OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
// turn it off. The exporter's other variables (headers, timeout,
// compression, certificates) are the SDK's own. Without an endpoint it is off: a no-op
// tracer, no span recorded, nothing sent, no header added.
//
// The spans of a request: the HTTP server span (Handler), continuing an
// incoming W3C traceparent; the GraphQL operation's span under it, with its
// name, type, estimated and actual upstream calls and outcome code; and a
// client span for each upstream call attempt under that, named by its route
// template (never the raw URL), with status, attempt number and the
// upstream's request id, whose traceparent the upstream receives.
type Tracing struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	sdk      *sdktrace.TracerProvider // nil when off
	prop     propagation.TextMapPropagator
}

// TracingFromEnv sets up tracing from the environment, read through
// lookupEnv (os.LookupEnv, or a test's map).
func TracingFromEnv(ctx context.Context, lookupEnv func(string) (string, bool), version string) (*Tracing, error) {
	// setting is the first of the variables names that is set, and its
	// name (the last one's when none is), so an error names the one read.
	setting := func(names ...string) (name, value string) {
		for _, n := range names {
			if v, ok := lookupEnv(n); ok && v != "" {
				return n, v
			}
		}
		return names[len(names)-1], ""
	}
	env := func(name string) string { _, v := setting(name); return v }
	endpointVar, endpoint := setting("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if endpoint == "" || env("OTEL_SDK_DISABLED") == "true" || env("OTEL_TRACES_EXPORTER") == "none" {
		return Off(), nil
	}
	sampler, err := samplerFrom(env("OTEL_TRACES_SAMPLER"), env("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, err
	}
	// The specification wants a URL with scheme http or https and a host.
	// The exporters take anything else without a word and send nowhere.
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an http or https URL such as http://collector:4318", endpointVar, endpoint)
	}
	var exp sdktrace.SpanExporter
	switch protocolVar, p := setting("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p {
	case "", "http/protobuf":
		// The generic endpoint is the collector's base URL, with traces at
		// /v1/traces below it; the traces endpoint is used as it is. So the
		// specification has it.
		target := endpoint
		if endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			target = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
		}
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target))
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	default:
		return nil, fmt.Errorf("%s %q: want http/protobuf or grpc", protocolVar, p)
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter for %s: %w", endpoint, err)
	}
	attrs, err := resourceAttributes(env("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, err
	}
	// The last value of a key wins: the gateway's name and version, then
	// OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME, as the
	// specification orders them.
	attrs = append([]attribute.KeyValue{semconv.ServiceName("costgw"), semconv.ServiceVersion(version)}, attrs...)
	if name := env("OTEL_SERVICE_NAME"); name != "" {
		attrs = append(attrs, semconv.ServiceName(name))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	return newTracing(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler))), nil
}

// resourceAttributes parses OTEL_RESOURCE_ATTRIBUTES as the SDK's
// resource.WithFromEnv does (comma-separated key=value pairs, values
// percent-encoded), but from the value given, so it comes through lookupEnv
// like every other setting; and a malformed pair is an error.
func resourceAttributes(s string) ([]attribute.KeyValue, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var attrs []attribute.KeyValue
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value", pair)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q: %w", pair, err)
		}
		attrs = append(attrs, attribute.String(k, val))
	}
	return attrs, nil
}

// samplerFrom is the sampler OTEL_TRACES_SAMPLER and its argument name, as
// the OpenTelemetry specification defines them; parent-based always-on when
// unset.
func samplerFrom(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q: want a ratio from 0 to 1", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER %q: want always_on, always_off, traceidratio or their parentbased_ forms", name)
}

// TracingTo sends every span to exp through a synchronous processor, with
// the sampler: for tests, which read spans from an in-memory exporter.
func TracingTo(exp sdktrace.SpanExporter, sampler sdktrace.Sampler) *Tracing {
	return newTracing(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sampler)))
}

func newTracing(tp *sdktrace.TracerProvider) *Tracing {
	return &Tracing{provider: tp, tracer: tp.Tracer("github.com/costgw/gateway"), sdk: tp,
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
}

// Off is tracing switched off.
func Off() *Tracing {
	p := noop.NewTracerProvider()
	return &Tracing{provider: p, tracer: p.Tracer(""), prop: propagation.NewCompositeTextMapPropagator()}
}

// Enabled reports whether spans are recorded and sent.
func (t *Tracing) Enabled() bool { return t.sdk != nil }

// Shutdown sends the spans still buffered and stops.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Routes finds the route pattern of a request, as *http.ServeMux does.
type Routes interface {
	Handler(r *http.Request) (h http.Handler, pattern string)
}

// Handler gives every request its server span, continuing the caller's
// traceparent, except requests for the untraced paths (probes, which would
// otherwise make a trace every few seconds); off, it is next itself.
//
// The span follows the HTTP semantic conventions for a server span: named by
// its method and its route in routes (http.route; the method alone for a
// path no route takes, or with routes nil), never by the raw path, with the
// request's attributes (serverAttributes; not url.query, which holds a GET's
// document and variables), the status sent, and an error for a 5xx or a
// panic. It builds its name and attributes, and wraps the response writer for
// the status, only when it records: most requests are not sampled, and for
// them this is a context and a span. (otelhttp's handler, used before, built
// the attributes of every request and recorded three histograms into the
// global meter provider, which the gateway never sets: 35 allocations a
// request, most of what tracing at 1 % cost.)
func (t *Tracing) Handler(next http.Handler, routes Routes, untraced ...string) http.Handler {
	if !t.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(untraced, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		// A sampler sees neither name nor attributes: none of those
		// OTEL_TRACES_SAMPLER names looks at them.
		ctx, span := t.tracer.Start(ctx, "HTTP", serverKind...)
		defer span.End()
		r = r.WithContext(ctx)
		if !span.IsRecording() {
			next.ServeHTTP(w, r)
			return
		}
		method, attrs := serverAttributes(r)
		if route := routeOf(routes, r); route != "" {
			span.SetName(method + " " + route)
			attrs = append(attrs, semconv.HTTPRoute(route))
		} else {
			span.SetName(method)
		}
		span.SetAttributes(attrs...)
		rec := httpx.NewRecorder(w)
		defer func() {
			if p := recover(); p != nil {
				// The recovering middleware outside answers 500 when nothing
				// was written, and aborts the connection otherwise.
				if rec.Status() == 0 {
					span.SetAttributes(semconv.HTTPResponseStatusCode(http.StatusInternalServerError))
				}
				span.SetStatus(codes.Error, "panic")
				span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
				panic(p)
			}
		}()
		next.ServeHTTP(rec, r)
		status := rec.Status()
		if status == 0 {
			return // nothing written: the client went, or an empty 200 goes out after this
		}
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= 500 {
			// Server errors are the server span's errors; a 4xx is the caller's.
			span.SetStatus(codes.Error, "")
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		}
	})
}

// routeOf is the path of the route pattern routes has for r, without the
// pattern's method and host; "" when none takes it.
func routeOf(routes Routes, r *http.Request) string {
	if routes == nil {
		return ""
	}
	_, p := routes.Handler(r)
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexByte(p, '/'); i > 0 {
		p = p[i:]
	}
	return p
}

// maxUserAgent bounds the user agent a span keeps, in bytes.
const maxUserAgent = 512

// serverAttributes are a recording server span's request attributes, and its
// method as the span's name gives it: one the conventions know, or HTTP.
// The peer is network.peer.*: behind a proxy it is the proxy, and the
// gateway trusts no forwarded header to name the client.
func serverAttributes(r *http.Request) (string, []attribute.KeyValue) {
	attrs := make([]attribute.KeyValue, 0, 11)
	method := r.Method
	if m, ok := knownMethods[method]; ok {
		attrs = append(attrs, m)
	} else {
		method = "HTTP"
		attrs = append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(r.Method))
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs, semconv.URLScheme(scheme), semconv.URLPath(r.URL.Path))
	if host, port := hostPort(r.Host); host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	if host, port := hostPort(r.RemoteAddr); host != "" {
		attrs = append(attrs, semconv.NetworkPeerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.NetworkPeerPort(port))
		}
	}
	if ua := r.UserAgent(); ua != "" {
		if len(ua) > maxUserAgent {
			ua = strings.ToValidUTF8(ua[:maxUserAgent], "")
		}
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	if r.ProtoMajor == 2 {
		attrs = append(attrs, semconv.NetworkProtocolVersion("2"))
	} else {
		attrs = append(attrs, semconv.NetworkProtocolVersion(fmt.Sprintf("%d.%d", r.ProtoMajor, r.ProtoMinor)))
	}
	return method, attrs
}

// hostPort splits host[:port] (an IPv6 address in brackets), the port 0
// when there is none or it is no port number.
func hostPort(s string) (string, int) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), 0
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return host, 0
	}
	return host, int(p)
}

// knownMethods are the methods the HTTP semantic conventions name; any other
// is _OTHER, with the original beside it.
var knownMethods = map[string]attribute.KeyValue{
	http.MethodConnect: semconv.HTTPRequestMethodConnect, http.MethodDelete: semconv.HTTPRequestMethodDelete,
	http.MethodGet: semconv.HTTPRequestMethodGet, http.MethodHead: semconv.HTTPRequestMethodHead,
	http.MethodOptions: semconv.HTTPRequestMethodOptions, http.MethodPatch: semconv.HTTPRequestMethodPatch,
	http.MethodPost: semconv.HTTPRequestMethodPost, http.MethodPut: semconv.HTTPRequestMethodPut,
	http.MethodTrace: semconv.HTTPRequestMethodTrace,
}

// Operation is the span of one GraphQL operation.
type Operation struct{ span trace.Span }

// StartOperation starts the span of a GraphQL request's operation; its name
// and attributes are set when it ends, once the operation is known.
func (t *Tracing) StartOperation(ctx context.Context) (context.Context, Operation) {
	if !t.Enabled() {
		return ctx, Operation{}
	}
	ctx, span := t.tracer.Start(ctx, "graphql", internalKind...)
	return ctx, Operation{span}
}

// The options of the spans' starts, made once rather than for every span.
var (
	serverKind   = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	internalKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	clientKind   = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// End ends the operation's span with what the request came to. A span that
// records nothing (not sampled) gets no name or attribute: building them
// would be work for nothing on most requests. An answer cut off while it was
// written (cutOff: the client had not taken it by the deadline, or went
// away) is an error whatever its code, with costgw.cut_off set.
func (o Operation) End(name, typ, code string, estimated int, calls int64, cutOff bool) {
	if o.span == nil {
		return
	}
	if o.span.IsRecording() {
		if typ == "" {
			typ = "unknown"
		}
		// As OpenTelemetry's GraphQL conventions name it: the type, and the
		// operation's name when it has one.
		if name == "" {
			o.span.SetName(typ)
		} else {
			o.span.SetName(typ + " " + name)
			o.span.SetAttributes(attribute.String("graphql.operation.name", name))
		}
		o.span.SetAttributes(
			attribute.String("graphql.operation.type", typ),
			attribute.Int("costgw.upstream_calls.estimated", estimated),
			attribute.Int64("costgw.upstream_calls", calls),
			attribute.String("costgw.code", code))
		switch {
		case cutOff:
			o.span.SetAttributes(attribute.Bool("costgw.cut_off", true))
			o.span.SetStatus(codes.Error, "the answer was cut off while it was written")
		case code != "OK" && code != "":
			o.span.SetStatus(codes.Error, code)
		}
	}
	o.span.End()
}

// Upstream starts the client span of one upstream call attempt, as the
// upstream client's observer: the returned context carries it to the
// request, whose traceparent the transport (Transport) sets. The func it
// returns ends the span with the attempt's result; it is nil when the span
// records nothing (not sampled), which then needs no ending, and gets no
// attribute: its context is all that matters, for the traceparent. (The
// attributes are set just after the span starts, so a sampler does not see
// them; none of those OTEL_TRACES_SAMPLER names looks at attributes.)
func (t *Tracing) Upstream(ctx context.Context, a upstream.Attempt) (context.Context, func(upstream.AttemptResult)) {
	ctx, span := t.tracer.Start(ctx, a.Method+" "+a.Route, clientKind...)
	if !span.IsRecording() {
		return ctx, nil
	}
	span.SetAttributes(
		attribute.String("http.request.method", a.Method),
		attribute.String("url.template", a.Route),
		attribute.String("costgw.upstream.operation", a.Op),
		attribute.Int("http.request.resend_count", max(a.Number-1, 0)))
	if a.ServerAddress != "" {
		span.SetAttributes(attribute.String("server.address", a.ServerAddress), attribute.Int("server.port", a.ServerPort))
	}
	if a.Cache != "" {
		// hit and stale: served from the gateway's cache, nothing sent.
		span.SetAttributes(attribute.String("costgw.cache.result", a.Cache))
	}
	return ctx, func(r upstream.AttemptResult) {
		if r.Status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", r.Status))
		}
		if r.RequestID != "" {
			span.SetAttributes(attribute.String("costgw.upstream.request_id", r.RequestID))
		}
		if r.Class != upstream.ClassOK {
			span.SetStatus(codes.Error, string(r.Class))
			span.SetAttributes(attribute.String("error.type", string(r.Class)))
		}
		span.End()
	}
}

// Inject sets the W3C traceparent (and baggage) of the span in ctx through
// h: the upstream client's request headers (upstream.WithRequestHeaders),
// for every attempt, sampled or not, so that the upstream continues the
// trace or knows it is not sampled. Off, or without a span, it sets none.
func (t *Tracing) Inject(ctx context.Context, h upstream.HeaderSetter) {
	if t.Enabled() && trace.SpanContextFromContext(ctx).IsValid() {
		t.prop.Inject(ctx, setterCarrier{h})
	}
}

// setterCarrier is a HeaderSetter as a propagator's carrier, which injecting
// only sets.
type setterCarrier struct{ upstream.HeaderSetter }

func (setterCarrier) Get(string) string { return "" }
func (setterCarrier) Keys() []string    { return nil }

// Transport sets the W3C traceparent (and baggage) of the span in each
// request's context on the request; off, it is next itself. The upstream
// client takes Inject instead (upstream.WithRequestHeaders): around the
// *http.Transport of an http.Client with a Timeout, any RoundTripper makes
// net/http start a timer and a goroutine for every request (its older way of
// cancelling), where with its own transport it cancels through the context.
func (t *Tracing) Transport(next http.RoundTripper) http.RoundTripper {
	if !t.Enabled() {
		return next
	}
	return injector{next, t.prop}
}

type injector struct {
	next http.RoundTripper
	prop propagation.TextMapPropagator
}

func (i injector) RoundTrip(r *http.Request) (*http.Response, error) {
	if trace.SpanContextFromContext(r.Context()).IsValid() {
		// A RoundTripper must not change its caller's request: the headers go
		// on a shallow copy with a header map of its own. Its values are the
		// caller's slices, which nothing changes: injecting only sets keys
		// of its own, each to a new slice. (Request.Clone would copy every
		// value, the URL and more, for every upstream call, sampled or not.)
		h := make(http.Header, len(r.Header)+2)
		for k, v := range r.Header {
			h[k] = v
		}
		r = r.WithContext(r.Context())
		r.Header = h
		i.prop.Inject(r.Context(), propagation.HeaderCarrier(h))
	}
	return i.next.RoundTrip(r)
}

// LogHandler adds trace_id and span_id to every log line written with a
// context that carries a span; off, it is h itself.
func (t *Tracing) LogHandler(h slog.Handler) slog.Handler {
	if !t.Enabled() {
		return h
	}
	return traceLog{h}
}

type traceLog struct{ slog.Handler }

func (l traceLog) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()),
			slog.String("trace_sampled", strconv.FormatBool(sc.IsSampled())))
	}
	return l.Handler.Handle(ctx, r)
}

func (l traceLog) WithAttrs(a []slog.Attr) slog.Handler { return traceLog{l.Handler.WithAttrs(a)} }
func (l traceLog) WithGroup(n string) slog.Handler      { return traceLog{l.Handler.WithGroup(n)} }
