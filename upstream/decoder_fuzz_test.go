package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzErrorFromResponse feeds arbitrary error answers to the decoder: it
// never panics, always yields a typed error of the answer's status with a
// code and a message, and reads no more than its cap.
func FuzzErrorFromResponse(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":"not_found","message":"Budget not found","request_id":"r-1"}}`), "")
	f.Add(502, []byte(`<html><body>Bad Gateway</body></html>`), "")
	f.Add(503, []byte(``), "7")
	f.Add(429, []byte(`{"error":null}`), "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(400, []byte(`{"error":{"code":"","message":"x"}}`), "-1")
	f.Add(500, []byte(`{"error":{"code":["x"]}}`), "99999999999999999999")
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter string) {
		if status < 100 || status > 999 {
			return
		}
		r := &countingReader{r: bytes.NewReader(body)}
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(r)}
		if retryAfter != "" {
			resp.Header.Set("Retry-After", retryAfter)
		}
		e, _ := errorFromResponse("getBudget", resp)
		if e == nil || e.Status != status || e.Code == "" || e.Message == "" {
			t.Fatalf("errorFromResponse = %+v", e)
		}
		if e.RetryAfter < 0 {
			t.Fatalf("negative Retry-After %v", e.RetryAfter)
		}
		if r.n > maxErrorBody {
			t.Fatalf("read %d bytes, cap %d", r.n, maxErrorBody)
		}
		var target *Error
		if !errors.As(error(e), &target) || !strings.HasPrefix(e.Error(), "upstream: getBudget: ") {
			t.Fatalf("Error() = %q", e.Error())
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
