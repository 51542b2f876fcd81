package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServesItsVersionAndABadVersionIsNotReady(t *testing.T) {
	for _, tc := range []struct {
		version string
		ready   int
	}{
		{"1.1.0", http.StatusOK},
		{"1.2.0-bad", http.StatusServiceUnavailable},
		{"1.2.0-badge", http.StatusOK},
	} {
		srv := httptest.NewServer(handler(tc.version))
		get := func(path string) (int, string) {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			buf := make([]byte, 512)
			n, _ := resp.Body.Read(buf)
			b.Write(buf[:n])
			return resp.StatusCode, b.String()
		}
		if code, body := get("/"); code != http.StatusOK || body != "e2e-web "+tc.version+"\n" {
			t.Errorf("%s: GET / = %d %q", tc.version, code, body)
		}
		if code, _ := get("/healthz"); code != http.StatusOK {
			t.Errorf("%s: GET /healthz = %d, want 200 whatever the version", tc.version, code)
		}
		if code, body := get("/readyz"); code != tc.ready {
			t.Errorf("%s: GET /readyz = %d %q, want %d", tc.version, code, body, tc.ready)
		}
		srv.Close()
	}
}
