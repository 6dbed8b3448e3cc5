// Package llmgw is the LLM gateway service: every model provider (OpenAI and
// OpenAI-compatible servers, Anthropic, the scripted provider) behind one
// streaming gRPC API and an OpenAI-compatible HTTP endpoint, with retries,
// fallback chains and usage accounting. It is a library with a thin main, so
// one process can host it beside the other services.
package llmgw

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/llm/llmpb"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/script"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// Trailer keys of the accounting the proto promises.
const (
	TrailerInputTokens  = "x-wick-input-tokens"
	TrailerOutputTokens = "x-wick-output-tokens"
	TrailerOverheadUS   = "x-wick-overhead-us"
	// TrailerCostMicroUSD is the call's cost in millionths of a US dollar,
	// sent only when the models file prices the model that answered.
	TrailerCostMicroUSD = "x-wick-cost-micro-usd"
)

// httpTrailers declares the accounting trailers of a streamed HTTP answer.
const httpTrailers = TrailerInputTokens + ", " + TrailerOutputTokens + ", " + TrailerCostMicroUSD + ", " + TrailerOverheadUS

// Service implements llmv1.LLMServiceServer and the OpenAI-compatible HTTP API.
type Service struct {
	llmv1.UnimplementedLLMServiceServer

	cfg  Config
	opts options
	reg  *registry
	// embedded are the scripts built into the gateway, by name.
	embedded map[string]*script.Script
	clients  sync.Map     // clientKey → llm.Provider
	guarded  *http.Client // for base URLs that requests chose
	images   *http.Client // for image URLs that requests chose
	metrics  *metrics
}

type options struct {
	httpClient    *http.Client
	logger        *slog.Logger
	meterProvider metric.MeterProvider
	lookupEnv     func(string) (string, bool)
	usage         usage.Recorder
}

// Option configures a Service.
type Option func(*options)

// WithHTTPClient sets the client used to reach providers.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMeterProvider sets where metrics go; the default is the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meterProvider = mp }
}

// WithUsageRecorder records the tokens and cost of every call made through
// the HTTP APIs (the external agents' calls), per signed user and the agent
// the sandbox's model endpoint names (usage.AgentHeader; "external" when
// none). Calls over gRPC are not recorded here: the agent service, which
// knows their agent, records its own.
func WithUsageRecorder(r usage.Recorder) Option { return func(o *options) { o.usage = r } }

// WithLookupEnv replaces os.LookupEnv for reading API keys (for tests and for
// embedding the gateway with keys from elsewhere).
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = f }
}

// NewHTTPClient returns the client the gateway uses for providers by default:
// no overall timeout (streams are long; each call has its own deadline), and
// enough idle connections per host to keep them warm under load.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: pooled(tr)}
}

// newGuardedClient is NewHTTPClient for destinations a request chose: it
// reaches public addresses and the allowlisted networks only.
func newGuardedClient(allow []netip.Prefix) *http.Client {
	return &http.Client{Transport: pooled(netguard.New(allow...).Transport())}
}

func pooled(tr *http.Transport) *http.Transport {
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 256
	tr.ResponseHeaderTimeout = 0
	return tr
}

// New returns the service for cfg.
func New(cfg Config, opts ...Option) (*Service, error) {
	o := options{logger: slog.Default(), lookupEnv: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	if o.httpClient == nil {
		o.httpClient = NewHTTPClient()
	}
	if o.meterProvider == nil {
		o.meterProvider = otel.GetMeterProvider()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = upstream.DefaultMaxResponseBytes
	}
	if cfg.MaxHTTPBodyBytes <= 0 {
		cfg.MaxHTTPBodyBytes = DefaultMaxHTTPBodyBytes
	}
	if cfg.Retry.MaxRetries < 0 {
		return nil, errors.New("max retries must not be negative")
	}
	reg, err := newRegistry(cfg)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(o.meterProvider)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, opts: o, reg: reg, embedded: map[string]*script.Script{script.DemoName: script.Demo(), script.ShowcaseName: script.Showcase()}, metrics: m, guarded: newGuardedClient(cfg.RequestBaseURLAllowNets), images: newGuardedClient(cfg.ImageURLAllowNets)}
	if _, err := s.resolve(nil); err != nil {
		return nil, errors.New("default model " + reg.def + ": " + err.Error())
	}
	return s, nil
}

// Register registers the gRPC service on r.
func (s *Service) Register(r grpc.ServiceRegistrar) { llmv1.RegisterLLMServiceServer(r, s) }

// call is one request in the gateway's own terms.
type call struct {
	models  []requestSpec
	req     llm.Request
	timeout time.Duration
	// images are the image_url parts read from the request, loaded into
	// req's messages by loadImages before the call.
	images []imageRef
}

// accounting is what a finished call reports.
type accounting struct {
	usage    llm.Usage
	overhead time.Duration
	// firstEvent is the time from the call's start to the provider's first
	// event; 0 when none came.
	firstEvent time.Duration
	// priced says whether the model that answered has a price, so that a
	// cost of 0 is reported as 0 rather than left out.
	priced bool
}

// httpRPCs are the calls of the HTTP APIs, whose usage the gateway records.
var httpRPCs = map[string]bool{"ChatCompletions": true, "Messages": true, "Responses": true, "Embeddings": true}

// recordUsage records a call of the HTTP APIs that reached a model. A
// failure to record is logged, not returned: the answer is already out.
func (s *Service) recordUsage(ctx context.Context, out router.Outcome, a accounting) {
	user, ok := identity.User(ctx)
	if s.opts.usage == nil || !ok || out.Target == nil || a.usage == (llm.Usage{}) {
		return
	}
	c := usage.Call{User: user, Agent: httpAgent(ctx), Model: usage.ModelName(out.Target.Provider, out.Target.Model), At: time.Now(), Counts: usage.Counts{
		Calls: 1, InputTokens: a.usage.InputTokens, OutputTokens: a.usage.OutputTokens, CostMicroUSD: a.usage.CostMicroUSD,
	}}
	if err := s.opts.usage.Record(context.WithoutCancel(ctx), c); err != nil {
		s.opts.logger.WarnContext(ctx, "record usage", "error", err.Error())
	}
}

// run resolves the chain and runs the call. emit sees every event with the
// model that produced it.
func (s *Service) run(ctx context.Context, rpc string, c call, emit router.Emit) (router.Outcome, accounting, error) {
	start := time.Now()
	var (
		out        router.Outcome
		firstEvent time.Duration
	)
	chain, err := s.resolve(c.models)
	if err == nil {
		timeout := s.cfg.Timeout
		if c.timeout > 0 {
			timeout = min(c.timeout, MaxTimeout)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		targets := make([]router.Target, len(chain))
		for i, r := range chain {
			targets[i] = s.target(r)
		}
		out, err = s.cfg.Retry.Run(ctx, targets, c.req, func(t *router.Target, ev llm.Event) error {
			if firstEvent == 0 {
				firstEvent = max(time.Since(start), time.Nanosecond)
			}
			return emit(t, ev)
		})
	}
	wall := time.Since(start)
	out.Result.Usage.CostMicroUSD = s.price(out.Target).CostMicroUSD(out.Result.Usage)
	acct := accounting{usage: out.Result.Usage, overhead: max(wall-out.Upstream-out.Backoff, 0), firstEvent: firstEvent, priced: s.price(out.Target) != nil}
	s.metrics.record(ctx, rpc, s.modelLabel(out.Target), out, acct, err)
	if httpRPCs[rpc] {
		s.recordUsage(ctx, out, acct)
	}
	if err != nil {
		s.opts.logger.DebugContext(ctx, "llm call failed", "rpc", rpc, "error", err.Error(), "retries", out.Retries, "fallbacks", out.Fallbacks)
	}
	return out, acct, err
}

// Call implements llmv1.LLMServiceServer. Like every RPC of the service, it
// needs the suite's signed identity: a call spends the gateway's provider keys.
func (s *Service) Call(ctx context.Context, req *llmv1.CallRequest) (*llmv1.CallResponse, error) {
	if _, err := identity.Require(ctx); err != nil {
		return nil, err
	}
	c, err := fromProto(req.GetModels(), req.GetMessages(), req.GetTools(), req.GetSystemPrompt(), req.GetMaxTokens(), req.Temperature, req.GetTimeout().AsDuration())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	out, acct, err := s.run(ctx, "Call", c, func(*router.Target, llm.Event) error { return nil })
	_ = grpc.SetTrailer(ctx, trailer(acct))
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	return &llmv1.CallResponse{
		Content:      out.Result.Content,
		ToolCalls:    toolCallsToProto(out.Result.ToolCalls),
		FinishReason: out.Result.FinishReason,
		Usage:        llmpb.UsageToProto(out.Result.Usage),
		Model:        out.Target.Model,
		Provider:     out.Target.Provider,
	}, nil
}

// Stream implements llmv1.LLMServiceServer. Cancelling the stream cancels its
// context, which the provider's HTTP request runs under.
func (s *Service) Stream(req *llmv1.StreamRequest, stream grpc.ServerStreamingServer[llmv1.StreamResponse]) error {
	if _, err := identity.Require(stream.Context()); err != nil {
		return err
	}
	c, err := fromProto(req.GetModels(), req.GetMessages(), req.GetTools(), req.GetSystemPrompt(), req.GetMaxTokens(), req.Temperature, req.GetTimeout().AsDuration())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	first := true
	out, acct, err := s.run(stream.Context(), "Stream", c, func(t *router.Target, ev llm.Event) error {
		if thinkingOnly(ev) {
			return nil // the gRPC API has no place for thinking
		}
		// A new message per delta: a sent message is not the sender's to
		// change any more (grpc.ServerStream.SendMsg), and in one process
		// (wickserver/suite) the agent service receives this very one.
		msg := &llmv1.StreamResponse{Delta: ev.Delta}
		if first {
			msg.Model, msg.Provider = t.Model, t.Provider
			first = false
		}
		if d := ev.ToolCallDelta; d != nil {
			msg.ToolCallDelta = &llmv1.ToolCallDelta{Index: int32(d.Index), Id: d.ID, Name: d.Name, ArgumentsDelta: d.ArgumentsDelta}
		}
		return stream.Send(msg)
	})
	stream.SetTrailer(trailer(acct))
	if err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	final := &llmv1.StreamResponse{
		ToolCalls:    toolCallsToProto(out.Result.ToolCalls),
		FinishReason: out.Result.FinishReason,
		Usage:        llmpb.UsageToProto(out.Result.Usage),
	}
	if first {
		final.Model, final.Provider = out.Target.Model, out.Target.Provider
	}
	return stream.Send(final)
}

// thinkingOnly reports whether ev carries only the model's thinking, which
// the APIs without a place for it skip.
func thinkingOnly(ev llm.Event) bool {
	return ev.Thinking != "" && ev.Delta == "" && ev.ToolCallDelta == nil
}

// ListModels implements llmv1.LLMServiceServer.
func (s *Service) ListModels(ctx context.Context, _ *llmv1.ListModelsRequest) (*llmv1.ListModelsResponse, error) {
	if _, err := identity.Require(ctx); err != nil {
		return nil, err
	}
	return &llmv1.ListModelsResponse{Models: s.models()}, nil
}

// models lists the configured models, and the demo script when no model of
// that name is configured. Keys are reported as present or not, never shown.
func (s *Service) models() []*llmv1.Model {
	var out []*llmv1.Model
	describe := func(id string, r resolved) *llmv1.Model {
		m := &llmv1.Model{Id: id, Provider: r.spec.Provider, Model: r.spec.Model, BaseUrl: r.spec.BaseURL, ContextWindow: int32(r.spec.ContextWindow), KeyConfigured: true}
		if r.spec.APIKeyEnv != "" {
			_, m.KeyConfigured = s.lookupKey(r.spec.APIKeyEnv)
		}
		if r.dims > 0 {
			m.Embedding, m.Dimensions = true, int32(r.dims)
		}
		if d, err := hashembed.ParseModel(r.spec.Model); err == nil && r.spec.Provider == spec.Hash {
			m.Embedding, m.Dimensions = true, int32(d)
		}
		if r.spec.Provider == spec.Script && len(r.spec.Model) > 0 && (r.spec.Model[0] == '{' || r.spec.Model[0] == '[') {
			m.Model = "inline"
		}
		return m
	}
	seenDemo := false
	for _, id := range s.reg.order {
		e := s.reg.byID[id]
		if id == script.DemoName {
			seenDemo = true
		}
		if e.model != nil {
			out = append(out, describe(id, *e.model))
			continue
		}
		m := &llmv1.Model{Id: id, Provider: "fallback", KeyConfigured: true}
		for i, r := range e.chain {
			d := describe(r.name, r)
			if i > 0 {
				m.Model += ","
			}
			m.Model += r.name
			m.KeyConfigured = m.KeyConfigured && d.KeyConfigured
			if i == 0 {
				m.ContextWindow = d.ContextWindow
			}
		}
		out = append(out, m)
	}
	if !seenDemo {
		out = append(out, &llmv1.Model{Id: script.DemoName, Provider: spec.Script, Model: script.DemoName, KeyConfigured: true})
	}
	if _, ok := s.reg.byID[hashembed.DefaultModel]; !ok {
		// The offline embedder is always there, like the demo script.
		out = append(out, &llmv1.Model{Id: hashembed.DefaultModel, Provider: spec.Hash, Model: hashembed.DefaultModel, KeyConfigured: true, Embedding: true, Dimensions: hashembed.DefaultDimensions})
	}
	return out
}

// DefaultModelName is the model that answers requests naming none.
func (s *Service) DefaultModelName() string { return s.reg.def }

func trailer(a accounting) metadata.MD {
	md := metadata.Pairs(
		TrailerInputTokens, strconv.FormatInt(a.usage.InputTokens, 10),
		TrailerOutputTokens, strconv.FormatInt(a.usage.OutputTokens, 10),
		TrailerOverheadUS, strconv.FormatInt(a.overhead.Microseconds(), 10),
	)
	if a.priced {
		md.Set(TrailerCostMicroUSD, strconv.FormatInt(a.usage.CostMicroUSD, 10))
	}
	return md
}

// toolCallsToProto converts a reply's tool calls. Arguments that cannot be
// represented travel as arguments_error, like arguments that did not parse,
// so the caller can tell the model.
func toolCallsToProto(calls []llm.ToolCall) []*llmv1.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]*llmv1.ToolCall, 0, len(calls))
	for _, c := range calls {
		tc, err := llmpb.ToolCallToProto(c)
		if err != nil {
			tc = &llmv1.ToolCall{Id: c.ID, Name: c.Name, ArgumentsError: "tool arguments cannot be represented: " + err.Error()}
		}
		out = append(out, tc)
	}
	return out
}
