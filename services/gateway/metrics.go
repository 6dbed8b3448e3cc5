package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	streams  prometheus.Gauge
	// sseForward is the gateway's own share of an event's latency.
	sseForward prometheus.Histogram
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wick_gateway_http_requests_total",
			Help: "HTTP requests served, by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wick_gateway_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request (a stream counts until it ends), by method and route.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"method", "route"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wick_gateway_sse_streams",
			Help: "Server-Sent Event streams open now.",
		}),
		// Events carry no creation time, so the time they spend before
		// the gateway is not known here: this is from an event's arrival
		// from the agent service to its frame flushed to the client.
		sseForward: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wick_gateway_sse_event_forward_seconds",
			Help:    "Time from a stream event's arrival from the agent service to its Server-Sent Event frame flushed to the client.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10), // 10 µs to 2.6 s
		}),
	}
	for _, c := range []prometheus.Collector{
		m.requests, m.duration, m.streams, m.sseForward,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			// A shared registry may hold the Go and process collectors already.
			if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// metricsToken requires "Authorization: Bearer token" of a request to h;
// an empty token requires nothing.
func metricsToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "metrics need the -metrics-token bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type routeKey struct{}

type routeHolder struct{ route string }

func setRoute(ctx context.Context, route string) {
	if h, ok := ctx.Value(routeKey{}).(*routeHolder); ok && h.route == "" {
		h.route = route
	}
}

// recordMuxRoute notes the route of the top-level mux once it has routed.
func recordMuxRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		if r.Pattern != "" {
			_, p, found := strings.Cut(r.Pattern, " ")
			if !found {
				p = r.Pattern
			}
			setRoute(r.Context(), p)
		}
	})
}

// instrument counts requests, names the request's span by its route (known
// only once routed; ids in the path would make every name unique) and logs
// each request at debug level in its context, so the record carries the
// trace id an operator finds in the tracing backend.
func (m *metrics) instrument(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h := &routeHolder{}
		r = r.WithContext(context.WithValue(r.Context(), routeKey{}, h))
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := h.route
		if route == "" {
			route = "other"
		}
		trace.SpanFromContext(r.Context()).SetName(r.Method + " " + route)
		m.requests.WithLabelValues(r.Method, route, strconv.Itoa(sw.code)).Inc()
		took := time.Since(start)
		m.duration.WithLabelValues(r.Method, route).Observe(took.Seconds())
		log.DebugContext(r.Context(), "http", "method", r.Method, "route", route, "code", sw.code, "duration", took)
	})
}

// statusWriter records the status code; it keeps Flush and Hijack (SSE and
// WebSocket need them) through Unwrap and the explicit methods.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
