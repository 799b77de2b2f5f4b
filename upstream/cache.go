package upstream

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/costgw/gateway/upstream/ops"
)

// Cache keeps the upstream's read answers, decoded, across calls
// (WithCache; docs/caching.md). An entry is served only to the bearer key
// that fetched it, and only while the upstream accepted that key within
// KeyRecheck. A write through the client evicts, for every key, the entries
// that hold what it changed: entries record the versions of the tags they
// depend on (a budget, an organization's budget lists) when their call is
// sent, and a write bumps those versions, in process or in a SharedCache.
//
// Values served from the cache are shared by every call that reads them:
// callers must not modify what a Client method returns.
type Cache struct {
	ttl      map[string]time.Duration
	stale    time.Duration
	maxBytes int64
	maxEntry int
	recheck  time.Duration
	shared   SharedCache
	log      *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	entries *simplelru.LRU[[32]byte, *entry]
	bytes   int64
	keys    *simplelru.LRU[[32]byte, *keyState]
	orgs    *simplelru.LRU[[32]byte, string]
	local   map[string]localVersion // the tags' versions without a SharedCache
	clock   uint64                  // the last local version given

	// unbumped is when a write's eviction last failed to reach the
	// SharedCache (unix nanoseconds): no entry with tags fetched before is
	// served here, as its versions may not show that write.
	unbumped atomic.Int64
	// retry holds the tags of failed bumps, sent again every bumpRetry
	// until the shared cache takes them.
	retry struct {
		sync.Mutex
		tags      map[string]struct{}
		scheduled bool
	}

	flight singleflight.Group
	stats  map[string]*opStats
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	// TTL is how long an answer of each operation stays fresh; an
	// operation without one is not cached. DefaultCacheTTL has the defaults.
	TTL map[string]time.Duration
	// StaleIfError is how long past its TTL an entry may still answer when
	// the call that would refresh it fails with the upstream's fault.
	StaleIfError time.Duration
	// MaxBytes bounds the entries held in process.
	MaxBytes int64
	// KeyRecheck is how long the upstream's last acceptance of a key lets
	// the key be served from the cache.
	KeyRecheck time.Duration
	// Shared, when set, holds entries and tag versions for every replica.
	Shared SharedCache
	// Logger gets a line when a write's eviction could not reach Shared.
	Logger *slog.Logger
}

// A SharedCache is where replicas keep entries and the versions of tags
// (package sharedstate has one in Redis). Keys and tags it is given hold no
// bearer key: entries are named by a hash, tags by budget and organization
// ids.
type SharedCache interface {
	// Get returns the value stored under key, nil when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key for ttl.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Versions returns the current version of each tag (0 for one never
	// bumped) and the store's epoch, which changes when the store lost its
	// versions, so entries recorded before are not trusted.
	Versions(ctx context.Context, tags []string) (epoch string, versions []uint64, err error)
	// Bump gives each tag a new version, kept for at least keep.
	Bump(ctx context.Context, tags []string, keep time.Duration) error
}

// DefaultCacheTTL is how long each read stays fresh unless configured:
// budgets a little, as people edit them; what the upstream computes from
// billing data (Explorer, recommendations, anomalies, lookbacks) longer, as
// it changes hourly at most.
var DefaultCacheTTL = map[string]time.Duration{
	ops.ListBudgets:                30 * time.Second,
	ops.GetBudget:                  time.Minute,
	ops.GetBudgetActuals:           time.Minute,
	ops.GetBudgetPlanning:          time.Minute,
	ops.BudgetLookbackGet:          5 * time.Minute,
	ops.BudgetLookbackPost:         5 * time.Minute,
	ops.ExplorerSummary:            5 * time.Minute,
	ops.ExplorerPreviousPeriod:     5 * time.Minute,
	ops.ExplorerHistory:            5 * time.Minute,
	ops.ExplorerHeatmap:            5 * time.Minute,
	ops.ExplorerDimensionValues:    5 * time.Minute,
	ops.ListRecommendations:        5 * time.Minute,
	ops.ListAnomalies:              5 * time.Minute,
	ops.ListScheduledNotifications: time.Minute,
}

// CacheGroups are names that stand for several operations in ParseCacheTTL.
var CacheGroups = map[string][]string{
	"explorer": {ops.ExplorerSummary, ops.ExplorerPreviousPeriod, ops.ExplorerHistory, ops.ExplorerHeatmap,
		ops.ExplorerDimensionValues},
	"budgets": {ops.ListBudgets, ops.GetBudget, ops.GetBudgetActuals, ops.GetBudgetPlanning},
}

// ParseCacheTTL reads a list of TTLs, op=duration separated by commas
// (listBudgets=30s,getBudget=1m,explorer=5m: an operation the cache keeps
// or a CacheGroups name), over DefaultCacheTTL; or one duration for every
// operation. A TTL of 0 leaves the operation uncached.
func ParseCacheTTL(s string) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(DefaultCacheTTL))
	s = strings.TrimSpace(s)
	if s != "" && !strings.Contains(s, "=") {
		d, err := parseTTL(s)
		if err != nil {
			return nil, err
		}
		for op := range DefaultCacheTTL {
			out[op] = d
		}
		return out, nil
	}
	for op, d := range DefaultCacheTTL {
		out[op] = d
	}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, v, _ := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		d, err := parseTTL(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch group, ok := CacheGroups[name]; {
		case ok:
			for _, op := range group {
				out[op] = d
			}
		case DefaultCacheTTL[name] != 0:
			out[name] = d
		default:
			return nil, fmt.Errorf("%q is no operation the cache keeps; expected one of %s", name, cachedOps())
		}
	}
	return out, nil
}

func parseTTL(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration of 0 or more, such as 30s or 5m", strings.TrimSpace(v))
	}
	return d, nil
}

func cachedOps() string {
	names := make([]string, 0, len(DefaultCacheTTL)+len(CacheGroups))
	for op := range DefaultCacheTTL {
		names = append(names, op)
	}
	sort.Strings(names)
	groups := make([]string, 0, len(CacheGroups))
	for g := range CacheGroups {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	return strings.Join(append(names, groups...), ", ")
}

// Bounds of the cache.
const (
	// maxEntryBytes is the largest answer worth caching: a page of 200 of
	// the simulator's budgets is 86 KB.
	maxEntryBytes = 1 << 20
	// entryOverhead is what an entry holds beyond its decoded answer.
	entryOverhead = 1024
	// decodedFactor is at most how much more a decoded answer holds than
	// its JSON text, and historyFactor that of explorerHistory's rows of
	// small values (TestCacheEntryEstimate measures both: 0.5 to 2.3 times,
	// and 5.2).
	decodedFactor = 3
	historyFactor = 6
	// maxKeys bounds the keys whose acceptance and organization the cache
	// remembers; a key forgotten is checked again.
	maxKeys = 100_000
	// maxLocalTags bounds the tag versions kept without a SharedCache.
	maxLocalTags = 100_000
)

// NewCache returns a cache of cfg.
func NewCache(cfg CacheConfig) (*Cache, error) {
	if cfg.MaxBytes <= 0 {
		return nil, fmt.Errorf("upstream: cache MaxBytes must be positive, got %d", cfg.MaxBytes)
	}
	if cfg.StaleIfError < 0 || cfg.KeyRecheck < 0 {
		return nil, errors.New("upstream: cache durations must not be negative")
	}
	ca := &Cache{
		ttl:      cfg.TTL,
		stale:    cfg.StaleIfError,
		maxBytes: cfg.MaxBytes,
		maxEntry: int(min(maxEntryBytes, cfg.MaxBytes/(8*historyFactor))),
		recheck:  cfg.KeyRecheck,
		shared:   cfg.Shared,
		log:      cmp.Or(cfg.Logger, discardLogger),
		now:      time.Now,
		local:    map[string]localVersion{},
		stats:    map[string]*opStats{},
	}
	if ca.ttl == nil {
		ca.ttl = DefaultCacheTTL
	}
	for op := range DefaultCacheTTL {
		ca.stats[op] = new(opStats)
	}
	for op := range ca.ttl {
		if ca.stats[op] == nil {
			return nil, fmt.Errorf("upstream: the cache keeps no operation %q", op)
		}
	}
	var err error
	// The entries are bounded by their bytes (evictBytes), not by count.
	if ca.entries, err = simplelru.NewLRU[[32]byte, *entry](1<<30, ca.onEvict); err != nil {
		return nil, err
	}
	ca.keys, _ = simplelru.NewLRU[[32]byte, *keyState](maxKeys, nil)
	ca.orgs, _ = simplelru.NewLRU[[32]byte, string](maxKeys, nil)
	return ca, nil
}

// WithCache has the client keep its read answers in ca.
func WithCache(ca *Cache) Option {
	return func(c *Client) error { c.cache = ca; return nil }
}

// entry is one cached answer.
type entry struct {
	op      string
	env     answerEnvelope // decoded; shared, never modified
	size    int64
	fetched time.Time // when the call that fetched it was sent
	tags    []string
	epoch   string
	vers    []uint64
}

// keyState is what the cache knows of a bearer key.
type keyState struct {
	accepted time.Time     // the send time of the last call the upstream accepted
	refused  time.Time     // the last 401 or 403
	probe    chan struct{} // closed when the call rechecking the key is answered
}

type localVersion struct {
	v  uint64
	at time.Time
}

// opStats are one operation's counters (Cache.Stats).
type opStats struct {
	hits, misses, stale, evictedWrite, evictedSize, bytes atomic.Int64
}

// CacheOpStats are the counters of one operation's entries since start, and
// the bytes they hold now.
type CacheOpStats struct {
	Hits, Misses, Stale           int64
	EvictedByWrite, EvictedBySize int64
	Bytes                         int64
}

// Stats returns the counters of each operation the cache keeps.
func (ca *Cache) Stats() map[string]CacheOpStats {
	out := make(map[string]CacheOpStats, len(ca.stats))
	for op, s := range ca.stats {
		out[op] = CacheOpStats{Hits: s.hits.Load(), Misses: s.misses.Load(), Stale: s.stale.Load(),
			EvictedByWrite: s.evictedWrite.Load(), EvictedBySize: s.evictedSize.Load(), Bytes: s.bytes.Load()}
	}
	return out
}

// Bytes is what the entries held in process weigh.
func (ca *Cache) Bytes() int64 {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	return ca.bytes
}

// keyHash names a bearer key in the cache: its SHA-256, the same on every
// replica, never the key.
func keyHash(key string) [32]byte {
	return sha256.Sum256([]byte("costgw cache key\x00" + key))
}

// entryKey names the answer of cl for the key of kh.
func entryKey(kh [32]byte, cl *call) [32]byte {
	h := sha256.New()
	h.Write(kh[:])
	for _, s := range []string{cl.op, cl.method, cl.path, cl.query.Encode()} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(cl.encoded)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Tags: what an entry depends on, and what a write changes.
const (
	tagBudget     = "b:"  // + budget id: its read, actuals and planning
	tagLists      = "l:"  // + organization id: its budget list pages
	tagListsOfAny = "l:?" // list pages of a key whose organization is unknown
	tagAllLists   = "l:*" // every budget list page
)

// tags are what the answer of cl depends on.
func (ca *Cache) tags(cl *call, kh [32]byte) []string {
	switch cl.op {
	case ops.GetBudget, ops.GetBudgetActuals, ops.GetBudgetPlanning:
		return []string{tagBudget + cl.id}
	case ops.ListBudgets:
		if org := ca.orgOf(kh); org != "" {
			return []string{tagLists + org, tagAllLists}
		}
		return []string{tagListsOfAny, tagAllLists}
	}
	return nil
}

// listTags are what a write changes among the budget lists of org ("":
// unknown, so every list).
func listTags(org string) []string {
	if org == "" {
		return []string{tagAllLists}
	}
	return []string{tagLists + org, tagListsOfAny}
}

// orgOf is the organization the key of kh was last seen in, or "".
func (ca *Cache) orgOf(kh [32]byte) string {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	org, _ := ca.orgs.Get(kh)
	return org
}

// learnOrg records the organization of the key ctx carries, from a record
// the upstream answered it with.
func (ca *Cache) learnOrg(ctx context.Context, org string) {
	if key, ok := APIKeyFrom(ctx); ca != nil && ok && org != "" {
		ca.learn(keyHash(key), org)
	}
}

// learn records org as the organization of the key of kh.
func (ca *Cache) learn(kh [32]byte, org string) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.orgs.Add(kh, org)
}

// written evicts, for every key, the entries a write of the key ctx
// carries changed: the budget id (when not "") and the budget lists of org
// (the key's known organization when ""). It is called for every write
// that may have applied. When the shared cache does not take the bump,
// this replica serves no entry with tags fetched before (others may, until
// their entries expire).
func (ca *Cache) written(ctx context.Context, id, org string) {
	if ca == nil {
		return
	}
	if org == "" {
		if key, ok := APIKeyFrom(ctx); ok {
			org = ca.orgOf(keyHash(key))
		}
	}
	tags := listTags(org)
	if id != "" {
		tags = append(tags, tagBudget+id)
	}
	if ca.shared != nil {
		if err := ca.shared.Bump(context.WithoutCancel(ctx), tags, ca.maxLife()); err != nil {
			ca.unbumped.Store(ca.now().UnixNano())
			ca.log.LogAttrs(ctx, slog.LevelError, "cache: a write's eviction did not reach the shared cache; "+
				"other replicas may serve what it changed until it does (tried again every second) or their entries expire",
				slog.Any("tags", tags), slog.String("error", err.Error()))
			ca.retryBump(tags)
		}
		return
	}
	now := ca.now()
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if len(ca.local)+len(tags) > maxLocalTags {
		ca.pruneLocal(now)
		if len(ca.local)+len(tags) > maxLocalTags {
			// Too many recent writes to remember each: forget them all,
			// and serve no tagged entry fetched before now.
			clear(ca.local)
			ca.unbumped.Store(now.UnixNano())
		}
	}
	for _, t := range tags {
		ca.clock++
		ca.local[t] = localVersion{v: ca.clock, at: now}
	}
}

// bumpRetry is how often failed bumps are sent again.
const bumpRetry = time.Second

// retryBump sends tags to the shared cache again in bumpRetry, and keeps
// doing so, with the tags of every other failed bump, until it takes them.
func (ca *Cache) retryBump(tags []string) {
	ca.retry.Lock()
	defer ca.retry.Unlock()
	if ca.retry.tags == nil {
		ca.retry.tags = map[string]struct{}{}
	}
	for _, t := range tags {
		ca.retry.tags[t] = struct{}{}
	}
	if ca.retry.scheduled || len(ca.retry.tags) == 0 {
		return
	}
	ca.retry.scheduled = true
	time.AfterFunc(bumpRetry, func() {
		// The pending tags are taken out whole: a write that fails while
		// this bump is on its way adds its own, which this one may not
		// cover.
		ca.retry.Lock()
		pending := ca.retry.tags
		ca.retry.tags = nil
		ca.retry.Unlock()
		tags := slices.Collect(maps.Keys(pending))
		err := ca.shared.Bump(context.Background(), tags, ca.maxLife())
		ca.retry.Lock()
		ca.retry.scheduled = false
		ca.retry.Unlock()
		if err != nil {
			ca.retryBump(tags)
			return
		}
		ca.log.Info("cache: failed evictions reached the shared cache", "tags", len(tags))
		ca.retryBump(nil) // what failed meanwhile
	})
}

// pruneLocal forgets the versions of tags bumped longer ago than any entry
// lives: every entry recorded before such a bump has expired, and one
// recorded after reads its version as changed, which costs a miss. Called
// with ca.mu held.
func (ca *Cache) pruneLocal(now time.Time) {
	for t, v := range ca.local {
		if now.Sub(v.at) > ca.maxLife() {
			delete(ca.local, t)
		}
	}
}

// maxLife is how long any entry may be served: the longest TTL and the
// stale window.
func (ca *Cache) maxLife() time.Duration {
	var longest time.Duration
	for _, d := range ca.ttl {
		longest = max(longest, d)
	}
	return longest + ca.stale
}

// versions returns the current versions of tags.
func (ca *Cache) versions(ctx context.Context, tags []string) (string, []uint64, error) {
	if len(tags) == 0 {
		return "", nil, nil
	}
	if ca.shared != nil {
		return ca.shared.Versions(ctx, tags)
	}
	vers := make([]uint64, len(tags))
	ca.mu.Lock()
	defer ca.mu.Unlock()
	for i, t := range tags {
		vers[i] = ca.local[t].v
	}
	return "", vers, nil
}

// admit says whether the key of kh may be served from the cache: the
// upstream accepted it within KeyRecheck. When it may not, probe is the
// channel of the one call at a time that rechecks it (endProbe closes it),
// and the others wait for that call once, then go on.
func (ca *Cache) admit(ctx context.Context, kh [32]byte) (fresh bool, probe chan struct{}) {
	for waited := false; ; waited = true {
		ca.mu.Lock()
		ks, ok := ca.keys.Get(kh)
		if !ok {
			ks = new(keyState)
			ca.keys.Add(kh, ks)
		}
		if !ks.accepted.IsZero() && ca.now().Sub(ks.accepted) < ca.recheck {
			ca.mu.Unlock()
			return true, nil
		}
		if ks.probe == nil && !waited {
			ks.probe = make(chan struct{})
			ca.mu.Unlock()
			return false, ks.probe
		}
		ch := ks.probe
		ca.mu.Unlock()
		if waited || ch == nil {
			return false, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false, nil
		}
	}
}

// answered records what the upstream made of a call with the key ctx
// carries, sent at sent: a success accepts the key, a 401 or 403 refuses
// it until a call sent later succeeds.
func (ca *Cache) answered(ctx context.Context, cl *call, sent time.Time, err error) {
	kh := cl.keyHash
	if !cl.hashed {
		key, ok := APIKeyFrom(ctx)
		if !ok {
			return
		}
		kh = keyHash(key)
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ks, ok := ca.keys.Get(kh)
	if !ok {
		ks = new(keyState)
		ca.keys.Add(kh, ks)
	}
	switch {
	case err == nil:
		if !sent.Before(ks.refused) && sent.After(ks.accepted) {
			ks.accepted = sent
		}
	case errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden):
		ks.accepted, ks.refused = time.Time{}, ca.now()
	}
}

// get returns the entry of ek held in process, or nil.
func (ca *Cache) get(ek [32]byte) *entry {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	e, _ := ca.entries.Get(ek)
	return e
}

// remove drops the entry of ek held in process, if it is e.
func (ca *Cache) remove(ek [32]byte, e *entry) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if cur, ok := ca.entries.Peek(ek); ok && cur == e {
		ca.entries.Remove(ek)
	}
}

// add holds e in process, evicting the least recently used entries past
// MaxBytes.
func (ca *Cache) add(ek [32]byte, e *entry) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.entries.Remove(ek) // Add would replace it without onEvict
	ca.entries.Add(ek, e)
	ca.bytes += e.size
	ca.stats[e.op].bytes.Add(e.size)
	for ca.bytes > ca.maxBytes {
		if _, old, ok := ca.entries.RemoveOldest(); ok {
			ca.stats[old.op].evictedSize.Add(1)
		} else {
			break
		}
	}
}

// onEvict accounts for an entry leaving, whatever the reason. Called with
// ca.mu held.
func (ca *Cache) onEvict(_ [32]byte, e *entry) {
	ca.bytes -= e.size
	ca.stats[e.op].bytes.Add(-e.size)
}

// valid reports whether no write changed what e depends on since it was
// fetched. err is set when that could not be checked.
func (ca *Cache) valid(ctx context.Context, e *entry) (bool, error) {
	if len(e.tags) == 0 {
		return true, nil
	}
	if e.fetched.UnixNano() <= ca.unbumped.Load() {
		return false, nil
	}
	epoch, vers, err := ca.versions(ctx, e.tags)
	if err != nil {
		return false, err
	}
	return epoch == e.epoch && slices.Equal(vers, e.vers), nil
}

// weight is what an entry of op whose answer had n bytes counts against
// MaxBytes.
func weight(op string, n int) int64 {
	if op == ops.ExplorerHistory {
		return int64(n)*historyFactor + entryOverhead
	}
	return int64(n)*decodedFactor + entryOverhead
}

// ttlOf is how long an answer of op stays fresh (0: not cached).
func (ca *Cache) ttlOf(op string) time.Duration { return ca.ttl[op] }

// staleOK reports whether err, the failure of a call refreshing an entry,
// lets the entry answer in its place: the upstream's fault (a 5xx, no
// answer, a timeout, an open circuit breaker), not the caller's (a 4xx) nor
// the caller going away.
func staleOK(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, ErrUnavailable)
}
