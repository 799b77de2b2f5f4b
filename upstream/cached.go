package upstream

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// Cache outcomes of a call, as Attempt.Cache names them.
const (
	CacheMiss    = "miss"    // nothing usable was held: the call was sent
	CacheRefresh = "refresh" // the request asked for fresh data (WithCacheRefresh): sent
	CacheHit     = "hit"     // served from the cache: nothing sent
	CacheStale   = "stale"   // the refresh failed; served from an expired entry
)

// fetched is the outcome of one real call, as the callers waiting on it in
// the cache's flight share it.
type fetched struct {
	env  answerEnvelope
	sent time.Time
}

// cachedCall answers the read cl from the cache when it may, and otherwise
// sends it and keeps its answer.
func cachedCall[T any](ctx context.Context, c *Client, cl call) (*envelope[T], error) {
	ca := c.cache
	key, ok := APIKeyFrom(ctx)
	if !ok || checkAPIKey(key) != "" {
		env, _, err := fetch[T](ctx, c, cl, nil) // refused as without a cache
		return env, err
	}
	if cl.body != nil {
		b, err := json.Marshal(cl.body)
		if err != nil {
			env, _, err := fetch[T](ctx, c, cl, nil) // refused as without a cache
			return env, err
		}
		cl.encoded = b
	}
	kh := keyHash(key)
	cl.keyHash, cl.hashed = kh, true
	ek := entryKey(kh, &cl)
	ttl := ca.ttlOf(cl.op)
	st := ca.stats[cl.op]
	rs := CacheStatsFrom(ctx)
	cl.cache = CacheRefresh
	var stale *entry
	var probe chan struct{}
	fresh := false
	if !refreshFrom(ctx) {
		cl.cache = CacheMiss
		if fresh, probe = ca.admit(ctx, kh); fresh {
			if e := lookup[T](ctx, ca, ek); e != nil {
				now := ca.now()
				if now.Sub(e.fetched) < ttl {
					st.hits.Add(1)
					rs.served(e.fetched)
					c.observeCached(ctx, &cl, CacheHit)
					return e.env.(*envelope[T]), nil
				}
				stale = e
			}
		}
	}
	// What the answer will depend on, and the versions of it, read before
	// any call is sent or joined: a write that answered before this read
	// began has bumped them.
	v := ca.readVersions(ctx, &cl, kh)
	if fresh && v.err == nil {
		// Callers of the same key missing the same entry at once share
		// one call, the first one's: only one sent after the same
		// writes, so the flight is named by the versions too.
		own := false
		ch := ca.flight.DoChan(v.flightKey(ek), func() (any, error) {
			own = true
			return fetchAndKeep[T](ctx, c, cl, ek, v)
		})
		select {
		case r := <-ch:
			if own { // sent, whatever its answer
				st.misses.Add(1)
				rs.missed()
			}
			if r.Err == nil {
				f := r.Val.(fetched)
				if !own {
					st.hits.Add(1)
					rs.served(f.sent)
				}
				return f.env.(*envelope[T]), nil
			}
			if own || ctx.Err() != nil || !errors.Is(r.Err, context.Canceled) && !errors.Is(r.Err, context.DeadlineExceeded) {
				return serveStale[T](ctx, c, &cl, stale, r.Err)
			}
			// The caller whose call this was went away: make our own.
		case <-ctx.Done():
			return nil, &Error{Op: cl.op, Code: codeNoResponse, Message: "gave up waiting for the upstream's answer",
				Err: ctx.Err()}
		}
	}
	st.misses.Add(1)
	rs.missed()
	f, err := fetchAndKeep[T](ctx, c, cl, ek, v)
	if probe != nil {
		ca.endProbe(kh, probe)
	}
	if err != nil {
		return serveStale[T](ctx, c, &cl, stale, err)
	}
	return f.env.(*envelope[T]), nil
}

// versioned is what an answer depends on (its tags) and their versions when
// the read began; err is set when they could not be read, and then the
// answer is not kept, since no later write could be seen to change it.
type versioned struct {
	tags  []string
	epoch string
	vers  []uint64
	err   error
}

// readVersions reads the tags of cl and their versions.
func (ca *Cache) readVersions(ctx context.Context, cl *call, kh [32]byte) versioned {
	v := versioned{tags: ca.tags(cl, kh)}
	v.epoch, v.vers, v.err = ca.versions(ctx, v.tags)
	return v
}

// flightKey names the call of ek made after the writes v has seen.
func (v versioned) flightKey(ek [32]byte) string {
	b := append(ek[:], v.epoch...)
	for _, n := range v.vers {
		b = strconv.AppendUint(append(b, ' '), n, 10)
	}
	return string(b)
}

// fetchAndKeep sends cl and keeps its answer under ek with the versions v
// read before, unless they could not be read, or the answer is too big to
// be worth keeping.
func fetchAndKeep[T any](ctx context.Context, c *Client, cl call, ek [32]byte, v versioned) (fetched, error) {
	ca := c.cache
	kh := cl.keyHash
	keep := &capture{limit: ca.maxEntry}
	sent := ca.now()
	env, _, err := fetch[T](ctx, c, cl, keep)
	if err != nil {
		return fetched{}, err
	}
	if org := orgOf(env); org != "" {
		ca.learn(kh, org)
	}
	if v.err == nil && !keep.over {
		e := &entry{op: cl.op, env: env, size: weight(cl.op, len(keep.buf)), fetched: sent,
			tags: v.tags, epoch: v.epoch, vers: v.vers}
		ca.add(ek, e)
		if ca.shared != nil {
			ca.store(ctx, ek, e, keep.buf)
		}
	}
	return fetched{env: env, sent: sent}, nil
}

// orgOf is the organization of the budgets an answer holds, or "".
func orgOf(env answerEnvelope) string {
	switch e := env.(type) {
	case *envelope[[]Budget]:
		if len(*e.Data) > 0 {
			return (*e.Data)[0].OrganizationID
		}
	case *envelope[budgetDetailWire]:
		return e.Data.Budget.OrganizationID
	}
	return ""
}

// serveStale answers in place of a failed refresh from stale, when the
// failure is the upstream's and stale is within the stale window; else it
// returns err.
func serveStale[T any](ctx context.Context, c *Client, cl *call, stale *entry, err error) (*envelope[T], error) {
	ca := c.cache
	now := ca.now()
	if stale == nil || !staleOK(ctx, err) || now.Sub(stale.fetched) >= ca.ttlOf(cl.op)+ca.stale {
		return nil, err
	}
	ca.stats[cl.op].stale.Add(1)
	CacheStatsFrom(ctx).servedStale(stale.fetched)
	c.observeCached(ctx, cl, CacheStale)
	return stale.env.(*envelope[T]), nil
}

// lookup returns the entry of ek, in process or else shared, when no write
// changed what it holds; nil when there is none, or when that could not be
// checked.
func lookup[T any](ctx context.Context, ca *Cache, ek [32]byte) *entry {
	e := ca.get(ek)
	local := e != nil
	if e != nil && ca.now().Sub(e.fetched) >= ca.ttlOf(e.op)+ca.stale {
		ca.remove(ek, e)
		e, local = nil, false
	}
	if e == nil && ca.shared != nil {
		e = loadShared[T](ctx, ca, ek)
	}
	if e == nil {
		return nil
	}
	ok, err := ca.valid(ctx, e)
	if err != nil {
		return nil
	}
	if !ok {
		ca.stats[e.op].evictedWrite.Add(1)
		if local {
			ca.remove(ek, e)
		}
		return nil
	}
	if !local {
		ca.add(ek, e)
	}
	return e
}

// sharedEntry is the header of an entry in a SharedCache; the answer's bytes
// follow it after a newline.
type sharedEntry struct {
	Op      string   `json:"op"`
	Fetched int64    `json:"fetched"` // unix milliseconds
	Tags    []string `json:"tags,omitempty"`
	Epoch   string   `json:"epoch,omitempty"`
	Vers    []uint64 `json:"vers,omitempty"`
}

// sharedKey names the entry of ek in a SharedCache.
func sharedKey(ek [32]byte) string { return hex.EncodeToString(ek[:]) }

// store writes e, whose answer is raw, to the shared cache, for its TTL and
// the stale window; a failure only costs other replicas a miss.
func (ca *Cache) store(ctx context.Context, ek [32]byte, e *entry, raw []byte) {
	h, _ := json.Marshal(sharedEntry{Op: e.op, Fetched: e.fetched.UnixMilli(), Tags: e.tags, Epoch: e.epoch, Vers: e.vers})
	v := make([]byte, 0, len(h)+1+len(raw))
	v = append(append(append(v, h...), '\n'), raw...)
	_ = ca.shared.Set(ctx, sharedKey(ek), v, ca.ttlOf(e.op)+ca.stale)
}

// loadShared reads the entry of ek from the shared cache, or nil.
func loadShared[T any](ctx context.Context, ca *Cache, ek [32]byte) *entry {
	v, err := ca.shared.Get(ctx, sharedKey(ek))
	if err != nil || v == nil {
		return nil
	}
	head, raw, ok := bytes.Cut(v, []byte{'\n'})
	var h sharedEntry
	if !ok || json.Unmarshal(head, &h) != nil || ca.stats[h.Op] == nil {
		return nil
	}
	env := new(envelope[T])
	if decodeAnswer(bytes.NewReader(raw), env) != nil || !env.hasData() {
		return nil
	}
	e := &entry{op: h.Op, env: env, size: weight(h.Op, len(raw)),
		fetched: time.UnixMilli(h.Fetched), tags: h.Tags, epoch: h.Epoch, vers: h.Vers}
	if ca.now().Sub(e.fetched) >= ca.ttlOf(e.op)+ca.stale {
		return nil
	}
	return e
}

// endProbe ends the recheck of the key of kh that admit gave probe for,
// whatever its answer (which answered recorded).
func (ca *Cache) endProbe(kh [32]byte, probe chan struct{}) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ks, ok := ca.keys.Peek(kh); ok && ks.probe == probe {
		ks.probe = nil
	}
	close(probe)
}

// observeCached tells the observer of a call answered from the cache
// (outcome CacheHit or CacheStale), as an attempt numbered 0: nothing was
// sent.
func (c *Client) observeCached(ctx context.Context, cl *call, outcome string) {
	if c.observer == nil {
		return
	}
	info := Attempt{Op: cl.op, Method: cl.method, Route: cl.route, ServerAddress: c.serverHost,
		ServerPort: c.serverPort, Cache: outcome}
	if _, done := c.observer(keylessContext{ctx}, info); done != nil {
		done(AttemptResult{Attempt: info, Class: ClassOK})
	}
}

// capture keeps the bytes of an answer, up to limit.
type capture struct {
	buf   []byte
	limit int
	over  bool
}

func (k *capture) Write(p []byte) (int, error) {
	if !k.over {
		if len(k.buf)+len(p) > k.limit {
			k.over, k.buf = true, nil
		} else {
			k.buf = append(k.buf, p...)
		}
	}
	return len(p), nil
}

func (k *capture) reset() { k.buf, k.over = k.buf[:0], false }

// CacheStats are what one request's calls got from the cache
// (WithCacheStats).
type CacheStats struct {
	hits, misses atomic.Int64
	stale        atomic.Bool
	oldest       atomic.Int64 // unix nanoseconds of the oldest data served; 0: none
}

type cacheStatsKey struct{}
type cacheRefreshKey struct{}

// WithCacheStats returns a context whose calls count what they got from
// the cache into the returned CacheStats.
func WithCacheStats(ctx context.Context) (context.Context, *CacheStats) {
	s := new(CacheStats)
	return context.WithValue(ctx, cacheStatsKey{}, s), s
}

// WithCacheRefresh returns a context whose calls read nothing from the
// cache, and keep what they fetch: a request's Cache-Control: no-cache.
func WithCacheRefresh(ctx context.Context) context.Context {
	return context.WithValue(ctx, cacheRefreshKey{}, true)
}

func refreshFrom(ctx context.Context) bool { v, _ := ctx.Value(cacheRefreshKey{}).(bool); return v }

// cacheStatsFrom returns ctx's CacheStats; a nil one counts nothing.
func CacheStatsFrom(ctx context.Context) *CacheStats {
	s, _ := ctx.Value(cacheStatsKey{}).(*CacheStats)
	return s
}

func (s *CacheStats) missed() {
	if s != nil {
		s.misses.Add(1)
	}
}

// served counts a hit of data fetched at fetched.
func (s *CacheStats) served(fetched time.Time) {
	if s == nil {
		return
	}
	s.hits.Add(1)
	s.oldestAt(fetched)
}

// servedStale records data fetched at fetched served stale after the
// refresh, counted as a miss, failed.
func (s *CacheStats) servedStale(fetched time.Time) {
	if s == nil {
		return
	}
	s.stale.Store(true)
	s.oldestAt(fetched)
}

// oldestAt records data fetched at fetched among what was served.
func (s *CacheStats) oldestAt(fetched time.Time) {
	at := fetched.UnixNano()
	for {
		old := s.oldest.Load()
		if old != 0 && old <= at || s.oldest.CompareAndSwap(old, at) {
			return
		}
	}
}

// Hits is how many calls were answered without a call of their own: from
// the cache, or from another request's call in flight.
func (s *CacheStats) Hits() int64 { return s.hits.Load() }

// Misses is how many cacheable calls were sent.
func (s *CacheStats) Misses() int64 { return s.misses.Load() }

// Stale reports whether any call was answered from an expired entry.
func (s *CacheStats) Stale() bool { return s.stale.Load() }

// Age is the age at now of the oldest data served from the cache; 0 when
// none was.
func (s *CacheStats) Age(now time.Time) time.Duration {
	if at := s.oldest.Load(); at != 0 {
		return max(now.Sub(time.Unix(0, at)), 0)
	}
	return 0
}
