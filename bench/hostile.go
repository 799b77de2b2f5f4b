package main

// The hostile-traffic benchmark of issue 14 ("Done means"): every hostile
// shape the issue lists, and random documents, sent by concurrent attackers
// with and without a key while legitimate traffic from another
// organization's key runs at the same time. It measures the gateway's CPU
// per hostile request answered, its peak RSS, and the legitimate traffic's
// throughput against a quiet run (the same legitimate load, no attack).
//
// Phases: a quiet run; one attack per shape, each followed by a quiet run;
// every shape at once; a quiet run again. Each attack is measured against
// the quiet runs just before and after it (quietBeside): the machine's speed
// drifts over a run by more than the goal's margin. Each phase runs on a
// gateway of its own, started for it and killed after it, so that what one
// shape leaves behind (a full query cache, an open circuit breaker, work
// still running for requests whose clients gave up) weighs on no other.
// The simulator is shared: the attackers' organization is not the
// legitimate traffic's.
//
// Everything is bounded in time: each hostile request has a client timeout,
// and a shape the gateway does not answer within it is reported as timed
// out, not waited for; each phase lasts its window and no more. A watchdog
// kills the gateway when its RSS passes a cap, so that a shape that takes
// gigabytes cannot take the shared machine down with it; the phase says so.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// legitKey is the key of the legitimate traffic: organization two, not the
// attackers' organization one.
const legitKey = sim.OtherOrgKey

// legitQuery is what the legitimate clients ask, back to back.
const legitQuery = "BudgetList"

// Phase kinds.
const (
	phaseQuiet = "quiet"
	phaseShape = "shape"
	phaseMixed = "mixed"
)

// Goals of issue 14's hostile-traffic benchmark.
const (
	goalHostileCPU   = 5 * time.Millisecond
	goalHostileRSS   = 150 << 20
	goalLegitOfQuiet = 0.90
)

// hostileReport is everything the hostile-traffic benchmark measured.
type hostileReport struct {
	runInfo
	Attackers      int           `json:"attackers"`
	LegitClients   int           `json:"legit_clients"`
	LegitQuery     string        `json:"legit_query"`
	Window         time.Duration `json:"window"`
	ShapeWindow    time.Duration `json:"shape_window"`
	Timeout        time.Duration `json:"timeout"`
	RequestTimeout time.Duration `json:"request_timeout"`
	// RateLimit is the gateway's -rate-limit after the first quiet phase:
	// hostileRateLimit of that phase's legitimate rate.
	RateLimit int `json:"rate_limit"`
	// AloneWindow is the attack alone at the start of each attack phase.
	AloneWindow time.Duration  `json:"alone_window,omitempty"`
	RSSCap      int64          `json:"rss_cap"`
	RandomDocs  int            `json:"random_docs"`
	Shapes      []hostileShape `json:"shapes"`
	Phases      []hostilePhase `json:"phases"`
	Goals       []goalRow      `json:"goals"`
	// FairShare is the fair-share benchmark the run ended with (fairshare.go).
	FairShare *fairReport `json:"fair_share,omitempty"`
}

// hostilePhase is one phase: a window of legitimate traffic, with or
// without an attack.
type hostilePhase struct {
	Name       string        `json:"name"`
	Kind       string        `json:"kind"`
	Window     time.Duration `json:"window"`
	GatewayCPU time.Duration `json:"gateway_cpu"`
	PeakRSS    int64         `json:"peak_rss"`
	// Stopped says why the gateway ended before the window did.
	Stopped         string                 `json:"stopped,omitempty"`
	LegitOK         int                    `json:"legit_ok"`
	LegitErrors     int                    `json:"legit_errors"`
	LegitFirstError string                 `json:"legit_first_error,omitempty"`
	Hostile         map[string]*shapeStats `json:"hostile,omitempty"`
	// Alone is the attack alone, before the legitimate clients start; CPU
	// per hostile answer is read from it (nil in a quiet phase, and in
	// reports from before it was measured).
	Alone *aloneWindow `json:"alone,omitempty"`
}

// aloneWindow is a window of the attack alone: the gateway's CPU in it and
// the hostile requests answered in it.
type aloneWindow struct {
	Window     time.Duration `json:"window"`
	GatewayCPU time.Duration `json:"gateway_cpu"`
	Answered   int           `json:"answered"`
}

// shapeStats is what the attackers saw of one shape in one phase.
type shapeStats struct {
	Sent               int `json:"sent"`
	AnsweredWithKey    int `json:"answered_with_key"`
	AnsweredWithoutKey int `json:"answered_without_key"`
	// TimedOut met the client timeout; Failed ended otherwise without an
	// answer (a connection reset, a gateway that died); Unfinished were in
	// flight when the window closed.
	TimedOut   int `json:"timed_out"`
	Failed     int `json:"failed"`
	Unfinished int `json:"unfinished"`
	// Statuses counts the answers by status and first extensions.code.
	Statuses       map[string]int `json:"statuses"`
	MaxAnswerBytes int            `json:"max_answer_bytes"`
	// SlowestAnswer is the longest an answered request took.
	SlowestAnswer time.Duration `json:"slowest_answer"`
	FirstFailure  string        `json:"first_failure,omitempty"`
}

func (s *shapeStats) answered() int { return s.AnsweredWithKey + s.AnsweredWithoutKey }

func (s *shapeStats) add(o *shapeStats) {
	s.Sent += o.Sent
	s.AnsweredWithKey += o.AnsweredWithKey
	s.AnsweredWithoutKey += o.AnsweredWithoutKey
	s.TimedOut += o.TimedOut
	s.Failed += o.Failed
	s.Unfinished += o.Unfinished
	if s.Statuses == nil {
		s.Statuses = map[string]int{}
	}
	for k, v := range o.Statuses {
		s.Statuses[k] += v
	}
	s.MaxAnswerBytes = max(s.MaxAnswerBytes, o.MaxAnswerBytes)
	s.SlowestAnswer = max(s.SlowestAnswer, o.SlowestAnswer)
	if s.FirstFailure == "" {
		s.FirstFailure = o.FirstFailure
	}
}

// total is the stats of every shape of the phase together.
func (ph *hostilePhase) total() *shapeStats {
	t := &shapeStats{}
	for _, name := range sortedKeys(ph.Hostile) {
		t.add(ph.Hostile[name])
	}
	return t
}

func (ph *hostilePhase) legitRPS() float64 {
	if ph.Window <= 0 {
		return 0
	}
	return float64(ph.LegitOK) / ph.Window.Seconds()
}

// quietCPU is the gateway's CPU per legitimate request in the quiet phases.
func (r *hostileReport) quietCPU() time.Duration {
	var ok int
	var cpu time.Duration
	for _, ph := range r.Phases {
		if ph.Kind == phaseQuiet {
			ok += ph.LegitOK
			cpu += ph.GatewayCPU
		}
	}
	if ok == 0 {
		return 0
	}
	return cpu / time.Duration(ok)
}

// quietBeside is the reference of phase i: the mean legitimate rate of the
// quiet phases nearest before and after it (the one there is, at an end),
// passing over a quiet phase that measured nothing (its gateway stopped, or
// no legitimate request answered).
// The machine's speed drifts over a run: in the run of 2026-11-27
// 02:36 UTC the quiet phase after the attacks had 0.81 of the legitimate
// rate of the one before, which weighed on every attack's ratio to the
// mean of the two by more than the goal's margin. A report with only the
// quiet phases before and after every attack (those before interleaving)
// gets the mean of the two, as it had.
func (r *hostileReport) quietBeside(i int) float64 {
	return meanBeside(i, len(r.Phases), func(j int) float64 {
		if q := &r.Phases[j]; q.Kind == phaseQuiet && q.Stopped == "" {
			return q.legitRPS()
		}
		return 0
	})
}

// meanBeside is the mean of the rates of the phases nearest before and after
// phase i of n (the one there is, at an end) whose rate(j) is above 0: the
// quiet runs that measured something, rate 0 for any other phase.
func meanBeside(i, n int, rate func(j int) float64) float64 {
	var sum float64
	var found int
	for _, dir := range []int{-1, 1} {
		for j := i + dir; j >= 0 && j < n; j += dir {
			if x := rate(j); x > 0 {
				sum += x
				found++
				break
			}
		}
	}
	if found == 0 {
		return 0
	}
	return sum / float64(found)
}

// interleaved reports whether a quiet phase follows each shape's attack.
func (r *hostileReport) interleaved() bool {
	for i := range r.Phases {
		if r.Phases[i].Kind == phaseShape {
			return i+1 < len(r.Phases) && r.Phases[i+1].Kind == phaseQuiet
		}
	}
	return false
}

// cpuPerAnswer is the gateway's CPU per hostile answer of a phase: in the
// window of the attack alone when it has one; else (a report from before
// that window) its CPU net of the legitimate traffic (its requests × the
// quiet runs' CPU per request) ÷ the hostile answers. ok is false when no
// hostile request was answered. Pacing leaves a shape a few dozen answers
// a second, so subtracting the legitimate traffic's thousand from the
// mixed window leaves mostly noise: the attack alone measures it.
func (r *hostileReport) cpuPerAnswer(ph *hostilePhase) (per time.Duration, ok bool) {
	if a := ph.Alone; a != nil {
		if a.Answered == 0 {
			return 0, false
		}
		return a.GatewayCPU / time.Duration(a.Answered), true
	}
	n := ph.total().answered()
	if n == 0 {
		return 0, false
	}
	return max(ph.GatewayCPU-time.Duration(ph.LegitOK)*r.quietCPU(), 0) / time.Duration(n), true
}

// aloneMeasured reports whether the attack phases measured the attack alone.
func (r *hostileReport) aloneMeasured() bool {
	for _, ph := range r.Phases {
		if ph.Alone != nil {
			return true
		}
	}
	return false
}

// attackItem is one shape and key variant an attacker sends.
type attackItem struct {
	shape *hostileShape
	key   keyMode
}

// hostileRun is the state of one hostile-traffic benchmark.
type hostileRun struct {
	cfg       config
	b         binaries
	simURL    string
	target    *hostileTarget
	legitBody []byte
	rep       *hostileReport
}

// runHostile runs the hostile-traffic benchmark with the binaries of b.
func runHostile(ctx context.Context, cfg config, b binaries) (*hostileReport, error) {
	rep := &hostileReport{runInfo: startRun(cfg), Attackers: cfg.attackers,
		LegitClients: cfg.legitClients, LegitQuery: legitQuery, Window: cfg.hostileWindow, ShapeWindow: cfg.hostileShapeWindow,
		Timeout: cfg.hostileTimeout, RequestTimeout: cfg.hostileRequestTimeout, AloneWindow: cfg.hostileAloneWindow, RSSCap: int64(cfg.hostileRSSCapMiB) << 20,
		RandomDocs: cfg.randomDocs}
	shapes := hostileShapes
	if len(cfg.hostileShapes) > 0 {
		shapes = nil
		for _, n := range cfg.hostileShapes {
			shapes = append(shapes, *shapeByName(n))
		}
	}
	rep.Shapes = shapes

	simProc, simURL, simLog, err := startSim(ctx, b, 0)
	if err != nil {
		return nil, err
	}
	defer simLog.Close()
	defer simProc.stop()
	c, err := upstream.NewClient(simURL)
	if err != nil {
		return nil, err
	}
	pg, err := c.Budgets.List(upstream.WithAPIKey(ctx, attackKey), &upstream.ListOptions{Limit: 5})
	if err != nil || len(pg.Data) == 0 {
		return nil, fmt.Errorf("read organization one's budgets: %v", err)
	}
	first := pg.Data[0]
	t := &hostileTarget{budgetID: relay.BudgetID(first.ID), explorerReportID: first.ExplorerReportID}
	schema, err := loadSchema("graph")
	if err != nil {
		return nil, err
	}
	real := []string{t.budgetID}
	if len(first.Plannings) > 0 {
		real = append(real, relay.PlanningID(first.ID, first.Plannings[0].ID))
	}
	t.random = newDocGen(schema, 14, real).documents(cfg.randomDocs)
	t.prepare()
	h := &hostileRun{cfg: cfg, b: b, simURL: simURL, target: t, rep: rep,
		legitBody: mustBody(queryByName(legitQuery).Gateway, nil)}

	var items []attackItem
	for i := range shapes {
		for _, k := range shapes[i].Keys {
			items = append(items, attackItem{&shapes[i], k})
		}
	}
	type planned struct {
		name, kind string
		items      []attackItem
		window     time.Duration
	}
	plan := []planned{{"quiet, before", phaseQuiet, nil, cfg.hostileWindow}}
	if cfg.hostileShapeWindow > 0 {
		for i := range shapes {
			var own []attackItem
			for _, it := range items {
				if it.shape == &shapes[i] {
					own = append(own, it)
				}
			}
			plan = append(plan, planned{shapes[i].Name, phaseShape, own, cfg.hostileShapeWindow},
				planned{"quiet", phaseQuiet, nil, cfg.hostileShapeWindow})
		}
	}
	plan = append(plan, planned{"every shape at once", phaseMixed, items, cfg.hostileWindow},
		planned{"quiet, after", phaseQuiet, nil, cfg.hostileWindow})
	for _, p := range plan {
		ph, err := h.phase(ctx, p.name, p.kind, p.items, p.window)
		if err != nil {
			return rep, fmt.Errorf("hostile phase %q: %w", p.name, err)
		}
		rep.Phases = append(rep.Phases, ph)
		h.log(len(rep.Phases) - 1)
		if rep.RateLimit == 0 && ph.Kind == phaseQuiet {
			rep.RateLimit = hostileRateLimit(ph.legitRPS())
		}
	}
	if cfg.fairWindow > 0 {
		logf("fair share: tenant A %d clients, tenant B %d clients, on pinned cores", cfg.legitClients, cfg.attackers)
		fair, err := runFairShare(ctx, cfg, b, simURL, simProc.pid(), t)
		rep.FairShare = fair
		if err != nil {
			return rep, err
		}
	}
	rep.Finished = time.Now()
	rep.Goals = hostileGoals(rep)
	return rep, nil
}

// log writes phase i's line: an attack's legitimate rate against the
// quiet phase before it, the one after is still to come.
func (h *hostileRun) log(i int) {
	ph := &h.rep.Phases[i]
	quiet := h.rep.quietBeside(i)
	legit := fmt.Sprintf("legit %.0f req/s", ph.legitRPS())
	if ph.Kind != phaseQuiet && quiet > 0 {
		legit += fmt.Sprintf(" (%.2f of quiet)", ph.legitRPS()/quiet)
	}
	t := ph.total()
	hostile := ""
	if ph.Kind != phaseQuiet {
		per := "–"
		if c, ok := h.rep.cpuPerAnswer(ph); ok {
			per = ms(c)
		}
		hostile = fmt.Sprintf(" hostile sent %d answered %d timed out %d failed %d, CPU per answer %s;", t.Sent, t.answered(),
			t.TimedOut, t.Failed, per)
	}
	stopped := ""
	if ph.Stopped != "" {
		stopped = "; " + ph.Stopped
	}
	logf("hostile %-22s %s;%s gateway CPU %v, peak RSS %s%s", ph.Name, legit, hostile,
		ph.GatewayCPU.Round(time.Millisecond), mib(ph.PeakRSS), stopped)
	if ph.LegitErrors > 0 {
		logf("hostile %-22s %d legitimate errors, first: %.200s", ph.Name, ph.LegitErrors, ph.LegitFirstError)
	}
}

// hostileGoals are the goal lines of issue 14's hostile-traffic benchmark.
func hostileGoals(r *hostileReport) []goalRow {
	var rows []goalRow
	var attacks []*hostilePhase
	var ofQuiet []float64 // each attack's legitimate rate ÷ the quiet runs beside it
	referenced := true    // every attack has quiet runs beside it
	for i := range r.Phases {
		if ph := &r.Phases[i]; ph.Kind != phaseQuiet {
			attacks = append(attacks, ph)
			q := r.quietBeside(i)
			referenced = referenced && q > 0
			ofQuiet = append(ofQuiet, ph.legitRPS()/q)
		}
	}
	// Per document: the shape phases, or the mixed one when there are none.
	perDoc := slices.DeleteFunc(slices.Clone(attacks), func(ph *hostilePhase) bool { return ph.Kind != phaseShape })
	if len(perDoc) == 0 {
		perDoc = attacks
	}
	goal := fmt.Sprintf("every hostile document answered within %s of gateway CPU", ms(goalHostileCPU))
	if len(perDoc) == 0 {
		rows = append(rows, notMeasured(goal, "no attack phase"))
	} else {
		met, worstName, worst := 0, "", time.Duration(-1)
		var misses []string
		for _, ph := range perDoc {
			t := ph.total()
			per := time.Duration(1<<62 - 1)
			if c, ok := r.cpuPerAnswer(ph); ok {
				per = c
			}
			if t.answered() > 0 && t.TimedOut == 0 && t.Failed == 0 && per <= goalHostileCPU {
				met++
			} else {
				misses = append(misses, ph.Name)
			}
			if per > worst {
				worst, worstName = per, ph.Name
			}
		}
		w := "none answered"
		if worst < 1<<62-1 {
			w = ms(worst) + " per answer"
		}
		rows = append(rows, goalRow{Goal: goal, Met: met == len(perDoc), Measured: fmt.Sprintf(
			"met by %d of %d; worst %s (%s); missed: %s", met, len(perDoc), worstName, w, listOrNone(misses))})
	}

	goal = fmt.Sprintf("peak RSS under 150 MB with %d concurrent attackers", r.Attackers)
	if len(attacks) == 0 {
		rows = append(rows, notMeasured(goal, "no attack phase"))
	} else {
		met, peak, peakName := 0, int64(0), ""
		for _, ph := range attacks {
			if ph.PeakRSS < goalHostileRSS && ph.Stopped == "" {
				met++
			}
			if ph.PeakRSS > peak {
				peak, peakName = ph.PeakRSS, ph.Name
			}
		}
		rows = append(rows, goalRow{Goal: goal, Met: met == len(attacks), Measured: fmt.Sprintf(
			"met in %d of %d attack phases; highest %s (%s)", met, len(attacks), mib(peak), peakName)})
	}

	goal = "legitimate throughput ≥ 90 % of the quiet run's"
	if r.interleaved() {
		goal = "legitimate throughput ≥ 90 % of the quiet runs' beside each attack"
	}
	if len(attacks) == 0 || !referenced {
		rows = append(rows, notMeasured(goal, "no attack phase or no quiet run"))
	} else {
		met, worst, worstName := 0, math.Inf(1), ""
		mixed := "–"
		for i, ph := range attacks {
			x := ofQuiet[i]
			if x >= goalLegitOfQuiet {
				met++
			}
			if x < worst {
				worst, worstName = x, ph.Name
			}
			if ph.Kind == phaseMixed {
				mixed = fmt.Sprintf("%.2f", x)
			}
		}
		rows = append(rows, goalRow{Goal: goal, Met: met == len(attacks), Measured: fmt.Sprintf(
			"every shape at once: %s of quiet; met in %d of %d attack phases; worst %.2f (%s)", mixed, met, len(attacks),
			worst, worstName)})
	}
	return rows
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
