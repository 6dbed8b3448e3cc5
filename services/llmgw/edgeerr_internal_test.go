package llmgw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// A provider failure keeps its kind's code and its words at both edges (gRPC
// and the OpenAI-compatible HTTP API); an error nothing classified is
// Internal there without its text.
func TestUnknownErrorTextStaysInTheGateway(t *testing.T) {
	t.Parallel()
	secret := errors.New("open /run/secrets/openai-key: permission denied")
	for _, tc := range []struct {
		name     string
		err      error
		code     codes.Code
		httpCode int
		msg      string
	}{
		{"unknown", fmt.Errorf("call: %w", secret), codes.Internal, http.StatusBadGateway, rpcstatus.InternalMessage},
		{"a provider failure nothing more is known about", upstream.AsError(errors.New("reset by peer")), codes.Unavailable, http.StatusServiceUnavailable, "unknown: reset by peer"},
		{"rate limited", &upstream.Error{Kind: upstream.KindRateLimited, Status: 429, Message: "slow down"}, codes.ResourceExhausted, http.StatusTooManyRequests, "rate_limited (HTTP 429): slow down"},
		{"protocol", upstream.Errorf(upstream.KindProtocol, "delta for block 3, never started"), codes.Internal, http.StatusBadGateway, "protocol_error: delta for block 3, never started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(rpcstatus.FromError(context.Background(), tc.err))
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("gRPC: %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
			rec := httptest.NewRecorder()
			writeStatusError(context.Background(), rec, tc.err)
			if rec.Code != tc.httpCode || !strings.Contains(rec.Body.String(), tc.msg) || strings.Contains(rec.Body.String(), "secrets") {
				t.Errorf("HTTP: %d %s, want %d with %q", rec.Code, rec.Body, tc.httpCode, tc.msg)
			}
		})
	}
}
