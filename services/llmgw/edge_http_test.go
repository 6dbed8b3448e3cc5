package llmgw_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/services/llmgw"
)

// openAIErrorBody is OpenAI's error shape, every field of it.
type openAIErrorBody struct {
	Error *struct {
		Message *string `json:"message"`
		Type    *string `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// TestOpenAIErrorShapeOnEveryPath: every answer that is not a success, on a
// served path or not, is OpenAI's JSON error with the status and code the
// SDKs map to their error classes.
func TestOpenAIErrorShapeOnEveryPath(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(service(t, config(), nil).HTTPHandler())
	t.Cleanup(srv.Close)
	tests := []struct {
		name, method, path, body string
		status                   int
		code, param, allow       string
	}{
		{name: "unknown model", method: "POST", path: "/v1/chat/completions", body: `{"model":"no-such-model","messages":[{"role":"user","content":"hi"}]}`, status: 404, code: "model_not_found", param: "model"},
		{name: "unknown model, streamed", method: "POST", path: "/v1/chat/completions", body: `{"model":"no-such-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`, status: 404, code: "model_not_found", param: "model"},
		{name: "unknown model to retrieve", method: "GET", path: "/v1/models/no-such-model", status: 404, code: "model_not_found", param: "model"},
		{name: "unknown embedding model", method: "POST", path: "/v1/embeddings", body: `{"model":"no-such-model","input":"hi"}`, status: 404, code: "model_not_found", param: "model"},
		{name: "unknown path", method: "GET", path: "/v1/no/such/path", status: 404, code: "unknown_url"},
		{name: "unknown path without the prefix", method: "POST", path: "/nosuch", status: 404, code: "unknown_url"},
		{name: "wrong method", method: "GET", path: "/v1/chat/completions", status: 405, allow: "POST"},
		{name: "wrong method on embeddings", method: "DELETE", path: "/v1/embeddings", status: 405, allow: "POST"},
		{name: "no messages", method: "POST", path: "/v1/chat/completions", body: `{"messages":[]}`, status: 400},
		{name: "token ids as input", method: "POST", path: "/v1/embeddings", body: `{"input":[[1,2,3]]}`, status: 400, param: "input"},
		{name: "empty input", method: "POST", path: "/v1/embeddings", body: `{"input":[]}`, status: 400, param: "input"},
		{name: "too many inputs", method: "POST", path: "/v1/embeddings", body: `{"input":[` + strings.Repeat(`"a",`, llmgw.MaxEmbedTexts) + `"a"]}`, status: 400, param: "input"},
		{name: "input too large", method: "POST", path: "/v1/embeddings", body: `{"input":"` + strings.Repeat("a", llmgw.MaxEmbedInputBytes+1) + `"}`, status: 400, param: "input"},
		{name: "unknown encoding", method: "POST", path: "/v1/embeddings", body: `{"input":"a","encoding_format":"int8"}`, status: 400, param: "encoding_format"},
		{name: "dimensions the model does not make", method: "POST", path: "/v1/embeddings", body: `{"input":"a","dimensions":12}`, status: 400},
		{name: "dimensions of a provider without them", method: "POST", path: "/v1/embeddings", body: `{"model":"ollama:nomic-embed-text","input":"a","dimensions":12}`, status: 400},
		{name: "a chat model has no embeddings", method: "POST", path: "/v1/embeddings", body: `{"model":"demo","input":"a"}`, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q %s, want %d JSON", resp.StatusCode, resp.Header.Get("Content-Type"), raw, tt.status)
			}
			var body openAIErrorBody
			if err := json.Unmarshal(raw, &body); err != nil || body.Error == nil || body.Error.Message == nil || body.Error.Type == nil {
				t.Fatalf("body %s is not OpenAI's error shape (%v)", raw, err)
			}
			var fields map[string]map[string]any
			_ = json.Unmarshal(raw, &fields)
			for _, k := range []string{"message", "type", "param", "code"} {
				if _, ok := fields["error"][k]; !ok {
					t.Errorf("error has no %q: %s", k, raw)
				}
			}
			if got := deref(body.Error.Code); got != tt.code {
				t.Errorf("code = %q, want %q", got, tt.code)
			}
			if got := deref(body.Error.Param); got != tt.param {
				t.Errorf("param = %q, want %q", got, tt.param)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestOpenAISDKModelsAndEmbeddings drives the new routes with the official
// openai-go SDK: its not-found error for unknown models and paths, a model
// retrieved, and embeddings in both encodings.
func TestOpenAISDKModelsAndEmbeddings(t *testing.T) {
	t.Parallel()
	client := sdkClient(t, service(t, config(), nil), "")
	ctx := context.Background()

	m, err := client.Models.Get(ctx, "demo")
	if err != nil || m.ID != "demo" || m.Object != "model" || m.OwnedBy != "script" {
		t.Fatalf("model = %+v, err %v", m, err)
	}
	_, err = client.Models.Get(ctx, "no-such-model")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Fatalf("err = %v, want 404 model_not_found", err)
	}
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "no-such-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Fatalf("err = %v, want 404 model_not_found", err)
	}
	err = client.Get(ctx, "no/such/path", nil, nil)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "unknown_url" {
		t.Fatalf("err = %v, want 404 unknown_url", err)
	}

	want, _ := hashembed.New(hashembed.DefaultDimensions)
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model:          hashembed.DefaultModel,
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello world", "goodbye"}},
			EncodingFormat: format,
		})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(resp.Data) != 2 || resp.Model != hashembed.DefaultModel {
			t.Fatalf("%s: %+v", format, resp)
		}
		for i, text := range []string{"hello world", "goodbye"} {
			got := resp.Data[i].Embedding
			if format == openai.EmbeddingNewParamsEncodingFormatBase64 {
				got = decodeBase64(t, resp.Data[i].JSON.Embedding.Raw())
			}
			exp := want.Embed(text)
			if len(got) != len(exp) || resp.Data[i].Index != int64(i) {
				t.Fatalf("%s: vector %d has %d numbers, want %d", format, i, len(got), len(exp))
			}
			for j := range exp {
				if math.Abs(got[j]-float64(exp[j])) > 1e-6 {
					t.Fatalf("%s: vector %d differs at %d: %v, want %v", format, i, j, got[j], exp[j])
				}
			}
		}
	}
	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:      "wick-hash-64",
		Input:      openai.EmbeddingNewParamsInputUnion{OfString: openai.String("one")},
		Dimensions: openai.Int(64),
	})
	if err != nil || len(resp.Data) != 1 || len(resp.Data[0].Embedding) != 64 {
		t.Fatalf("dimensions 64: %+v, err %v", resp, err)
	}
}

// decodeBase64 reads the JSON string of a base64 embedding.
func decodeBase64(t *testing.T, raw string) []float64 {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("embedding %s is not a string: %v", raw, err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("embedding %q: %v", s, err)
	}
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}
