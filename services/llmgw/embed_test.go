package llmgw_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/services/llmgw"
)

// fakeEmbeddings serves OpenAI's POST /v1/embeddings wire format: each text
// becomes a vector of dims values (not normalised, so the gateway's
// normalisation shows). The first failFirst requests get a 503.
func fakeEmbeddings(t *testing.T, dims int, failFirst int32) (string, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, `{"error":{"message":"bad path or key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		if n <= failFirst {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		// Answered in reverse order: the index, not the position, says which text.
		for i := len(req.Input) - 1; i >= 0; i-- {
			v := make([]float64, dims)
			v[i%dims] = 3
			v[(i+1)%dims] = 4
			data = append(data, item{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model, "usage": map[string]int{"prompt_tokens": 7, "total_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &calls
}

func TestEmbedOfflineDefault(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, config(), nil)
	res, err := gw.client.Embed(context.Background(), &llmv1.EmbedRequest{Texts: []string{"redis replicas", "redis replica"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetModel() != llmgw.DefaultEmbedModel || res.GetDimensions() != 384 || len(res.GetEmbeddings()) != 2 {
		t.Fatalf("got model %q dims %d n %d", res.GetModel(), res.GetDimensions(), len(res.GetEmbeddings()))
	}
	var dot float64
	a, b := res.GetEmbeddings()[0].GetVector(), res.GetEmbeddings()[1].GetVector()
	for i := range a {
		dot += float64(a[i] * b[i])
	}
	if dot < 0.5 || dot > 0.9999 {
		t.Fatalf("similar texts score %.3f", dot)
	}
}

func TestEmbedOpenAICompatible(t *testing.T) {
	t.Parallel()
	url, calls := fakeEmbeddings(t, 8, 1)
	emb := llmgw.ModelConfig{ID: "emb", Provider: "openai-compatible", Model: "nomic-embed-text", BaseURL: url + "/v1", APIKeyEnv: "OPENAI_API_KEY", Dimensions: 8}
	wrong := llmgw.ModelConfig{ID: "wrong", Provider: "openai-compatible", Model: "nomic-embed-text", BaseURL: url + "/v1", APIKeyEnv: "OPENAI_API_KEY", Dimensions: 16}
	chain := llmgw.ModelConfig{ID: "chain", Fallback: []string{"emb", "wick-hash-384"}}
	gw := newGateway(t, config(emb, wrong, chain), keys)
	ctx := context.Background()

	res, err := gw.client.Embed(ctx, &llmv1.EmbedRequest{Model: &llmv1.ModelSpec{Spec: "emb"}, Texts: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("provider calls = %d, want 2 (one 503, one retry)", calls.Load())
	}
	if res.GetDimensions() != 8 || res.GetUsage().GetInputTokens() != 7 {
		t.Errorf("dims %d usage %v", res.GetDimensions(), res.GetUsage())
	}
	for i, e := range res.GetEmbeddings() {
		v := e.GetVector()
		if math.Abs(float64(v[i%8])-0.6) > 1e-6 || math.Abs(float64(v[(i+1)%8])-0.8) > 1e-6 {
			t.Errorf("embedding %d = %v, want 0.6/0.8 at %d/%d (normalised, in text order)", i, v, i, i+1)
		}
	}

	for _, tc := range []struct {
		name string
		req  *llmv1.EmbedRequest
		code codes.Code
	}{
		{"no texts", &llmv1.EmbedRequest{}, codes.InvalidArgument},
		{"empty text", &llmv1.EmbedRequest{Texts: []string{"a", ""}}, codes.InvalidArgument},
		{"dimension mismatch", &llmv1.EmbedRequest{Model: &llmv1.ModelSpec{Spec: "wrong"}, Texts: []string{"a"}}, codes.Unavailable},
		{"chain refused", &llmv1.EmbedRequest{Model: &llmv1.ModelSpec{Spec: "chain"}, Texts: []string{"a"}}, codes.InvalidArgument},
		{"anthropic has no embeddings", &llmv1.EmbedRequest{Model: &llmv1.ModelSpec{Spec: "claude-sonnet-4-20250514"}, Texts: []string{"a"}}, codes.InvalidArgument},
		{"bad hash size", &llmv1.EmbedRequest{Model: &llmv1.ModelSpec{Spec: "wick-hash-3"}, Texts: []string{"a"}}, codes.InvalidArgument},
		{"hash for chat", nil, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.req == nil {
				_, err = gw.client.Call(ctx, &llmv1.CallRequest{Models: models("wick-hash-384"), Messages: userHi})
			} else {
				_, err = gw.client.Embed(ctx, tc.req)
			}
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want %v", err, tc.code)
			}
		})
	}
}
