package answerbuf

import "testing"

func TestGetHasRoomForTheSizeAsked(t *testing.T) {
	for _, size := range []int{0, 1, 100, 5000} {
		b := Get(size)
		if b.Len() != 0 || b.Cap() < size {
			t.Errorf("Get(%d): length %d, room %d", size, b.Len(), b.Cap())
		}
		b.WriteString("answer")
		Put(b.Bytes())
	}
}

func TestPutLendsTheBufferAgain(t *testing.T) {
	b := Get(4096)
	b.WriteString(`{"budget":{}}`)
	given := b.Bytes()
	first := &given[:1][0]
	// sync.Pool may drop what it is given (a collection; at random under
	// the race detector), so the buffer is given back until it comes back.
	for range 100 {
		Put(given)
		again := Get(4096)
		if again.Len() != 0 {
			t.Fatalf("a lent buffer holds %d bytes", again.Len())
		}
		if again.Cap() > 0 && &again.Bytes()[:1][0] == first {
			return
		}
	}
	t.Error("a buffer given back is never lent again")
}

func TestPutKeepsNoLargeBuffer(t *testing.T) {
	big := make([]byte, MaxKept+1)
	Put(big)
	for range 100 {
		if b := Get(0); b.Cap() > MaxKept {
			t.Fatalf("a buffer of %d bytes was kept", b.Cap())
		}
	}
}
