// Package testhttp holds HTTP helpers for tests.
package testhttp

import (
	"io"
	"net/http"
	"testing"
)

// Get returns the status, headers and body of a GET of url with the headers
// given as name, value pairs.
func Get(t testing.TB, url string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	SetHeader(req.Header, header...)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// SetHeader sets in h the headers given as name, value pairs (an odd name
// at the end is left out).
func SetHeader(h http.Header, pairs ...string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1])
	}
}
