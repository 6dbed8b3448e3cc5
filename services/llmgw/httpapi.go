package llmgw

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/llmgw/internal/openai"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// HTTPHandler serves the gateway's HTTP model APIs over its model specs:
// OpenAI's Chat Completions (POST /v1/chat/completions, GET /v1/models) and
// Responses (POST /v1/responses, stateless; responses.go), and Anthropic's
// Messages (POST /v1/messages, POST /v1/messages/count_tokens),
// so that any OpenAI or Anthropic SDK, and the coding agents built on them,
// can use the gateway's models, fallback chains and keys. The same paths
// without the /v1 prefix are served too, for a mount that strips it. The
// REST gateway, which authenticates users itself, mounts it in-process
// without options; a separate process takes a token and the identity key
// (WithHTTPToken, WithHTTPIdentity).
func (s *Service) HTTPHandler(opts ...HTTPOption) http.Handler {
	var o httpOptions
	for _, opt := range opts {
		opt(&o)
	}
	mux := http.NewServeMux()
	methods := map[string][]string{}
	refusers := map[string]route{}
	for pattern, rt := range s.httpRoutes() {
		method, path, _ := strings.Cut(pattern, " ")
		h := o.guard(rt)
		for _, p := range []string{path, strings.TrimPrefix(path, "/v1")} {
			mux.Handle(method+" "+p, h)
			methods[p] = append(methods[p], method)
			refusers[p] = rt
		}
	}
	// Every other path or method answers in the API's own error shape too:
	// the mux's plain-text 404 leaves an SDK without an error to raise.
	mux.Handle("/", o.guard(route{serve: func(w http.ResponseWriter, r *http.Request) {
		if ms, ok := methods[r.URL.Path]; ok {
			slices.Sort(ms)
			w.Header().Set("Allow", strings.Join(ms, ", "))
			refusers[r.URL.Path].refuse(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(ms, ", ")))
			return
		}
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}, refuse: refuseOpenAI}))
	return mux
}

// HTTPHandlerWithToken is HTTPHandler with a bearer token required.
func (s *Service) HTTPHandlerWithToken(token string) http.Handler {
	return s.HTTPHandler(WithHTTPToken(token))
}

// HTTPOption configures HTTPHandler.
type HTTPOption func(*httpOptions)

type httpOptions struct {
	token       string
	key         *identity.Key
	requireUser bool
}

// WithHTTPToken requires every request to carry token, as
// "Authorization: Bearer <token>" (OpenAI's clients) or "x-api-key: <token>"
// (Anthropic's). Empty requires none.
func WithHTTPToken(token string) HTTPOption { return func(o *httpOptions) { o.token = token } }

// WithHTTPIdentity verifies the user that a request's identity headers
// assert (identity.Key.FromHTTP: the REST gateway's proxy and a sandbox's
// model endpoint sign them with the suite's key) and serves the request as
// that user; a forged or stale assertion is refused with 401.
func WithHTTPIdentity(key *identity.Key) HTTPOption { return func(o *httpOptions) { o.key = key } }

// WithHTTPUserRequired refuses (401) a request that carries no user, neither
// in its context (an in-process mount behind the REST gateway) nor in signed
// headers: without it, the token alone is enough.
func WithHTTPUserRequired() HTTPOption { return func(o *httpOptions) { o.requireUser = true } }

// route is one endpoint with the error shape of its API, in which the
// checks in front of it answer too.
type route struct {
	serve  http.HandlerFunc
	refuse func(w http.ResponseWriter, status int, msg string)
}

func (o httpOptions) guard(rt route) http.Handler {
	want := []byte(o.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.token != "" && subtle.ConstantTimeCompare([]byte(requestToken(r)), want) != 1 {
			rt.refuse(w, http.StatusUnauthorized, "a valid bearer token (or x-api-key) is required")
			return
		}
		if o.key != nil {
			ctx, err := o.key.FromHTTP(r)
			if err != nil {
				rt.refuse(w, http.StatusUnauthorized, "identity: "+err.Error())
				return
			}
			r = r.WithContext(ctx)
		}
		if a := r.Header.Get(usage.AgentHeader); a != "" {
			r = r.WithContext(context.WithValue(r.Context(), httpAgentKey{}, a))
		}
		if _, ok := identity.User(r.Context()); o.requireUser && !ok {
			rt.refuse(w, http.StatusUnauthorized, "a signed user identity is required")
			return
		}
		rt.serve(w, r)
	})
}

// httpAgentKey keys the agent a request names in its context.
type httpAgentKey struct{}

// httpAgent is the agent a request of the HTTP APIs names: the sandbox's
// agent, which its model endpoint sets, or usage.External. The header is
// not signed, so it only says which of the signed user's agents to count
// the call on.
func httpAgent(ctx context.Context) string {
	if a, ok := ctx.Value(httpAgentKey{}).(string); ok {
		return a
	}
	return usage.External
}

// requestToken is the token of "Authorization: Bearer <token>", or else of
// "x-api-key: <token>".
func requestToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		return strings.TrimSpace(tok)
	}
	return r.Header.Get("X-Api-Key")
}

// httpRoutes are the endpoints of the HTTP APIs; each is also served
// without the /v1 prefix. The OpenAPI document describes them
// (internal/openapigen), and a test holds the two together.
func (s *Service) httpRoutes() map[string]route {
	return map[string]route{
		"POST /v1/chat/completions":      {s.chatCompletions, refuseOpenAI},
		"GET /v1/models":                 {s.listModels, refuseOpenAI},
		"GET /v1/models/{id}":            {s.getModel, refuseOpenAI},
		"POST /v1/embeddings":            {s.embeddings, refuseOpenAI},
		"POST /v1/messages":              {s.messages, refuseAnthropic},
		"POST /v1/messages/count_tokens": {s.countTokens, refuseAnthropic},
		"POST /v1/responses":             {s.responses, refuseOpenAI},
	}
}

// decodeJSON reads a request body of at most limit bytes into v, or answers
// the failure in the route's shape and returns false.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, refuse func(http.ResponseWriter, int, string)) bool {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", limit))
			return false
		}
		refuse(w, http.StatusBadRequest, "request body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// sseWriter writes Server-Sent Events. The status and headers go out with
// the first event, so a call that fails before its first event can still
// answer with an error status.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// write sends one event: "event: <name>" (none when name is empty), then
// "data: <v as JSON>".
func (sw *sseWriter) write(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !sw.started {
		h := sw.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		sw.w.WriteHeader(http.StatusOK)
		sw.started = true
	}
	if name != "" {
		if _, err := fmt.Fprintf(sw.w, "event: %s\n", name); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(sw.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// modelName is the model an answer names: the one requested, or the default.
func (s *Service) modelName(requested string) string {
	if requested == "" {
		return s.reg.def
	}
	return requested
}

// ErrHTTPTokenRequired refuses an HTTP API that would listen beyond loopback
// without a token: anyone who reached it would spend the gateway's keys.
var ErrHTTPTokenRequired = errors.New("the HTTP model APIs would listen beyond loopback without a token: set -http-token (WICK_HTTP_TOKEN) or listen on loopback only (127.0.0.1, [::1], localhost)")

// CheckHTTPListen reports whether the HTTP API may listen on addr with token:
// a token is required unless addr accepts connections from this machine only.
func CheckHTTPListen(addr, token string) error {
	if token != "" || loopbackOnly(addr) {
		return nil
	}
	return fmt.Errorf("-http-addr %q: %w", addr, ErrHTTPTokenRequired)
}

// loopbackOnly reports whether addr ("host:port") names a loopback address or
// localhost. An empty host listens on every interface, and any other name may
// resolve beyond loopback, so neither counts.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// The wire types of the Chat Completions API, as much of them as the gateway
// uses; unknown request fields are ignored, as OpenAI-compatible servers do.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type outMessage struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int        `json:"index"`
		Message      outMessage `json:"message"`
		FinishReason string     `json:"finish_reason"`
	} `json:"choices"`
	Usage chatUsage `json:"usage"`
}

type chunkDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   string         `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage,omitempty"`
}

// contentPart is one part of a message's content given as an array.
type contentPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
	// ImageURL is an object {url, detail} in Chat Completions (the
	// Responses API's input_image has a string here).
	ImageURL json.RawMessage `json:"image_url"`
}

// joinContent reads a message's content: a string, null, or an array of
// parts, each turned into text by part (which refuses the kinds its API
// does not take), joined.
func joinContent(raw json.RawMessage, part func(contentPart) (string, error)) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		t, err := part(p)
		if err != nil {
			return "", err
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

// contentText reads a Chat Completions message's content, whose parts must
// all be text.
func contentText(raw json.RawMessage) (string, error) {
	return joinContent(raw, func(p contentPart) (string, error) {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported (only text)", p.Type)
		}
		return p.Text, nil
	})
}

// readImagePart reads an image_url part of message msg; the image is
// loaded later (loadImages), when the request is otherwise known to be good.
func readImagePart(p contentPart, msg int) (imageRef, error) {
	var iu struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(p.ImageURL, &iu); err != nil || iu.URL == "" {
		return imageRef{}, errors.New("an image_url part needs image_url: {\"url\": …}")
	}
	switch iu.Detail {
	case "", "auto", "low", "high":
	default:
		return imageRef{}, fmt.Errorf("image_url.detail %q is not one of auto, low, high", iu.Detail)
	}
	return imageRef{msg: msg, url: iu.URL, detail: iu.Detail}, nil
}

func (cr *chatRequest) toCall() (call, error) {
	var c call
	if cr.Model != "" {
		c.models = []requestSpec{{str: cr.Model}}
	}
	if len(cr.Messages) == 0 {
		return c, errors.New("messages: at least one message is needed")
	}
	for i, m := range cr.Messages {
		text, err := contentText(m.Content)
		if m.Role == llm.RoleUser {
			text, err = joinContent(m.Content, func(p contentPart) (string, error) {
				switch p.Type {
				case "text":
					return p.Text, nil
				case "image_url":
					ref, err := readImagePart(p, len(c.req.Messages))
					c.images = append(c.images, ref)
					return "", err
				}
				return "", fmt.Errorf("content part type %q is not supported (text and image_url)", p.Type)
			})
		}
		if err != nil {
			return c, fmt.Errorf("messages[%d]: %w", i, err)
		}
		lm := llm.Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID, Name: m.Name}
		switch m.Role {
		case "developer":
			lm.Role = llm.RoleSystem
		case llm.RoleSystem, llm.RoleUser:
		case llm.RoleAssistant:
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return c, fmt.Errorf("messages[%d].tool_calls[%d]: id and function.name are required", i, j)
				}
				call := llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, RawArgs: tc.Function.Arguments}
				call.Args, call.ArgsErr = upstream.ParseArguments(tc.Function.Arguments)
				lm.ToolCalls = append(lm.ToolCalls, call)
			}
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return c, fmt.Errorf("messages[%d]: a tool message needs tool_call_id", i)
			}
		default:
			return c, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
		c.req.Messages = append(c.req.Messages, lm)
	}
	for i, t := range cr.Tools {
		if t.Type != "" && t.Type != "function" {
			return c, fmt.Errorf("tools[%d]: type %q is not supported (only function)", i, t.Type)
		}
		if t.Function.Name == "" {
			return c, fmt.Errorf("tools[%d]: function.name is required", i)
		}
		c.req.Tools = append(c.req.Tools, llm.ToolSchema{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	switch {
	case cr.MaxCompletionTokens != nil:
		c.req.MaxTokens = *cr.MaxCompletionTokens
	case cr.MaxTokens != nil:
		c.req.MaxTokens = *cr.MaxTokens
	}
	if c.req.MaxTokens < 0 {
		return c, errors.New("max_tokens must not be negative")
	}
	if t := cr.Temperature; t != nil {
		if *t < 0 || *t > 2 {
			return c, errors.New("temperature must be between 0 and 2")
		}
		c.req.Temperature = t
	}
	return c, nil
}

func (s *Service) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var cr chatRequest
	if !decodeJSON(w, r, s.cfg.MaxHTTPBodyBytes, &cr, refuseOpenAI) {
		return
	}
	c, err := cr.toCall()
	if err != nil {
		refuseOpenAI(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.unknownModel(cr.Model) {
		writeModelNotFound(w, cr.Model)
		return
	}
	if err := s.loadImages(r.Context(), c.req.Messages, c.images); err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "messages", err.Error())
		return
	}
	model := s.modelName(cr.Model)
	id := "chatcmpl-" + randomID()
	created := time.Now().Unix()
	if cr.Stream {
		s.streamCompletion(r.Context(), w, c, id, model, created, cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage)
		return
	}
	out, acct, err := s.run(r.Context(), "ChatCompletions", c, func(*router.Target, llm.Event) error { return nil })
	setAccountingHeaders(w.Header(), acct)
	if err != nil {
		writeStatusError(r.Context(), w, err)
		return
	}
	resp := completion{ID: id, Object: "chat.completion", Created: created, Model: model}
	resp.Choices = make([]struct {
		Index        int        `json:"index"`
		Message      outMessage `json:"message"`
		FinishReason string     `json:"finish_reason"`
	}, 1)
	msg := &resp.Choices[0].Message
	msg.Role = llm.RoleAssistant
	if out.Result.Content != "" || len(out.Result.ToolCalls) == 0 {
		msg.Content = &out.Result.Content
	}
	for _, tc := range out.Result.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall(nil, tc))
	}
	resp.Choices[0].FinishReason = wireFinish(out.Result.FinishReason)
	resp.Usage = wireUsage(out.Result.Usage)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (s *Service) streamCompletion(ctx context.Context, w http.ResponseWriter, c call, id, model string, created int64, includeUsage bool) {
	h := w.Header()
	h.Set("Trailer", httpTrailers)
	sw := newSSEWriter(w)
	base := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}
	write := func(ch any) error { return sw.write("", ch) }
	first := true
	out, acct, err := s.run(ctx, "ChatCompletions", c, func(_ *router.Target, ev llm.Event) error {
		if thinkingOnly(ev) {
			return nil // Chat Completions has no place for thinking
		}
		ch := base
		d := chunkDelta{Content: ev.Delta}
		if first {
			d.Role = llm.RoleAssistant
			first = false
		}
		if td := ev.ToolCallDelta; td != nil {
			i := td.Index
			tc := chatToolCall{Index: &i, ID: td.ID}
			if td.ID != "" {
				tc.Type = "function"
			}
			tc.Function.Name, tc.Function.Arguments = td.Name, td.ArgumentsDelta
			d.ToolCalls = []chatToolCall{tc}
		}
		ch.Choices = []chunkChoice{{Delta: d}}
		return write(ch)
	})
	setAccountingHeaders(h, acct)
	if err != nil {
		if !sw.started {
			writeStatusError(ctx, w, err)
			return
		}
		// Mid-stream, OpenAI sends an error object as a data line.
		st := status.Convert(rpcstatus.FromError(ctx, err))
		_ = write(map[string]any{"error": map[string]any{"message": st.Message(), "type": errorType(st.Code()), "param": nil, "code": nil}})
		return
	}
	fin := wireFinish(out.Result.FinishReason)
	ch := base
	ch.Choices = []chunkChoice{{FinishReason: &fin}}
	if first {
		ch.Choices[0].Delta.Role = llm.RoleAssistant
	}
	if write(ch) != nil {
		return
	}
	if includeUsage {
		u := wireUsage(out.Result.Usage)
		uc := base
		uc.Choices = []chunkChoice{}
		uc.Usage = &u
		if write(uc) != nil {
			return
		}
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil {
		_ = sw.rc.Flush()
	}
}

// modelObject is OpenAI's model object.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Service) listModels(w http.ResponseWriter, _ *http.Request) {
	resp := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: []modelObject{}}
	for _, m := range s.models() {
		if m.Embedding {
			continue // this endpoint serves chat completions only
		}
		resp.Data = append(resp.Data, modelObject{ID: m.Id, Object: "model", OwnedBy: m.Provider})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// getModel answers one configured model, chat or embedding (which the list
// leaves out, as it serves chat completions only).
func (s *Service) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, m := range s.models() {
		if m.Id == id {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(modelObject{ID: m.Id, Object: "model", OwnedBy: m.Provider})
			return
		}
	}
	writeModelNotFound(w, id)
}

func wireToolCall(index *int, tc llm.ToolCall) chatToolCall {
	out := chatToolCall{Index: index, ID: tc.ID, Type: "function"}
	out.Function.Name = tc.Name
	args, err := openai.RawArguments(tc)
	if err != nil {
		args = "{}"
	}
	out.Function.Arguments = args
	return out
}

// wireFinish maps the gateway's finish reasons to OpenAI's, which have no
// "refusal" (a refusal is a normal stop with refusal text).
func wireFinish(f string) string {
	if f == llm.FinishRefusal {
		return llm.FinishStop
	}
	return f
}

func wireUsage(u llm.Usage) chatUsage {
	return chatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

func setAccountingHeaders(h http.Header, a accounting) {
	h.Set(TrailerInputTokens, strconv.FormatInt(a.usage.InputTokens, 10))
	h.Set(TrailerOutputTokens, strconv.FormatInt(a.usage.OutputTokens, 10))
	h.Set(TrailerOverheadUS, strconv.FormatInt(a.overhead.Microseconds(), 10))
	if a.priced {
		h.Set(TrailerCostMicroUSD, strconv.FormatInt(a.usage.CostMicroUSD, 10))
	}
}

// refuseOpenAI answers a failure before the call in OpenAI's error shape.
func refuseOpenAI(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch status {
	case http.StatusUnauthorized:
		typ = "invalid_api_key"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	}
	writeOpenAIError(w, status, typ, "", "", msg)
}

func writeStatusError(ctx context.Context, w http.ResponseWriter, err error) {
	st := status.Convert(rpcstatus.FromError(ctx, err))
	code := ""
	switch st.Code() {
	case codes.NotFound:
		code = "model_not_found"
	case codes.ResourceExhausted:
		code = "rate_limit_exceeded"
	}
	writeOpenAIError(w, httpStatus(st.Code()), errorType(st.Code()), code, "", st.Message())
}

// writeModelNotFound answers OpenAI's 404 for a model the gateway does not
// know, in OpenAI's words.
func writeModelNotFound(w http.ResponseWriter, model string) {
	writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
		fmt.Sprintf("the model %q does not exist: name a model of GET /v1/models or write provider:model", model))
}

// writeOpenAIError writes OpenAI's error shape,
// {"error":{"message","type","param","code"}}; code and param are null when
// empty.
func writeOpenAIError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nullable(param), "code": nullable(code)}})
}

func httpStatus(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.FailedPrecondition:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499
	case codes.Internal:
		// A provider that broke its protocol: a bad gateway, not a 503 that
		// clients would retry.
		return http.StatusBadGateway
	}
	return http.StatusServiceUnavailable
}

func errorType(c codes.Code) string {
	switch c {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound:
		return "invalid_request_error"
	case codes.PermissionDenied, codes.Unauthenticated:
		return "permission_error"
	case codes.ResourceExhausted:
		return "rate_limit_error"
	}
	return "server_error"
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
