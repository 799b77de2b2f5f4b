// Package sharedstate is what the gateway's replicas share: the store of
// automatic persisted queries, the per-key rate limit, and the answer
// cache's entries and tag versions (Cache). With a Redis URL
// they live in Redis (github.com/redis/go-redis/v9, and the GCRA limiter of
// github.com/go-redis/redis_rate/v10), so a query registered on one replica
// is served by the others and a key's rate holds across all of them;
// without one they live in memory, one per replica.
//
// A Redis that does not answer at start is an error (Open): the operator
// asked for it. After that, Redis slow or down never holds a request past
// its deadline, nor for long: an operation waits at most OpTimeout to read,
// to write or for a pooled connection, and dials once, so a Redis that
// refuses connections fails at once and a hung one costs each use OpTimeout
// (a request makes at most one operation of each use). Each use then fails
// open, with a log line of its own (at most one every LogEvery per use;
// go-redis's own log is off):
//
//   - the persisted-query store answers "not found", even for a hash
//     registered before: the client sends the query with its hash (the
//     protocol's own fallback), which runs, and registers it in Redis once
//     Redis is back (go-redis tries a refusing Redis again every second);
//   - the rate limit allows the request: no key is limited while Redis is
//     down, since a Redis outage must not take the gateway down with it,
//     and the upstream's own throttling still holds;
//   - the answer cache fails closed instead: it serves no entry whose
//     versions it could not read, and calls the upstream (docs/caching.md).
//
// The bearer key never reaches Redis: the rate limit keys on its SHA-256.
// TestRedisTwoReplicas in internal/server checks all of this with two
// replicas on a real Redis that it pauses (SIGSTOP) and kills.
package sharedstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"golang.org/x/time/rate"
)

// Timeouts and bounds.
const (
	// OpTimeout bounds one Redis operation: a request waits no longer for
	// shared state before it goes on without it.
	OpTimeout = 100 * time.Millisecond
	// DialTimeout bounds connecting to Redis.
	DialTimeout = 250 * time.Millisecond
	// APQTTL is how long a persisted query stays in Redis after it was last
	// registered; a client whose hash has expired sends the query again.
	APQTTL = 24 * time.Hour
	// LogEvery spaces out the log lines of a failing use.
	LogEvery = 10 * time.Second
	// memoryKeys bounds the keys the in-memory rate limit remembers.
	memoryKeys = 100_000
)

// Prefixes of the gateway's Redis keys.
const (
	apqPrefix  = "costgw:apq:"
	ratePrefix = "costgw:rate:"
)

// Open connects to the Redis of url (redis://host:port/db, or rediss:// for
// TLS), with the package's timeouts, and checks that it answers. A Redis
// that does not answer at start is an error: the operator asked for it.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opts.DialTimeout = DialTimeout
	opts.ReadTimeout = OpTimeout
	opts.WriteTimeout = OpTimeout
	opts.PoolTimeout = OpTimeout
	// No retries: a failing Redis is failed open at once. That includes
	// dials: go-redis's default is 5 attempts 100 ms apart, so a Redis that
	// refuses connections (down, restarting) would cost each operation its
	// whole OpTimeout instead of nothing.
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	quietGoRedis.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
	rdb := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", opts.Addr, err)
	}
	return rdb, nil
}

// quietGoRedis turns go-redis's own log off, for the whole process (it has
// one logger). It prints unstructured lines on stderr, among the gateway's
// JSON ones, one for each failed dial, so one a request while Redis is
// down; each use logs its failures itself, error included, at most once
// every LogEvery.
var quietGoRedis sync.Once

// failures logs a failing use at most once every LogEvery.
type failures struct {
	use  string
	log  *slog.Logger
	last atomic.Int64 // unix nanos of the last line
}

func (f *failures) report(ctx context.Context, err error) {
	now := time.Now().UnixNano()
	last := f.last.Load()
	if now-last < int64(LogEvery) || !f.last.CompareAndSwap(last, now) {
		return
	}
	f.log.LogAttrs(ctx, slog.LevelWarn, "redis is failing; going on without it", slog.String("use", f.use),
		slog.String("error", err.Error()))
}

// APQ is the Redis store of automatic persisted queries: a gqlgen
// graphql.Cache of sha256 hash → query text.
type APQ struct {
	rdb  *redis.Client
	fail *failures
}

// NewAPQ returns the store in rdb.
func NewAPQ(rdb *redis.Client, log *slog.Logger) *APQ {
	return &APQ{rdb: rdb, fail: &failures{use: "persisted queries", log: log}}
}

// Get returns the query of hash; a Redis error reads as not found.
func (s *APQ) Get(ctx context.Context, hash string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	q, err := s.rdb.Get(ctx, apqPrefix+hash).Result()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			s.fail.report(ctx, err)
		}
		return "", false
	}
	return q, true
}

// Add stores the query of hash for APQTTL; a Redis error loses it.
func (s *APQ) Add(ctx context.Context, hash, query string) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	if err := s.rdb.Set(ctx, apqPrefix+hash, query, APQTTL).Err(); err != nil {
		s.fail.report(ctx, err)
	}
}

// A Limiter allows each caller's requests up to a rate.
type Limiter interface {
	// Allow takes one request of the caller whose bearer key is key (""
	// for every request without a key, which share one allowance), and
	// says whether it may go on and, if not, when to try again.
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration)
}

// callerID is what the limiters key a caller on: the SHA-256 of the bearer
// key, never the key itself.
func callerID(key string) string {
	b := sha256.Sum256([]byte(key))
	return hex.EncodeToString(b[:])
}

// RedisLimiter is the rate limit in Redis (GCRA): perSecond requests a
// second for each key, in bursts of up to perSecond, across every replica.
type RedisLimiter struct {
	lim   *redis_rate.Limiter
	limit redis_rate.Limit
	fail  *failures
}

// NewRedisLimiter returns the rate limit in rdb.
func NewRedisLimiter(rdb *redis.Client, perSecond int, log *slog.Logger) *RedisLimiter {
	return &RedisLimiter{lim: redis_rate.NewLimiter(rdb), limit: redis_rate.PerSecond(perSecond),
		fail: &failures{use: "rate limit", log: log}}
}

// Allow implements Limiter; a Redis error allows the request.
func (l *RedisLimiter) Allow(ctx context.Context, key string) (bool, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	res, err := l.lim.Allow(ctx, ratePrefix+callerID(key), l.limit)
	if err != nil {
		l.fail.report(ctx, err)
		return true, 0
	}
	return res.Allowed > 0, res.RetryAfter
}

// MemoryLimiter is the rate limit of one replica: a token bucket per key
// (golang.org/x/time/rate), the least recently seen keys forgotten past
// 100 000.
type MemoryLimiter struct {
	perSecond int
	mu        sync.Mutex
	keys      *simplelru.LRU[string, *rate.Limiter]
}

// NewMemoryLimiter returns the in-memory rate limit.
func NewMemoryLimiter(perSecond int) *MemoryLimiter {
	keys, _ := simplelru.NewLRU[string, *rate.Limiter](memoryKeys, nil)
	return &MemoryLimiter{perSecond: perSecond, keys: keys}
}

// Allow implements Limiter.
func (l *MemoryLimiter) Allow(_ context.Context, key string) (bool, time.Duration) {
	id := callerID(key)
	l.mu.Lock()
	lim, ok := l.keys.Get(id)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.perSecond), l.perSecond)
		l.keys.Add(id, lim)
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d
	}
	return true, 0
}

// Prefixes of the cache's Redis keys.
const (
	cachePrefix = "costgw:cache:"
	tagPrefix   = "costgw:tag:"
	epochKey    = "costgw:epoch"
	clockKey    = "costgw:clock"
)

// Cache is the Redis store of the upstream answer cache
// (upstream.SharedCache): entries under their hash, and the versions of
// what writes changed, which every replica reads before it serves an entry
// that depends on them. A Redis error is returned: the cache then serves
// nothing it could not check, and calls the upstream.
type Cache struct {
	rdb  *redis.Client
	fail *failures
}

// NewCache returns the cache store in rdb.
func NewCache(rdb *redis.Client, log *slog.Logger) *Cache {
	return &Cache{rdb: rdb, fail: &failures{use: "cache", log: log}}
}

func (c *Cache) failed(ctx context.Context, err error) error {
	c.fail.report(ctx, err)
	return err
}

// Get implements upstream.SharedCache.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	v, err := c.rdb.Get(ctx, cachePrefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, c.failed(ctx, err)
	}
	return v, nil
}

// Set implements upstream.SharedCache.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	if err := c.rdb.Set(ctx, cachePrefix+key, value, ttl).Err(); err != nil {
		return c.failed(ctx, err)
	}
	return nil
}

// Versions implements upstream.SharedCache. The epoch is a random value
// that lives as long as the Redis data does: a Redis that lost its data
// (restarted without persistence, flushed) gets a new one, and entries
// recorded before do not match it.
func (c *Cache) Versions(ctx context.Context, tags []string) (string, []uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	vals, err := c.rdb.MGet(ctx, tagKeys(epochKey, tags)...).Result()
	if err != nil {
		return "", nil, c.failed(ctx, err)
	}
	epoch, _ := vals[0].(string)
	if epoch == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		// Another replica may set it first: the epoch is the one set.
		if err := c.rdb.SetNX(ctx, epochKey, hex.EncodeToString(b), 0).Err(); err != nil {
			return "", nil, c.failed(ctx, err)
		}
		if epoch, err = c.rdb.Get(ctx, epochKey).Result(); err != nil {
			return "", nil, c.failed(ctx, err)
		}
	}
	vers := make([]uint64, len(tags))
	for i, v := range vals[1:] {
		if s, ok := v.(string); ok {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return "", nil, fmt.Errorf("cache tag %q holds %q, not a version", tags[i], s)
			}
			vers[i] = n
		}
	}
	return epoch, vers, nil
}

// Bump implements upstream.SharedCache, in one round trip: every tag gets
// the next value of one clock, kept for keep. A version is never given
// twice, so a tag that expired and is bumped again cannot come back to a
// version an entry recorded before.
func (c *Cache) Bump(ctx context.Context, tags []string, keep time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	if err := bump.Run(ctx, c.rdb, tagKeys(clockKey, tags), keep.Milliseconds()).Err(); err != nil {
		return c.failed(ctx, err)
	}
	return nil
}

// tagKeys is first and the Redis keys of tags.
func tagKeys(first string, tags []string) []string {
	keys := make([]string, 1+len(tags))
	keys[0] = first
	for i, t := range tags {
		keys[1+i] = tagPrefix + t
	}
	return keys
}

// bump gives the tags KEYS[2:] the next value of the clock KEYS[1], for
// ARGV[1] milliseconds.
var bump = redis.NewScript(`
local v = redis.call('INCR', KEYS[1])
for i = 2, #KEYS do
	redis.call('SET', KEYS[i], v, 'PX', ARGV[1])
end
return v
`)
