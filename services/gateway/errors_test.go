package gateway_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/logging"
	"github.com/wick-agent/wick/platform/testenv"
	"github.com/wick-agent/wick/services/gateway"
)

// logBuffer collects a gateway's JSON log records, with trace ids as in
// production (logging.TraceHandler).
type logBuffer struct{ testenv.LogBuffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(logging.TraceHandler{Handler: slog.NewJSONHandler(l, nil)})
}

// records returns the log records that mention s.
func (l *logBuffer) records(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		if !strings.Contains(line, s) {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

type traceErrBody struct {
	Code    int    `json:"code"`
	Status  string `json:"status"`
	Message string `json:"message"`
	TraceID string `json:"trace_id"`
}

// TestErrorsHideInternals: a message written for users reaches the client;
// any other is replaced by a plain one, and the client gets the trace id
// under which the gateway logged the full text.
func TestErrorsHideInternals(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	tp := sdktrace.NewTracerProvider()
	env := startGateway(t, gateway.Config{}, gateway.WithLogger(logs.logger()), gateway.WithTracerProvider(tp))
	const secret = "dial tcp 10.0.3.4:7002: connection refused"
	tests := []struct {
		code     codes.Code
		httpCode int
		wantMsg  string // "" keeps the service's message
	}{
		{codes.InvalidArgument, 400, ""},
		{codes.NotFound, 404, ""},
		{codes.PermissionDenied, 403, ""},
		{codes.FailedPrecondition, 400, ""},
		{codes.ResourceExhausted, 429, ""},
		{codes.AlreadyExists, 409, ""},
		{codes.Unauthenticated, 401, ""},
		{codes.Aborted, 409, ""},
		{codes.Internal, 500, "internal error"},
		{codes.Unknown, 500, "internal error"},
		{codes.DataLoss, 500, "internal error"},
		{codes.Unavailable, 503, "service unavailable; try again"},
		{codes.DeadlineExceeded, 504, "the request timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.code.String(), func(t *testing.T) {
			msg := fmt.Sprintf("%s: %s", tc.code, secret)
			r := do(t, env.url, aliceToken, "POST", "/agents/a1-alice/invoke",
				fmt.Sprintf(`{"messages":[{"role":"user","content":"status %d %s"}]}`, tc.code, msg))
			if r.code != tc.httpCode {
				t.Fatalf("HTTP %d %s, want %d", r.code, r.body, tc.httpCode)
			}
			var e traceErrBody
			if err := json.Unmarshal([]byte(r.body), &e); err != nil {
				t.Fatalf("body %q: %v", r.body, err)
			}
			if e.Code != int(tc.code) || e.TraceID == "" {
				t.Errorf("body = %+v, want code %d and a trace id", e, tc.code)
			}
			if tc.wantMsg == "" {
				if e.Message != msg {
					t.Errorf("message = %q, want the service's %q", e.Message, msg)
				}
				return
			}
			if e.Message != tc.wantMsg || strings.Contains(r.body, "10.0.3.4") {
				t.Errorf("body = %s, want message %q and no internal text", r.body, tc.wantMsg)
			}
			recs := logs.records(t, msg)
			if len(recs) != 1 || recs[0]["trace_id"] != e.TraceID {
				t.Errorf("log records with the full text = %v, want one with trace_id %s", recs, e.TraceID)
			}
		})
	}
}

// TestErrorsUnwrapNestedStatus: a service that wrapped a dependency's status
// into its own message ("ctx: rpc error: code = X desc = Y") does not hand
// the client Go's rendering of it; the body carries the code once, the words
// of every layer, and the trace id.
func TestErrorsUnwrapNestedStatus(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	env := startGateway(t, gateway.Config{}, gateway.WithLogger(logs.logger()), gateway.WithTracerProvider(sdktrace.NewTracerProvider()))
	tests := []struct {
		code     codes.Code
		in, want string
		httpCode int
	}{
		{codes.NotFound, "read /workspace/x: rpc error: code = NotFound desc = open /workspace/x: no such file or directory",
			"read /workspace/x: open /workspace/x: no such file or directory", 404},
		{codes.InvalidArgument, "write /workspace/a: rpc error: code = InvalidArgument desc = sandbox: rpc error: code = InvalidArgument desc = path: name too long",
			"write /workspace/a: sandbox: path: name too long", 400},
		{codes.FailedPrecondition, "ensure sandbox: rpc error: code = FailedPrecondition desc = sandbox is stopped",
			"ensure sandbox: sandbox is stopped", 400},
		{codes.Internal, "exec: rpc error: code = Internal desc = docker: dial unix /var/run/docker.sock",
			"internal error", 500},
	}
	for _, tc := range tests {
		t.Run(tc.code.String(), func(t *testing.T) {
			r := do(t, env.url, aliceToken, "POST", "/agents/a1-alice/invoke",
				fmt.Sprintf(`{"messages":[{"role":"user","content":"status %d %s"}]}`, tc.code, tc.in))
			if r.code != tc.httpCode {
				t.Fatalf("HTTP %d %s, want %d", r.code, r.body, tc.httpCode)
			}
			var e traceErrBody
			if err := json.Unmarshal([]byte(r.body), &e); err != nil {
				t.Fatalf("body %q: %v", r.body, err)
			}
			if e.Code != int(tc.code) || e.Status == "" || e.Message != tc.want || e.TraceID == "" {
				t.Errorf("body = %s, want code %d, message %q and a trace id", r.body, tc.code, tc.want)
			}
			if strings.Contains(r.body, "rpc error") || strings.Contains(r.body, "desc =") {
				t.Errorf("body %s carries a nested status", r.body)
			}
		})
	}
}

// TestSSEErrorFrameHidesInternals: a stream's error frame has the shape of an
// error body, with the same rule.
func TestSSEErrorFrameHidesInternals(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	env := startGateway(t, gateway.Config{}, gateway.WithLogger(logs.logger()), gateway.WithTracerProvider(sdktrace.NewTracerProvider()))
	resp := openStream(t, t.Context(), env.url, aliceToken, "POST", "/agents/a1-alice/stream", `{"messages":[{"role":"user","content":"fail"}]}`)
	events := readAll(t, resp.Body)
	if len(events) != 2 || events[1].Event != "error" {
		t.Fatalf("events = %+v", events)
	}
	var e traceErrBody
	if err := json.Unmarshal([]byte(events[1].Data), &e); err != nil {
		t.Fatalf("error frame %q: %v", events[1].Data, err)
	}
	if e.Status != "INTERNAL" || e.Message != "internal error" || e.TraceID == "" {
		t.Fatalf("error frame = %s, want INTERNAL, \"internal error\" and a trace id", events[1].Data)
	}
	recs := logs.records(t, "model exploded at 10.0.0.7:7003")
	if len(recs) != 1 || recs[0]["trace_id"] != e.TraceID {
		t.Errorf("log records with the full text = %v, want one with trace_id %s", recs, e.TraceID)
	}
}

// TestHealthHidesInternals: an unauthenticated /health names a service that
// cannot be reached as NOT_SERVING, without the dial error or its address,
// which go to the log.
func TestHealthHidesInternals(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1 of loopback.
	const addr = "127.0.0.1:1"
	conn, err := dial.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	logs := &logBuffer{}
	env := startGateway(t, gateway.Config{}, gateway.WithLogger(logs.logger()), gateway.WithHealthCheck("sandbox", conn))
	r := do(t, env.url, "", "GET", "/health", "")
	if r.code != http.StatusServiceUnavailable {
		t.Fatalf("HTTP %d %s, want 503", r.code, r.body)
	}
	var h gateway.Health
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gateway": "SERVING", "agent": "SERVING", "sandbox": "NOT_SERVING"}
	if h.Status != "degraded" || fmt.Sprint(h.Services) != fmt.Sprint(want) || h.Agents != nil {
		t.Errorf("health = %s, want degraded with services %v and no agent count", r.body, want)
	}
	if strings.Contains(r.body, addr) {
		t.Errorf("health %s names the address %s", r.body, addr)
	}
	if recs := logs.records(t, `"service":"sandbox"`); len(recs) == 0 || !strings.Contains(fmt.Sprint(recs[0]["error"]), addr) {
		t.Errorf("log records for sandbox = %v, want the dial error", recs)
	}
}
