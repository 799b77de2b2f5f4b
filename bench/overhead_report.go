package main

import (
	"fmt"
	"slices"
	"strings"
)

// renderOverhead writes the section of the telemetry-overhead benchmark.
func renderOverhead(b *strings.Builder, r *overheadReport) {
	if r == nil {
		return
	}
	p := r.openSection(b, "Telemetry overhead (issue 11)", "a fraction of a second per configuration")
	p("%s; load average (1, 5 and 15 minutes) %s at the start, %s at the end.\n", r.span(), r.LoadAvgStart, r.LoadAvgEnd)
	p("The gateway in %d configurations, each a process of its own on one simulator (no added latency), all started\n", len(r.Configs))
	p("before the first is measured, and measured as the throughput runs are: %d clients, %v per configuration and\n", r.Clients, r.Duration)
	p("query in %d round(s), each round warming up for at least %v. The configurations take turns in a balanced\n", r.Rounds, r.Warmup)
	p("order (a Williams design): over every %d rounds each runs once in each position and once right after each of\n", len(r.Configs))
	p("the others. CPU per request is the gateway process's CPU time (user + system, from `/proc`) in the window ÷\n")
	p("the requests completed in it. The clients send no `traceparent`, so the sampler decides at the gateway.\n\n")
	p("| configuration | what is on |\n|---|---|\n")
	for _, c := range r.Configs {
		p("| %s | %s |\n", c.Name, c.What)
	}
	p("\nThe metrics are scraped every %v from the start of the run to its end, idle or not, with Prometheus's\n", r.ScrapeInterval)
	p("`Accept` header and gzip. Each traced configuration exports to a sink of its own: a minimal OTLP/HTTP receiver\n")
	p("in the bench process (`bench/overhead.go`) that takes `POST /v1/traces`, decodes the protobuf to count the spans\n")
	p("and answers 200. The sink and the scraper cost the bench process, which is in no figure here; what the\n")
	p("gateway does to build, batch, encode and send the spans and the metrics is in its own. The SDK's batch span\n")
	p("processor sends every 512 spans or 5 s, so a round's last spans may leave in a later round, while another\n")
	p("configuration is measured, as the warm-up's spans leave in the window: the two roughly cancel out.\n\n")

	// From the figures, by this code, as goals13 is for the other goals.
	renderGoalTable(b, overheadGoals(r))

	p("### CPU per request\n\n")
	p("`÷ off` is the configuration's CPU per request over all its rounds ÷ off's, the figure of the goal. The same\n")
	p("ratio taken round by round (each round of a configuration beside off's of the same round, measured one after\n")
	p("the other under about the same load of the machine) shows how far the machine moved the figures: the\n")
	p("rounds' geometric mean with its 95 %% interval (Student's t on the logarithms), their median, and their\n")
	p("range. A goal verdict whose interval straddles the bound says less than it seems.\n\n")
	p("| query | configuration | CPU-µs/request | ÷ off | rounds: geometric mean (95 %% interval) | rounds: median | rounds: lowest – highest | req/s | p50 | p95 | simulator CPU-µs/request | errors |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, qn := range r.Queries {
		for _, c := range r.Configs {
			x, ok := r.find(c.Name, qn)
			if !ok {
				continue
			}
			rat, iv, med, rounds := "–", "–", "–", "–"
			if v, ok := r.cpuRatio(c.Name, qn); ok {
				rat = fmt.Sprintf("%.3f", v)
			}
			if rr := r.roundRatios(c.Name, qn); len(rr) > 0 && c.Name != ovOff {
				if t := r.intervalText(c.Name, qn); t != "" {
					iv = t
				}
				med = fmt.Sprintf("%.3f", median(rr))
				rounds = fmt.Sprintf("%.3f – %.3f", slices.Min(rr), slices.Max(rr))
			}
			p("| %s | %s | %.0f | %s | %s | %s | %s | %.0f | %s | %s | %.0f | %d |\n", qn, c.Name, us(x.CPUPerRequest()), rat, iv, med,
				rounds, x.RPS(), ms(x.P50), ms(x.P95), us(x.SimCPUPerRequest()), x.Errors)
		}
	}
	p("\n### What the telemetry did\n\n")
	p("Over the whole run, warm-ups and the first answer of each query included. A sampled request is a root span\n")
	p("received (the server span of a request that came without a `traceparent`).\n\n")
	p("| configuration | requests sent | `/metrics` scrapes (failed) | OTLP requests | bytes sent | spans | sampled requests | sampled share |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.Telemetry {
		oc := overheadConfigByName(t.Config)
		scr, exp, bytes, spans, roots, share := "–", "–", "–", "–", "–", "–"
		if oc != nil && oc.Metrics {
			scr = fmt.Sprintf("%d (%d)", t.Scrapes, t.ScrapeErrors)
		}
		if oc != nil && oc.Sampler != "" {
			exp, bytes, spans, roots = fmt.Sprint(t.Exports), fmt.Sprintf("%.2f MiB", float64(t.ExportBytes)/(1<<20)),
				fmt.Sprint(t.Spans), fmt.Sprint(t.RootSpans)
			if t.Requests > 0 {
				share = fmt.Sprintf("%.4f", float64(t.RootSpans)/float64(t.Requests))
			}
		}
		p("| %s | %d | %s | %s | %s | %s | %s | %s |\n", t.Config, t.Requests, scr, exp, bytes, spans, roots, share)
	}
	p("\n")
}

// median of xs, which it does not change; 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
