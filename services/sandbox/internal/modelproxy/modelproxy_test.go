package modelproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHandler checks the token, the paths and what reaches the upstream:
// the signed user, never the sandbox's token.
func TestHandler(t *testing.T) {
	t.Parallel()
	const token = "t0k"
	var seen *http.Request
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r })
	sign := func(h http.Header, user string) { h.Set("X-Signed", user) }
	h := Handler(up, sign, "alice", token)
	for _, tc := range []struct {
		name, method, path, header, value string
		want                              int
	}{
		{"messages, x-api-key", "POST", "/v1/messages", "x-api-key", token, 200},
		{"count tokens, bearer", "POST", "/v1/messages/count_tokens", "Authorization", "Bearer " + token, 200},
		{"chat completions", "POST", "/v1/chat/completions", "x-api-key", token, 200},
		{"a model", "GET", "/v1/models/claude", "x-api-key", token, 200},
		{"embeddings", "POST", "/v1/embeddings", "x-api-key", token, 200},
		{"responses, bearer", "POST", "/v1/responses", "Authorization", "Bearer " + token, 200},
		{"below a model", "GET", "/v1/models/claude/x", "x-api-key", token, 404},
		{"another API", "GET", "/agents/", "x-api-key", token, 404},
		{"no token", "GET", "/v1/models", "", "", 401},
		{"wrong token", "GET", "/v1/models", "x-api-key", "other", 401},
		{"bearer without the scheme", "GET", "/v1/models", "Authorization", token, 401},
		{"no token, unknown path", "GET", "/etc/passwd", "", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.header != "" {
				req.Header.Set(tc.header, tc.value)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if (seen != nil) != (tc.want == 200) {
				t.Fatalf("upstream reached: %v", seen != nil)
			}
			if seen != nil && (seen.Header.Get("X-Signed") != "alice" || seen.Header.Get("x-api-key") != "" || seen.Header.Get("Authorization") != "") {
				t.Fatalf("upstream headers %v", seen.Header)
			}
		})
	}
}

// TestNoTokenNoEntry: a sandbox without a token refuses everything, an
// empty key included.
func TestNoTokenNoEntry(t *testing.T) {
	t.Parallel()
	h := Handler(http.NotFoundHandler(), func(http.Header, string) {}, "alice", "")
	req := httptest.NewRequest("GET", "/v1/models", nil)
	req.Header.Set("x-api-key", "")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d", rec.Code)
	}
}
