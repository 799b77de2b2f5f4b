package graph

import (
	"context"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/vektah/gqlparser/v2/ast"
)

// Bounds of the caches of query texts and parsed documents.
const (
	// docCacheBytes bounds the memory the cache of parsed documents charges
	// to its documents.
	docCacheBytes = 32 << 20
	// astBytesPerQueryByte is what a document is charged per byte of its
	// query: its syntax tree measures 17 to 24 times the text of a dense
	// query, and the text itself is kept (positions point into it).
	astBytesPerQueryByte = 25
	// maxCachedQuery is the longest query kept for later requests; a longer
	// one is kept only until the next document arrives, for the request
	// that brought it.
	maxCachedQuery = 64 << 10
	// apqCacheBytes bounds the query texts the in-memory store of automatic
	// persisted queries keeps.
	apqCacheBytes = 16 << 20
)

// sizedLRU is a least-recently-used cache bounded by what its entries are
// charged, rather than by their number: a thousand comment-padded documents
// must not take gigabytes. The newest entry is kept even when it alone is
// over the bound, until the next one arrives.
type sizedLRU[V any] struct {
	mu      sync.Mutex
	lru     *simplelru.LRU[string, V]
	charged int
	max     int
	charge  func(key string, v V) int
}

func newSizedLRU[V any](max int, charge func(string, V) int) *sizedLRU[V] {
	c := &sizedLRU[V]{max: max, charge: charge}
	// Entries are bounded by their charge; the count bound is a backstop.
	c.lru, _ = simplelru.NewLRU[string, V](1<<20, func(k string, v V) { c.charged -= charge(k, v) })
	return c
}

func (c *sizedLRU[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(key)
}

func (c *sizedLRU[V]) add(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(key) {
		return
	}
	c.lru.Add(key, v)
	c.charged += c.charge(key, v)
	for c.charged > c.max && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

func (c *sizedLRU[V]) bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.charged
}

// docCache is the executor's cache of parsed and validated documents.
// A document too long to keep (over maxCachedQuery) is held for its own
// request only, in the request's docSlot, where the executor finds it
// right after the limits put it there; without a slot (a caller other than
// the transport) it is held until the next such document.
type docCache struct {
	lru *sizedLRU[*ast.QueryDocument]

	mu sync.Mutex
	// transient is a document too large to keep, held until the next one.
	transient    string
	transientDoc *ast.QueryDocument
}

// docSlot holds the document of one request that the cache does not keep.
type docSlot struct {
	query string
	doc   *ast.QueryDocument
}

type docSlotKey struct{}

// withDocSlot gives a request's context a docSlot.
func withDocSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, docSlotKey{}, &docSlot{})
}

func newDocCache(maxBytes int) *docCache {
	return &docCache{lru: newSizedLRU(maxBytes, func(q string, _ *ast.QueryDocument) int { return charge(q) })}
}

// charge is what a document of query costs the cache.
func charge(query string) int { return len(query) * astBytesPerQueryByte }

// Get implements graphql.Cache.
func (c *docCache) Get(ctx context.Context, query string) (*ast.QueryDocument, bool) {
	if len(query) > maxCachedQuery {
		if slot, _ := ctx.Value(docSlotKey{}).(*docSlot); slot != nil {
			// The same string: its bytes are compared only when the
			// pointers differ.
			return slot.doc, slot.doc != nil && slot.query == query
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.transientDoc, c.transientDoc != nil && c.transient == query
	}
	return c.lru.get(query)
}

// Add implements graphql.Cache.
func (c *docCache) Add(ctx context.Context, query string, doc *ast.QueryDocument) {
	c.Keep(ctx, query, doc)
}

// Keep implements limits.Documents: a document within maxCachedQuery is
// cached; a longer one goes to its request's slot (or the transient one).
func (c *docCache) Keep(ctx context.Context, query string, doc *ast.QueryDocument) {
	if len(query) <= maxCachedQuery {
		c.mu.Lock()
		c.transient, c.transientDoc = "", nil
		c.mu.Unlock()
		c.lru.add(query, doc)
		return
	}
	if slot, _ := ctx.Value(docSlotKey{}).(*docSlot); slot != nil {
		slot.query, slot.doc = query, doc
		return
	}
	c.mu.Lock()
	c.transient, c.transientDoc = query, doc
	c.mu.Unlock()
}

// Bytes is what the cache charges for the documents it holds.
func (c *docCache) Bytes() int {
	c.mu.Lock()
	n := 0
	if c.transientDoc != nil {
		n = charge(c.transient)
	}
	c.mu.Unlock()
	return n + c.lru.bytes()
}

// apqCache is the in-memory store of automatic persisted queries: hash →
// query text, bounded by the texts' bytes. Replicas that share a store use
// Options.PersistedQueries instead.
type apqCache struct{ lru *sizedLRU[string] }

func newAPQCache(maxBytes int) apqCache {
	return apqCache{newSizedLRU(maxBytes, func(hash, q string) int { return len(hash) + len(q) })}
}

// Get implements graphql.Cache.
func (c apqCache) Get(_ context.Context, hash string) (string, bool) { return c.lru.get(hash) }

// Add implements graphql.Cache.
func (c apqCache) Add(_ context.Context, hash, query string) { c.lru.add(hash, query) }
