package tracerelay

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

type recorder struct {
	mu    sync.Mutex
	got   []*tracepb.ResourceSpans
	fails bool
}

func (r *recorder) UploadTraces(_ context.Context, spans []*tracepb.ResourceSpans) error {
	if r.fails {
		return errors.New("collector 10.0.0.7:4317 unavailable")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, spans...)
	return nil
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func exportBody(t *testing.T, resource *resourcepb.Resource) []byte {
	t.Helper()
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   resource,
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "exec", TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRelayNamesEverySpanWickDaemon(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource *resourcepb.Resource
		wantKeys []string
	}{
		{"claims another service", &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "wick-agent"), str("host.name", "box")}}, []string{"host.name", "service.name"}},
		{"no resource", nil, []string{"service.name"}},
		{"no service name", &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("a", "b")}}, []string{"a", "service.name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			w := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/v1/traces", bytes.NewReader(exportBody(t, tc.resource)))
			req.Header.Set("Content-Type", "application/x-protobuf")
			Handler(rec).ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if len(rec.got) != 1 {
				t.Fatalf("%d resource spans forwarded, want 1", len(rec.got))
			}
			var keys []string
			names := 0
			for _, kv := range rec.got[0].GetResource().GetAttributes() {
				keys = append(keys, kv.GetKey())
				if kv.GetKey() == "service.name" {
					names++
					if v := kv.GetValue().GetStringValue(); v != ServiceName {
						t.Errorf("service.name %q, want %q", v, ServiceName)
					}
				}
			}
			if names != 1 || len(keys) != len(tc.wantKeys) {
				t.Errorf("resource keys %v, want %v with one service.name", keys, tc.wantKeys)
			}
		})
	}
}

func TestRelayRefusesBadRequests(t *testing.T) {
	good := exportBody(t, nil)
	for _, tc := range []struct {
		name        string
		method      string
		contentType string
		body        []byte
		up          *recorder
		want        int
	}{
		{"json is not relayed", "POST", "application/json", []byte(`{}`), &recorder{}, http.StatusUnsupportedMediaType},
		{"not protobuf", "POST", "application/x-protobuf", []byte{0xff, 0xff, 0xff}, &recorder{}, http.StatusBadRequest},
		{"too large", "POST", "application/x-protobuf", bytes.Repeat([]byte{0}, 65), &recorder{}, http.StatusRequestEntityTooLarge},
		{"collector down", "POST", "application/x-protobuf", good, &recorder{fails: true}, http.StatusServiceUnavailable},
		{"GET", "GET", "application/x-protobuf", nil, &recorder{}, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, "/v1/traces", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			Handler(tc.up, WithMaxBodyBytes(64)).ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Errorf("status %d, want %d (%s)", w.Code, tc.want, w.Body)
			}
			if bytes.Contains(w.Body.Bytes(), []byte("10.0.0.7")) {
				t.Errorf("answer %q names the collector", w.Body)
			}
			if len(tc.up.got) != 0 {
				t.Errorf("%d resource spans forwarded, want none", len(tc.up.got))
			}
		})
	}
}

func post(h http.Handler, body []byte) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	h.ServeHTTP(w, req)
	return w
}

func spansBody(t *testing.T, n int) []byte {
	t.Helper()
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		spans[i] = &tracepb.Span{Name: "exec", TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{byte(i + 1)}, 8)}
	}
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRelayBoundsTheSpanRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := Handler(rec, WithSpanRate(10, 20))
		// The burst passes, then the rate: 20 spans at once, the 21st is refused.
		if w := post(h, spansBody(t, 20)); w.Code != http.StatusOK {
			t.Fatalf("burst: status %d: %s", w.Code, w.Body)
		}
		w := post(h, spansBody(t, 1))
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("over the rate: status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
		}
		// A second later, ten spans more are taken, not eleven.
		time.Sleep(time.Second)
		if w := post(h, spansBody(t, 11)); w.Code != http.StatusTooManyRequests {
			t.Fatalf("11 spans after 1 s at 10/s: status %d", w.Code)
		}
		if w := post(h, spansBody(t, 10)); w.Code != http.StatusOK {
			t.Fatalf("10 spans after 1 s at 10/s: status %d: %s", w.Code, w.Body)
		}
		// More than the burst in one request can never pass.
		if w := post(h, spansBody(t, 21)); w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("21 spans, burst 20: status %d", w.Code)
		}
		if n := len(rec.got); n != 2 {
			t.Fatalf("%d requests forwarded, want 2", n)
		}
	})
}
