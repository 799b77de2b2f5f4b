package main

// The load of the hostile-traffic benchmark's phases: each phase on a
// gateway of its own under a watchdog, the attackers, and the closed loops of
// the legitimate clients and of the fair share's tenants.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// watchdog samples a process's RSS and CPU, and kills it above a cap.
type watchdog struct {
	mu      sync.Mutex
	maxRSS  int64
	lastCPU time.Duration
	why     string
	done    chan struct{}
}

func watch(ctx context.Context, p *proc, capBytes int64) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			rss, cpu := statusKB(p.pid(), "VmRSS"), cpuOf([]int{p.pid()})
			w.mu.Lock()
			w.maxRSS = max(w.maxRSS, rss)
			if cpu > 0 {
				w.lastCPU = cpu
			}
			switch {
			case p.exited() && w.why == "":
				w.why = fmt.Sprintf("the gateway exited on its own (%v)", p.err)
			case capBytes > 0 && rss > capBytes && w.why == "":
				w.why = fmt.Sprintf("killed by the harness at %s RSS, over the cap of %s", mib(rss), mib(capBytes))
				_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-p.done:
				if w.why != "" {
					return
				}
			case <-tick.C:
			}
		}
	}()
	return w
}

// window is the measured window of a phase, set once it opens.
type window struct{ from, to atomic.Int64 }

// in reports whether t is inside the window.
func (w *window) in(t time.Time) bool {
	from, to := w.from.Load(), w.to.Load()
	return from != 0 && t.UnixNano() >= from && (to == 0 || t.UnixNano() < to)
}

// hostileCallerInFlight is the gateway's -caller-in-flight in the hostile
// benchmark: a public endpoint whose callers are separate organizations.
const hostileCallerInFlight = 4

// hostileRateLimit is the gateway's -rate-limit for the phases after the
// first quiet one, from the legitimate rate measured in it: twice that,
// rounded up to a hundred, as an operator sets a rate limit above the
// busiest legitimate key's peak. Attackers with a key that send on past it
// are then paced (-caller-refusals); the legitimate key never meets it.
func hostileRateLimit(legitRPS float64) int {
	return int(math.Ceil(2*legitRPS/100)) * 100
}

// phase runs one phase on a gateway of its own.
func (h *hostileRun) phase(ctx context.Context, name, kind string, items []attackItem, length time.Duration) (hostilePhase, error) {
	ph := hostilePhase{Name: name, Kind: kind, Window: length, Hostile: map[string]*shapeStats{}}
	args := []string{"-request-timeout", h.cfg.hostileRequestTimeout.String(), "-caller-in-flight", strconv.Itoa(hostileCallerInFlight)}
	if h.rep.RateLimit > 0 {
		args = append(args, "-rate-limit", strconv.Itoa(h.rep.RateLimit))
	}
	gw, url, err := startGateway(ctx, "gateway", h.b.gateway, h.simURL, nil, args...)
	if err != nil {
		return ph, err
	}
	defer gw.kill()
	t := *h.target
	t.url = url

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wd := watch(runCtx, gw, int64(h.cfg.hostileRSSCapMiB)<<20)
	var win window
	var counter atomic.Int64 // numbers every hostile request of the phase
	if len(items) > 0 && h.cfg.hostileAloneWindow > 0 {
		ph.Alone = h.attackAlone(runCtx, &t, items, gw, &counter)
	}

	// The legitimate clients start first and warm up.
	legitHC := newHTTPClient(h.cfg.legitClients)
	var legitWG sync.WaitGroup
	var legitMu sync.Mutex
	warm := make(chan struct{}, h.cfg.legitClients)
	for range h.cfg.legitClients {
		legitWG.Go(func() {
			ok, errs, first := tenantLoop(runCtx, legitHC, url, legitKey, [][]byte{h.legitBody}, 0, &win, warm)
			legitMu.Lock()
			ph.LegitOK += ok
			ph.LegitErrors += errs
			if ph.LegitFirstError == "" {
				ph.LegitFirstError = first
			}
			legitMu.Unlock()
		})
	}
	warmDeadline := time.After(10 * time.Second)
	for range h.cfg.legitClients {
		select {
		case <-warm:
		case <-warmDeadline:
			return ph, errors.New("the legitimate clients had no answer in 10 s before the attack")
		case <-ctx.Done():
			return ph, ctx.Err()
		}
	}
	time.Sleep(legitWarmup)

	_ = resetPeakRSS([]int{gw.pid()})
	cpu0 := cpuOf([]int{gw.pid()})
	win.from.Store(time.Now().UnixNano())

	attackers := func() map[string]*shapeStats { return nil }
	if len(items) > 0 {
		attackers = h.startAttackers(runCtx, &t, items, &counter, &win)
	}
	select {
	case <-time.After(length):
	case <-ctx.Done():
	}
	win.to.Store(time.Now().UnixNano())
	cpu1 := cpuOf([]int{gw.pid()})
	hwm := statusKB(gw.pid(), "VmHWM")
	cancel()
	for k, v := range attackers() {
		ph.Hostile[k] = v
	}
	legitWG.Wait()
	<-wd.done
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if cpu1 == 0 || gw.exited() {
		cpu1 = wd.lastCPU
	}
	ph.GatewayCPU = max(cpu1-cpu0, 0)
	ph.PeakRSS = max(hwm, wd.maxRSS)
	ph.Stopped = wd.why
	return ph, ctx.Err()
}

// attackAlone runs the attackers alone for the alone window, before the
// legitimate clients start, and measures the gateway's CPU and the hostile
// requests answered in it. A caller the attack gets paced stays paced into
// the window with the legitimate clients, as it would under a real attack.
func (h *hostileRun) attackAlone(ctx context.Context, t *hostileTarget, items []attackItem, gw *proc, counter *atomic.Int64) *aloneWindow {
	actx, stop := context.WithCancel(ctx)
	defer stop()
	var win window
	cpu0 := cpuOf([]int{gw.pid()})
	start := time.Now()
	win.from.Store(start.UnixNano())
	attackers := h.startAttackers(actx, t, items, counter, &win)
	select {
	case <-time.After(h.cfg.hostileAloneWindow):
	case <-ctx.Done():
	}
	end := time.Now()
	win.to.Store(end.UnixNano())
	cpu1 := cpuOf([]int{gw.pid()})
	stop()
	answered := 0
	for _, st := range attackers() {
		answered += st.answered()
	}
	return &aloneWindow{Window: end.Sub(start), GatewayCPU: max(cpu1-cpu0, 0), Answered: answered}
}

// startAttackers starts the attackers, each sending items to t until ctx
// ends and counting what ends in win; the func it returns waits for them
// (once ctx has ended) and gives what they saw, per shape.
func (h *hostileRun) startAttackers(ctx context.Context, t *hostileTarget, items []attackItem, counter *atomic.Int64,
	win *window) func() map[string]*shapeStats {
	hc := newHTTPClient(h.cfg.attackers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]*shapeStats{}
	for i := range h.cfg.attackers {
		wg.Go(func() {
			local := attack(ctx, hc, t, items, i, h.cfg.hostileTimeout, counter, win)
			mu.Lock()
			defer mu.Unlock()
			for k, v := range local {
				if seen[k] == nil {
					seen[k] = &shapeStats{}
				}
				seen[k].add(v)
			}
		})
	}
	return func() map[string]*shapeStats {
		wg.Wait()
		hc.CloseIdleConnections()
		return seen
	}
}

// legitWarmup is how long the legitimate traffic runs alone before the
// window, once every legitimate client has had an answer.
const legitWarmup = 300 * time.Millisecond

// legitTimeout bounds one legitimate request.
const legitTimeout = 10 * time.Second

func newHTTPClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = conns*2, conns*2
	t.DisableCompression = true
	return &http.Client{Transport: t}
}

// tenantLoop sends bodies in turn, from the i-th, with key, back to back
// until ctx ends, and counts the answers that end in the window: good ones
// (200, no error) and the rest. It signals warm after its first answer.
func tenantLoop(ctx context.Context, hc *http.Client, url, key string, bodies [][]byte, i int, win *window, warm chan<- struct{}) (ok, errs int, first string) {
	warmed := false
	for ; ctx.Err() == nil; i++ {
		rctx, cancel := context.WithTimeout(ctx, legitTimeout)
		req, err := http.NewRequestWithContext(rctx, "POST", url, bytes.NewReader(bodies[i%len(bodies)]))
		if err != nil {
			cancel()
			return ok, errs + 1, err.Error()
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		var answer []byte
		resp, err := hc.Do(req)
		if err == nil {
			answer, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			if err == nil && (resp.StatusCode != 200 || bytes.Contains(answer, []byte(`"errors":`))) {
				err = fmt.Errorf("status %d: %.200s", resp.StatusCode, answer)
			}
		}
		cancel()
		if ctx.Err() != nil {
			break
		}
		if !warmed {
			warmed = true
			warm <- struct{}{}
		}
		if !win.in(time.Now()) {
			continue
		}
		if err != nil {
			errs++
			if first == "" {
				first = err.Error()
			}
			continue
		}
		ok++
	}
	if !warmed {
		warm <- struct{}{}
	}
	return ok, errs, first
}

// attack is one attacker: it sends items in turn, starting at start, each
// request with a client timeout, until ctx ends, and returns what it saw
// per shape.
func attack(ctx context.Context, hc *http.Client, t *hostileTarget, items []attackItem, start int, timeout time.Duration,
	counter *atomic.Int64, win *window) map[string]*shapeStats {
	out := map[string]*shapeStats{}
	for i := 0; ctx.Err() == nil; i++ {
		it := items[(start+i)%len(items)]
		st := out[it.shape.Name]
		if st == nil {
			st = &shapeStats{Statuses: map[string]int{}}
			out[it.shape.Name] = st
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		req, err := it.shape.newRequest(rctx, t, counter.Add(1), it.key)
		if err != nil {
			cancel()
			st.Failed++
			st.FirstFailure = "the harness could not make the request: " + err.Error()
			return out
		}
		st.Sent++
		t0 := time.Now()
		var answer []byte
		resp, err := hc.Do(req)
		if err == nil {
			answer, err = io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			resp.Body.Close()
		}
		took := time.Since(t0)
		timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded)
		cancel()
		switch {
		case ctx.Err() != nil || !win.in(time.Now()):
			st.Unfinished++
		case err == nil:
			if it.key == withKey {
				st.AnsweredWithKey++
			} else {
				st.AnsweredWithoutKey++
			}
			st.Statuses[statusOf(resp.StatusCode, answer)]++
			st.MaxAnswerBytes = max(st.MaxAnswerBytes, len(answer))
			st.SlowestAnswer = max(st.SlowestAnswer, took)
		case timedOut:
			st.TimedOut++
		default:
			st.Failed++
			if st.FirstFailure == "" {
				st.FirstFailure = err.Error()
			}
		}
	}
	return out
}

// statusOf is an answer's status with the first extensions.code in it, such
// as "400 MAX_TOKENS_LIMIT", or the status alone.
func statusOf(status int, body []byte) string {
	s := fmt.Sprint(status)
	const marker = `"code":"`
	if i := bytes.Index(body, []byte(marker)); i >= 0 {
		rest := body[i+len(marker):]
		if j := bytes.IndexByte(rest, '"'); j > 0 && j < 64 {
			s += " " + string(rest[:j])
		}
	} else if status == 200 && !bytes.Contains(body, []byte(`"errors"`)) {
		s += " data"
	}
	return s
}
