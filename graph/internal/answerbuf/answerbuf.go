// Package answerbuf lends the buffers that the executor writes answers
// into, so that a request does not allocate (and zero) a buffer the size of
// its answer only for the garbage collector to take back once it is sent:
// on the pages of the benchmark that buffer was the largest allocation of a
// request (docs/performance.md).
//
// The executor gets a buffer with Get and hands its bytes on as the
// response's data; the transport gives them back with Put once they are
// written and nothing holds them any more. Bytes that are never put back
// are collected as any others.
package answerbuf

import (
	"bytes"
	"sync"
)

// MaxKept is the largest buffer kept for another answer: a rare large
// answer's buffer is collected rather than held by the pool.
const MaxKept = 256 << 10

var pool sync.Pool // *[]byte, each with a length of 0

// Get returns an empty buffer with room for at least size bytes (none when
// size is 0), a lent one if one that large is free.
func Get(size int) *bytes.Buffer {
	if p, _ := pool.Get().(*[]byte); p != nil {
		if b := *p; cap(b) >= size {
			*p = nil
			holders.Put(p)
			return bytes.NewBuffer(b)
		}
		// Too small for this answer: let it go, and make one that fits.
	}
	if size == 0 {
		return new(bytes.Buffer)
	}
	return bytes.NewBuffer(make([]byte, 0, size))
}

// Put gives back b, the bytes of a buffer from Get, for another answer. The
// caller must not use b, nor anything that shares its memory, afterwards.
func Put(b []byte) {
	if cap(b) == 0 || cap(b) > MaxKept {
		return
	}
	p, _ := holders.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b[:0]
	pool.Put(p)
}

// holders keeps the pointers that carry buffers in pool, so that lending
// one allocates nothing.
var holders sync.Pool // *[]byte, each nil
