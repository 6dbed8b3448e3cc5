package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// HTTP tool limits.
const (
	// DefaultHTTPTimeout bounds a callback when its definition sets none.
	DefaultHTTPTimeout = 30 * time.Second
	// MaxHTTPTimeout is the longest timeout a definition may ask for.
	MaxHTTPTimeout = 5 * time.Minute
	// DefaultMaxResponseBytes caps a callback's response body.
	DefaultMaxResponseBytes = 1 << 20
	// errorBodyChars is how much of a failed response's body the error quotes.
	errorBodyChars = 500
)

// ErrInvalidToolDef is wrapped by every definition validation error.
var ErrInvalidToolDef = errcode.New(codes.InvalidArgument, "invalid tool definition")

// toolNameRE is the name rule of the major providers' function calling.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// HTTPToolDef is an external tool: the agent POSTs each call to URL.
type HTTPToolDef struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Parameters  map[string]any    `json:"parameters"` // JSON Schema, type "object"
	URL         string            `json:"url"`
	Timeout     time.Duration     `json:"timeout,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Async marks a tool whose endpoint answers {"status_url": …} at once and
	// the result later there: its calls run as background tasks.
	Async bool `json:"async,omitempty"`
}

// HTTPToolOption configures an HTTP tool.
type HTTPToolOption func(*httpTool)

// WithMaxResponseBytes caps the response body.
func WithMaxResponseBytes(n int64) HTTPToolOption { return func(t *httpTool) { t.maxBytes = n } }

// WithDefaultTimeout sets the timeout used when the definition has none.
func WithDefaultTimeout(d time.Duration) HTTPToolOption {
	return func(t *httpTool) { t.defaultTimeout = d }
}

type httpTool struct {
	def            HTTPToolDef
	client         *http.Client
	maxBytes       int64
	defaultTimeout time.Duration
}

// callbackRequest is the body POSTed to the tool's URL.
type callbackRequest struct {
	Name       string         `json:"name"`
	Args       map[string]any `json:"args"`
	ToolCallID string         `json:"tool_call_id"`
	ThreadID   string         `json:"thread_id"`
}

// NewHTTPTool validates def and returns the tool. A nil client gets
// SafeHTTPClient with no allowlist; a caller's client keeps its own policy.
func NewHTTPTool(def HTTPToolDef, client *http.Client, opts ...HTTPToolOption) (loop.Tool, error) {
	if err := ValidateHTTPToolDef(def); err != nil {
		return nil, err
	}
	if client == nil {
		client = SafeHTTPClient(nil)
	}
	t := &httpTool{def: def, client: client, maxBytes: DefaultMaxResponseBytes, defaultTimeout: DefaultHTTPTimeout}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// ValidateHTTPToolDef checks the name, the URL, the timeout, the headers and
// that the parameters are a JSON Schema object.
func ValidateHTTPToolDef(def HTTPToolDef) error {
	if !toolNameRE.MatchString(def.Name) {
		return fmt.Errorf("%w: name %q must be 1-64 letters, digits, '_' or '-'", ErrInvalidToolDef, def.Name)
	}
	if err := validateURL(def.URL); err != nil {
		return err
	}
	if def.Timeout < 0 || def.Timeout > MaxHTTPTimeout {
		return fmt.Errorf("%w: timeout must be between 0 and %s", ErrInvalidToolDef, MaxHTTPTimeout)
	}
	for k, v := range def.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("%w: header %q is not a valid HTTP header", ErrInvalidToolDef, k)
		}
	}
	return ValidateSchema(def.Parameters)
}

func validateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url: %w", ErrInvalidToolDef, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: url must start with http:// or https://", ErrInvalidToolDef)
	}
	if u.Host == "" {
		return fmt.Errorf("%w: url has no host", ErrInvalidToolDef)
	}
	if u.User != nil {
		return fmt.Errorf("%w: url must not carry credentials; send them in headers", ErrInvalidToolDef)
	}
	return nil
}

// ValidateSchema checks that params is a JSON Schema object: type "object",
// "properties" an object of objects, "required" a list of declared names.
func ValidateSchema(params map[string]any) error {
	if params == nil {
		return fmt.Errorf("%w: parameters are required (a JSON Schema with \"type\": \"object\")", ErrInvalidToolDef)
	}
	if typ, _ := params["type"].(string); typ != "object" {
		return fmt.Errorf("%w: parameters must be a JSON Schema with \"type\": \"object\"", ErrInvalidToolDef)
	}
	var props map[string]any
	if p, ok := params["properties"]; ok && p != nil {
		if props, ok = p.(map[string]any); !ok {
			return fmt.Errorf("%w: parameters.properties must be an object", ErrInvalidToolDef)
		}
		for name, s := range props {
			if _, ok := s.(map[string]any); !ok {
				return fmt.Errorf("%w: parameters.properties.%s must be a schema object", ErrInvalidToolDef, name)
			}
		}
	}
	if r, ok := params["required"]; ok && r != nil {
		var names []string
		switch x := r.(type) {
		case []string:
			names = x
		case []any:
			for _, v := range x {
				s, ok := v.(string)
				if !ok {
					return fmt.Errorf("%w: parameters.required must list property names", ErrInvalidToolDef)
				}
				names = append(names, s)
			}
		default:
			return fmt.Errorf("%w: parameters.required must be a list", ErrInvalidToolDef)
		}
		for _, n := range names {
			if _, ok := props[n]; !ok {
				return fmt.Errorf("%w: required parameter %q is not in parameters.properties", ErrInvalidToolDef, n)
			}
		}
	}
	return nil
}

// SafeHTTPClient is the client of callback tools: the model and the user
// choose where a callback goes, so it reaches only addresses guard allows
// (nil: public addresses only), and it follows no redirects (a redirect could
// turn a vetted URL into another).
func SafeHTTPClient(guard *netguard.Guard) *http.Client {
	if guard == nil {
		guard = netguard.New()
	}
	return &http.Client{
		Transport:     guard.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (t *httpTool) Name() string               { return t.def.Name }
func (t *httpTool) Description() string        { return t.def.Description }
func (t *httpTool) Parameters() map[string]any { return t.def.Parameters }

// Execute POSTs the call and returns the response body. A JSON object reply
// with an "output" string is unwrapped, and its "error" string, if any,
// becomes the tool's error.
func (t *httpTool) Execute(ctx context.Context, args map[string]any) (string, error) {
	timeout := t.def.Timeout
	if timeout <= 0 {
		timeout = t.defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	info, _ := loop.CallInfoFromContext(ctx)
	if args == nil {
		args = map[string]any{}
	}
	body, err := json.Marshal(callbackRequest{Name: t.def.Name, Args: args, ToolCallID: info.ToolCallID, ThreadID: info.ThreadID})
	if err != nil {
		return "", fmt.Errorf("encode arguments: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.def.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	for k, v := range t.def.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/plain")

	resp, err := t.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("tool %s: the endpoint did not answer within %s", t.def.Name, timeout)
		}
		return "", fmt.Errorf("tool %s: request failed: %w", t.def.Name, redactURL(err))
	}
	defer resp.Body.Close()

	data, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBytes+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("tool %s: the endpoint did not answer within %s", t.def.Name, timeout)
		}
		return "", fmt.Errorf("tool %s: reading the response: %w", t.def.Name, err)
	}
	if int64(len(data)) > t.maxBytes {
		return "", fmt.Errorf("tool %s: the response is larger than %d bytes", t.def.Name, t.maxBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("tool %s: the endpoint answered HTTP %d: %s", t.def.Name, resp.StatusCode, clip(string(data), errorBodyChars))
	}
	return unwrapReply(resp.Header.Get("Content-Type"), data)
}

func unwrapReply(contentType string, data []byte) (string, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/json" {
		return string(data), nil
	}
	var reply struct {
		Output *string `json:"output"`
		Error  string  `json:"error"`
	}
	if err := json.Unmarshal(data, &reply); err != nil || (reply.Output == nil && reply.Error == "") {
		return string(data), nil
	}
	out := ""
	if reply.Output != nil {
		out = *reply.Output
	}
	if reply.Error != "" {
		return out, errors.New(reply.Error)
	}
	return out, nil
}

// redactURL drops the URL from a client error: its query may hold a secret.
func redactURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
