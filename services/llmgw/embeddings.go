package llmgw

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
)

// MaxEmbedInputBytes bounds one input of POST /v1/embeddings. Inputs are
// also bounded in number (MaxEmbedTexts) and, together, by the request body
// limit (Config.MaxHTTPBodyBytes).
const MaxEmbedInputBytes = 64 << 10

// embeddingsRequest is OpenAI's embeddings request, as much of it as the
// gateway takes. input may be a string or an array of strings; arrays of
// token ids are refused, since the gateway cannot know the model's tokenizer.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

type embeddingObject struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type embeddingsResponse struct {
	Object string            `json:"object"`
	Data   []embeddingObject `json:"data"`
	Model  string            `json:"model"`
	Usage  struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// errEmbedInput is a request's input the endpoint cannot take; param names
// the field.
type embedParamError struct {
	param string
	msg   string
}

func (e *embedParamError) Error() string { return e.msg }

// texts reads the request's input.
func (er *embeddingsRequest) texts() ([]string, error) {
	bad := func(format string, args ...any) error {
		return &embedParamError{param: "input", msg: fmt.Sprintf(format, args...)}
	}
	if len(er.Input) == 0 || string(er.Input) == "null" {
		return nil, bad("input is required: a string or an array of strings")
	}
	var texts []string
	var one string
	if err := json.Unmarshal(er.Input, &one); err == nil {
		texts = []string{one}
	} else if err := json.Unmarshal(er.Input, &texts); err != nil {
		return nil, bad("input must be a string or an array of strings (arrays of token ids are not supported)")
	}
	if len(texts) == 0 || len(texts) > MaxEmbedTexts {
		return nil, bad("input: give 1..%d strings, got %d", MaxEmbedTexts, len(texts))
	}
	for i, t := range texts {
		if t == "" {
			return nil, bad("input[%d] is empty", i)
		}
		if len(t) > MaxEmbedInputBytes {
			return nil, bad("input[%d] is %d bytes; at most %d are taken", i, len(t), MaxEmbedInputBytes)
		}
	}
	switch er.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, &embedParamError{param: "encoding_format", msg: fmt.Sprintf("encoding_format %q is not supported (float or base64)", er.EncodingFormat)}
	}
	if er.Dimensions != nil && *er.Dimensions <= 0 {
		return nil, &embedParamError{param: "dimensions", msg: "dimensions must be positive"}
	}
	return texts, nil
}

// embeddings serves POST /v1/embeddings over the gateway's embedding models,
// as the Embed RPC does: one model, never a fallback chain.
func (s *Service) embeddings(w http.ResponseWriter, r *http.Request) {
	var er embeddingsRequest
	if !decodeJSON(w, r, s.cfg.MaxHTTPBodyBytes, &er, refuseOpenAI) {
		return
	}
	texts, err := er.texts()
	if err != nil {
		var pe *embedParamError
		errors.As(err, &pe)
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", pe.param, pe.msg)
		return
	}
	model := er.Model
	if model == "" {
		model = s.reg.defEmbed
	} else if s.unknownModel(model) {
		writeModelNotFound(w, model)
		return
	}
	dims := 0
	if er.Dimensions != nil {
		dims = *er.Dimensions
	}
	vecs, usage, _, err := s.embedCall(r.Context(), "Embeddings", requestSpec{str: model}, texts, dims, 0)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	resp := embeddingsResponse{Object: "list", Model: model, Data: make([]embeddingObject, len(vecs))}
	for i, v := range vecs {
		var e any = v
		if er.EncodingFormat == "base64" {
			e = base64Floats(v)
		}
		resp.Data[i] = embeddingObject{Object: "embedding", Index: i, Embedding: e}
	}
	resp.Usage.PromptTokens, resp.Usage.TotalTokens = usage.InputTokens, usage.InputTokens
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// base64Floats is OpenAI's base64 encoding of a vector: its float32s,
// little-endian, in base64.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
