package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// renderHostile writes the section of the hostile-traffic benchmark.
func renderHostile(b *strings.Builder, r *hostileReport) {
	if r == nil {
		return
	}
	perLegit := r.quietCPU()
	p := r.openSection(b, "Hostile traffic (issue 14)", "a fraction of a second per phase")
	p("%s. %d attackers send every hostile shape of issue 14 and random documents, each shape\n", r.span(), r.Attackers)
	p("with the key of organization one (`%s`) and without any key where the shape allows both, back to back,\n", attackKey)
	p("each request with a client timeout of %v; meanwhile %d legitimate clients send the %s query back to back with\n",
		r.Timeout, r.LegitClients, r.LegitQuery)
	p("organization two's key (`%s`). The gateway runs as in production on the simulator (no added latency), with\n", legitKey)
	p("`-request-timeout %v` and `-caller-in-flight %d` (what docs/security.md advises for a public endpoint of many\n", r.RequestTimeout, hostileCallerInFlight)
	p("organizations), `-caller-refusals` and the limits at their defaults")
	if r.RateLimit > 0 {
		p(", and after the first quiet run `-rate-limit %d`: twice the\n", r.RateLimit)
		p("legitimate rate of that run, rounded up to a hundred, as an operator sets it above the busiest key's peak")
	}
	p(". Phases: a quiet run (the legitimate clients alone),\n")
	if r.ShapeWindow > 0 && r.interleaved() {
		p("an attack with each shape alone, each followed by a quiet run (%v each), ", r.ShapeWindow)
	} else if r.ShapeWindow > 0 {
		p("an attack with each shape alone (%v each), ", r.ShapeWindow)
	}
	p("an attack with every shape at once, and a quiet run again (%v each). ", r.Window)
	if r.interleaved() {
		p("Each attack's\nlegitimate rate is divided by the mean of the quiet runs just before and after it (\"÷ quiet\"): the\n")
		p("machine's speed drifts over a run by more than the goal's margin. ")
	} else {
		p("The quiet figure is the mean\nof the two. ")
	}
	p("Each phase has a gateway process of its own, started for it and killed\nafter it. The harness kills ")
	if r.RSSCap > 0 {
		p("a gateway whose RSS passes %s, so that no shape takes the shared machine down; the phase says so.\n\n", mib(r.RSSCap))
	} else {
		p("no gateway for its memory (no cap).\n\n")
	}
	if r.aloneMeasured() {
		p("Each attack phase starts with the attack alone for %v, before the legitimate clients start: CPU per\n", r.AloneWindow)
		p("hostile answer is the gateway's CPU in that window (from `/proc`) divided by the hostile requests answered\n")
		p("in it (\"alone\"; a paced attack has a few dozen answers a second, too few to read net of a thousand\n")
		p("legitimate ones). The legitimate figures, the answers below and \"gross\" (the gateway's CPU in the window\n")
		p("with both ÷ the hostile answers in it) are from the window with both, which follows at once.\n")
	} else {
		p("CPU per hostile answer is the gateway's CPU in the window (from `/proc`), less what the legitimate requests of\n")
		p("the window cost in the quiet run (%s each), divided by the hostile requests answered in the window (\"net\");\n", ms(perLegit))
		p("\"gross\" leaves the legitimate traffic in.\n")
	}
	p("Requests that meet the client timeout are not answered, so their\n")
	p("CPU weighs on the others: a shape that is never answered has no figure and misses the goal. Peak RSS is the\n")
	p("gateway's VmHWM in the window (or the highest RSS sampled every 20 ms, if it was killed).\n\n")

	renderGoalTable(b, r.Goals)

	p("### Phases\n\n")
	perCol := "CPU per answer, net"
	if r.aloneMeasured() {
		perCol = "CPU per answer, alone"
	}
	p("| phase | legit req/s | ÷ quiet | legit errors | hostile answered | timed out | failed | gateway CPU | %s | gross | peak RSS | gateway stopped |\n", perCol)
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range r.Phases {
		ph := &r.Phases[i]
		t := ph.total()
		of, answered, timedOut, failed, net, gross := "–", "–", "–", "–", "–", "–"
		if ph.Kind != phaseQuiet {
			if quiet := r.quietBeside(i); quiet > 0 {
				of = fmt.Sprintf("%.2f", ph.legitRPS()/quiet)
			}
			answered, timedOut, failed = fmt.Sprint(t.answered()), fmt.Sprint(t.TimedOut), fmt.Sprint(t.Failed)
			if c, ok := r.cpuPerAnswer(ph); ok {
				net = ms(c)
			}
			if t.answered() > 0 {
				gross = ms(ph.GatewayCPU / time.Duration(t.answered()))
			}
		}
		stopped := ph.Stopped
		if stopped == "" {
			stopped = "–"
		}
		p("| %s | %.0f | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", ph.Name, ph.legitRPS(), of, ph.LegitErrors,
			answered, timedOut, failed, ph.GatewayCPU.Round(time.Millisecond), net, gross, mib(ph.PeakRSS), stopped)
	}

	p("\n### What the gateway answered\n\n")
	p("Per shape, in its own phase")
	byShape := map[string]*shapeStats{}
	for i := range r.Phases {
		if ph := &r.Phases[i]; ph.Kind == phaseShape {
			byShape[ph.Name] = ph.total()
		}
	}
	if len(byShape) == 0 {
		p(" (none in this run: here, in the attack with every shape at once)")
		for i := range r.Phases {
			if ph := &r.Phases[i]; ph.Kind == phaseMixed {
				byShape = ph.Hostile
			}
		}
	}
	p(". Answers are counted by status and first `extensions.code`\n")
	p("(\"data\": 200 without error). \"with key / without\" are the answered requests sent with the attackers' key and\n")
	p("those sent without it (no key, or an unknown one).\n\n")
	p("| shape | item | sent | answered with key / without | timed out | failed | answers | largest answer | slowest answer |\n")
	p("|---|---|---|---|---|---|---|---|---|\n")
	var failures []string
	for _, s := range r.Shapes {
		st := byShape[s.Name]
		if st == nil {
			p("| %s | %s | 0 | – | – | – | – | – | – |\n", s.Name, s.Item)
			continue
		}
		var answers []string
		for _, k := range sortedKeys(st.Statuses) {
			answers = append(answers, fmt.Sprintf("%s ×%d", k, st.Statuses[k]))
		}
		slowest := "–"
		if st.answered() > 0 {
			slowest = ms(st.SlowestAnswer)
		}
		p("| %s | %s | %d | %d / %d | %d | %d | %s | %s | %s |\n", s.Name, s.Item, st.Sent, st.AnsweredWithKey,
			st.AnsweredWithoutKey, st.TimedOut, st.Failed, listOrNone(answers), bytesOf(st.MaxAnswerBytes), slowest)
		if st.FirstFailure != "" {
			failures = append(failures, fmt.Sprintf("- %s: %s", s.Name, oneLine(st.FirstFailure, 200)))
		}
	}
	if len(failures) > 0 {
		p("\nFirst failure of each shape that had one:\n\n%s\n", strings.Join(failures, "\n"))
	}

	p("\n### The shapes\n\n| shape | issue 14 item | what is sent | sent |\n|---|---|---|---|\n")
	for _, s := range r.Shapes {
		var keys []string
		for _, k := range s.Keys {
			keys = append(keys, map[keyMode]string{withKey: "with the attackers' key", withoutKey: "without a key",
				unknownKey: "with an unknown key"}[k])
		}
		p("| %s | %s | %s | %s |\n", s.Name, s.Item, s.Title, strings.Join(keys, ", "))
	}
	p("\nThe random documents (%d, from a fixed seed) are made by `bench/hostile_gen.go`; the shapes are in\n", r.RandomDocs)
	p("`bench/hostile_shapes.go`. Items refer to issue 14's sections: A (cost bounded before the expensive work),\n")
	p("B (one caller cannot hurt the others), C (upstream answers), D (HTTP edges); O are shapes found from outside\n")
	p("after the issue (docs/security.md), each once a defect.\n\n")
	renderFairShare(b, r.FairShare)
}

func bytesOf(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// oneLine is s on one line, cut to n bytes, safe in a Markdown table.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

// hostileProblems are what makes a hostile run unusable: the harness's own
// failures, not the gateway's.
func hostileProblems(r *hostileReport) []string {
	var out []string
	for i := range r.Phases {
		ph := &r.Phases[i]
		if ph.Kind == phaseQuiet && ph.LegitOK == 0 {
			out = append(out, fmt.Sprintf("hostile %s: no legitimate request answered (%s)", ph.Name, ph.LegitFirstError))
		}
		if ph.Kind == phaseQuiet {
			continue
		}
		var unsent []string
		for _, s := range r.Shapes {
			st := ph.Hostile[s.Name]
			if ph.Kind == phaseShape && s.Name != ph.Name {
				continue
			}
			if st == nil || st.Sent == 0 {
				unsent = append(unsent, s.Name)
			} else if strings.HasPrefix(st.FirstFailure, "the harness") {
				out = append(out, fmt.Sprintf("hostile %s, %s: %s", ph.Name, s.Name, st.FirstFailure))
			}
		}
		if len(unsent) > 0 {
			slices.Sort(unsent)
			out = append(out, fmt.Sprintf("hostile %s: never sent: %s", ph.Name, strings.Join(unsent, ", ")))
		}
	}
	if r.FairShare != nil {
		out = append(out, fairProblems(r.FairShare)...)
	}
	return out
}
