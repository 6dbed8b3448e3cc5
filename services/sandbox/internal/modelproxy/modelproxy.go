// Package modelproxy is the model endpoint of a sandbox: the LLM gateway's
// HTTP API (Anthropic's Messages, OpenAI's chat completions, models,
// embeddings) offered to one sandbox's processes. A caller proves it is in
// that sandbox with the sandbox's token; the request then reaches the LLM
// gateway as the sandbox's user, whose identity the proxy signs. The
// provider's keys stay with the gateway, and the token is worth nothing to
// any other sandbox's endpoint.
package modelproxy

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
)

// Paths are the LLM gateway's API paths the endpoint forwards; any other
// path is answered 404 without reaching the gateway.
var Paths = []string{
	"/v1/messages", "/v1/messages/count_tokens", "/v1/chat/completions",
	"/v1/models", "/v1/embeddings", "/v1/responses",
}

// Signer puts a signed assertion of user into the headers of a request to
// the LLM gateway (identity.Key.SetHTTP).
type Signer func(h http.Header, user string)

// NewToken returns a fresh sandbox token: 32 random bytes in hex.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// Env is what a process in the sandbox needs to find the endpoint at
// 127.0.0.1:port: the base URLs and keys Anthropic's and OpenAI's SDKs read.
func Env(port int, token string) map[string]string {
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	return map[string]string{
		"ANTHROPIC_BASE_URL": base,
		"ANTHROPIC_API_KEY":  token,
		"OPENAI_BASE_URL":    base + "/v1",
		"OPENAI_API_KEY":     token,
	}
}

// Handler serves one sandbox's model endpoint: requests with token (as
// "Authorization: Bearer", which OpenAI's SDKs send, or "x-api-key", which
// Anthropic's send) to one of Paths go to upstream signed as user.
func Handler(upstream http.Handler, sign Signer, user, token string) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("x-api-key")
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); got == "" && ok {
			got = bearer
		}
		if token == "" || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			writeError(w, http.StatusUnauthorized, "authentication_error", "this sandbox's model endpoint needs its token (ANTHROPIC_API_KEY / OPENAI_API_KEY in the sandbox)")
			return
		}
		if !allowed(r.URL.Path) {
			writeError(w, http.StatusNotFound, "not_found_error", "not a model API path: "+r.URL.Path)
			return
		}
		out := r.Clone(r.Context())
		// The token is the sandbox's, not the gateway's: it goes no further.
		out.Header.Del("Authorization")
		out.Header.Del("x-api-key")
		sign(out.Header, user)
		upstream.ServeHTTP(w, out)
	})
}

func allowed(p string) bool {
	for _, a := range Paths {
		if p == a {
			return true
		}
	}
	return strings.HasPrefix(p, "/v1/models/") && !strings.Contains(p[len("/v1/models/"):], "/")
}

// Remote is the LLM gateway's HTTP API at base (its /v1 paths beneath),
// reached with its bearer token when it requires one. Streamed answers are
// passed on as they arrive.
func Remote(base *url.URL, token string) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base)
			pr.Out.Header.Del("Authorization")
			if token != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		FlushInterval: -1,
	}
}

// writeError answers in the error shape both SDK families can read: the
// Anthropic envelope, whose "error" object also has OpenAI's "message".
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}
