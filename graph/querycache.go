package graph

import (
	"context"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/vektah/gqlparser/v2/ast"
)

// Bounds of the cache of parsed documents.
const (
	// docCacheBytes bounds the memory the cache charges to its documents.
	docCacheBytes = 32 << 20
	// astBytesPerQueryByte is what a document is charged per byte of its
	// query: its syntax tree measures 17 to 24 times the text of a dense
	// query, and the text itself is kept (positions point into it).
	astBytesPerQueryByte = 25
	// maxCachedQuery is the longest query kept for later requests; a longer
	// one is kept only until the next document arrives, for the request
	// that brought it.
	maxCachedQuery = 64 << 10
)

// docCache is the executor's cache of parsed and validated documents,
// bounded by bytes rather than entries: a thousand comment-padded
// documents must not take gigabytes. The least recently used go first.
type docCache struct {
	mu      sync.Mutex
	lru     *simplelru.LRU[string, *ast.QueryDocument]
	charged int
	max     int
	// transient is a document too large to keep, held until the next one.
	transient      string
	transientDoc   *ast.QueryDocument
	transientBytes int
}

func newDocCache(maxBytes int) *docCache {
	c := &docCache{max: maxBytes}
	// Entries are bounded by bytes below; the count bound is only a backstop.
	c.lru, _ = simplelru.NewLRU[string, *ast.QueryDocument](1<<20, func(q string, _ *ast.QueryDocument) {
		c.charged -= charge(q)
	})
	return c
}

// charge is what a document of query costs the cache.
func charge(query string) int { return len(query) * astBytesPerQueryByte }

// Get implements graphql.Cache.
func (c *docCache) Get(_ context.Context, query string) (*ast.QueryDocument, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.transientDoc != nil && c.transient == query {
		return c.transientDoc, true
	}
	return c.lru.Get(query)
}

// Add implements graphql.Cache.
func (c *docCache) Add(ctx context.Context, query string, doc *ast.QueryDocument) {
	c.Keep(ctx, query, doc)
}

// Keep implements limits.Documents: a document within maxCachedQuery is
// cached, evicting the least recently used until the cache is within its
// bytes; a longer one replaces the transient slot.
func (c *docCache) Keep(_ context.Context, query string, doc *ast.QueryDocument) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transient, c.transientDoc, c.transientBytes = "", nil, 0
	if len(query) > maxCachedQuery {
		c.transient, c.transientDoc, c.transientBytes = query, doc, charge(query)
		return
	}
	if c.lru.Contains(query) {
		return
	}
	c.lru.Add(query, doc)
	c.charged += charge(query)
	for c.charged > c.max && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// Bytes is what the cache charges for the documents it holds.
func (c *docCache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.charged + c.transientBytes
}
