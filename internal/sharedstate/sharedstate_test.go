//go:build unix

package sharedstate

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/testredis"
)

// openBoth opens the Redis of rds as the gateway does, with a rate limit
// and a persisted-query store on it.
func openBoth(t *testing.T, rds *testredis.Server) (*RedisLimiter, *APQ) {
	t.Helper()
	rdb, err := Open(context.Background(), rds.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	log := slog.New(slog.DiscardHandler)
	return NewRedisLimiter(rdb, 1, log), NewAPQ(rdb, log)
}

// failsOpen takes one request of each use and fails the test unless each
// fails open: the request allowed, the hash not found.
func failsOpen(t *testing.T, lim *RedisLimiter, apq *APQ) {
	t.Helper()
	ctx := context.Background()
	if ok, _ := lim.Allow(ctx, "caller-key"); !ok {
		t.Fatal("the rate limit refused a request while Redis fails; it fails open")
	}
	if q, ok := apq.Get(ctx, "hash"); ok {
		t.Fatalf("the persisted-query store found %q while Redis fails; it answers not found", q)
	}
	apq.Add(ctx, "hash", "{ __typename }")
}

// TestRedisDownFailsOpenAtOnce: a Redis that refuses connections costs an
// operation one refused dial. With go-redis's default dial retries (5, 100
// ms apart) an operation waited out its OpTimeout instead, until a pool's
// worth of dials had failed: 40 requests took 2.3 s of waiting on a Redis
// that said no at once.
func TestRedisDownFailsOpenAtOnce(t *testing.T) {
	t.Parallel()
	rds := testredis.Start(t)
	lim, apq := openBoth(t, rds)
	rds.Kill(t)
	const n = 40
	start := time.Now()
	for range n {
		failsOpen(t, lim, apq)
	}
	if d := time.Since(start); d > n*OpTimeout/4 {
		t.Errorf("%d requests took %v with Redis refusing connections, want far less than an OpTimeout (%v) each",
			n, d.Round(time.Millisecond), OpTimeout)
	}
}

// TestRedisHungFailsOpenWithinOpTimeout: a Redis that accepts connections and
// never answers (SIGSTOP) holds each operation for OpTimeout, not go-redis's
// default read timeout of 5 s: go-redis does not stop a read at the
// context's deadline unless told to, so the read timeout is what bounds it.
func TestRedisHungFailsOpenWithinOpTimeout(t *testing.T) {
	t.Parallel()
	rds := testredis.Start(t)
	lim, apq := openBoth(t, rds)
	rds.Pause(t)
	for range 3 {
		start := time.Now()
		failsOpen(t, lim, apq) // three operations
		if d := time.Since(start); d > 3*(OpTimeout+DialTimeout) {
			t.Errorf("three operations took %v on a hung Redis, want about %v each", d.Round(time.Millisecond), OpTimeout)
		}
	}
}

// TestRedisBackAfterRestart: once a Redis that was down is back, the uses
// are shared again, without a restart of the gateway: go-redis, having
// given up dialing after a pool's worth of refusals, tries again every
// second.
func TestRedisBackAfterRestart(t *testing.T) {
	t.Parallel()
	rds := testredis.Start(t)
	_, apq := openBoth(t, rds)
	rds.Kill(t)
	ctx := context.Background()
	for range 50 { // more than a pool's worth of refused dials
		apq.Add(ctx, "hash", "{ __typename }")
	}
	rds = rds.Restart(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		apq.Add(ctx, "hash", "{ __typename }")
		if q, ok := apq.Get(ctx, "hash"); ok && q == "{ __typename }" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the persisted-query store still fails 5s after Redis is back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := rds.Dump(t)[apqPrefix+"hash"]; got != "{ __typename }" {
		t.Errorf("Redis holds %q for the hash", got)
	}
}
