package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/gateway/internal/auth"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// AccessTokenParam is the query parameter that may carry the bearer token of
// a request a browser cannot add headers to: an EventSource stream or a
// WebSocket. It is accepted on GET only and removed from the URL before the
// request is logged or traced.
const AccessTokenParam = "access_token"

type queryTokenKey struct{}

func tokenFromQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" || !strings.Contains(r.URL.RawQuery, AccessTokenParam) {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		tok := q.Get(AccessTokenParam)
		q.Del(AccessTokenParam)
		r = r.Clone(r.Context())
		r.URL.RawQuery = q.Encode()
		r.RequestURI = r.URL.RequestURI()
		if tok != "" && r.Method == http.MethodGet {
			r = r.WithContext(context.WithValue(r.Context(), queryTokenKey{}, tok))
		}
		next.ServeHTTP(w, r)
	})
}

// apiKeyHeader is where Anthropic's clients send their key; a Wick token
// set as ANTHROPIC_API_KEY arrives there.
const apiKeyHeader = "X-Api-Key"

func bearerToken(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		return parseBearer(h)
	}
	if k := strings.TrimSpace(r.Header.Get(apiKeyHeader)); k != "" {
		return k, true
	}
	if tok, ok := r.Context().Value(queryTokenKey{}).(string); ok {
		return tok, true
	}
	return "", false
}

// authenticate puts the request's user into its context, from which the
// agent connection signs it onto every call; it answers 401 for a missing or
// unknown token.
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := g.userOf(r)
		if err != nil {
			if errors.Is(err, auth.ErrVerifierUnavailable) {
				g.log.WarnContext(r.Context(), "token verifier unavailable", "error", err)
				httperr.Write(w, http.StatusServiceUnavailable, codes.Unavailable, "the token verifier is unavailable; try again")
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="wick"`)
			httperr.Write(w, http.StatusUnauthorized, codes.Unauthenticated, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(identity.WithOrgs(identity.WithUser(r.Context(), user), g.cfg.Orgs[user])))
	})
}

// parseBearer returns the token of an "Authorization: Bearer <token>"
// value, as an HTTP header or as gRPC metadata.
func parseBearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

var errNoToken = errors.New("missing bearer token: send Authorization: Bearer <token>")

func (g *Gateway) userOf(r *http.Request) (string, error) {
	if g.auth == nil {
		return LocalUser, nil
	}
	tok, ok := bearerToken(r)
	if !ok {
		return "", errNoToken
	}
	return g.auth.Authenticate(r.Context(), tok)
}

// cors answers preflights and marks responses for the configured origins.
// Credentials are not needed: the API takes bearer tokens, not cookies.
// It also refuses state-changing requests that a browser sends from a
// foreign page: a form or fetch posted cross-site needs no preflight, and
// without tokens (the single local user) nothing else would stop a web page
// from starting runs that execute commands.
func (g *Gateway) cors(next http.Handler) http.Handler {
	allowed := map[string]bool{}
	anyOrigin := false
	for _, o := range g.cfg.CORSOrigins {
		if o == "*" {
			anyOrigin = true
			continue
		}
		allowed[strings.TrimRight(o, "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		ok := anyOrigin || allowed[origin]
		if !ok {
			if !sameOrigin(r, origin) && !safeMethod(r.Method) {
				httperr.Write(w, http.StatusForbidden, codes.PermissionDenied,
					"cross-site request from origin "+origin+" refused; allow it with -cors-origins")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "Content-Length, Content-Disposition, "+TraceResponseHeader)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			// X-Api-Key: LangGraph's SDK (and useStream in a page) sends
			// its API key there, as Anthropic's clients do.
			h.Set("Access-Control-Allow-Headers", "Authorization, "+apiKeyHeader+", Content-Type, Accept, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameOrigin reports whether origin names the host the request was sent to.
func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// secureHeaders keeps browsers from sniffing a response into another type
// (a JSON error or a workspace file rendered as HTML on the API's origin).
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// TraceResponseHeader carries the trace of a request back to the client, in
// the form of W3C Trace Context Level 2 (version-traceid-spanid-flags), so
// an operator can find the request in the tracing backend from what the
// client saw.
const TraceResponseHeader = "Traceresponse"

// traceResponse sets TraceResponseHeader from the request's server span;
// it runs inside the otelhttp handler.
func traceResponse(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			w.Header().Set(TraceResponseHeader, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-"+sc.TraceFlags().String())
		}
		next.ServeHTTP(w, r)
	})
}

// localHostOnly guards the single-user mode without tokens against DNS
// rebinding: a page of any site can point its own name at 127.0.0.1, and
// its requests then look same-origin. Without authentication only requests
// addressed to an IP literal or to "localhost" are served.
func (g *Gateway) localHostOnly(next http.Handler) http.Handler {
	if !g.anonymous {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if net.ParseIP(host) == nil && !strings.EqualFold(host, "localhost") {
			httperr.Write(w, http.StatusForbidden, codes.PermissionDenied,
				"host "+r.Host+" refused: without tokens the gateway answers only on an IP address or localhost; configure tokens (WICK_TOKENS) to serve a host name")
			return
		}
		next.ServeHTTP(w, r)
	})
}
