package llmgw

import (
	"context"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	llmv1 "github.com/wick-agent/wick/gen/wick/llm/v1"
	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/llm/hashembed"
	"github.com/wick-agent/wick/llm/llmpb"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/platform/rpcstatus"
	"github.com/wick-agent/wick/services/llmgw/internal/router"
	"github.com/wick-agent/wick/services/llmgw/internal/spec"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// embedProvider is a provider with an Embeddings API (the OpenAI-compatible
// one; Anthropic has none).
type embedProvider interface {
	Embed(ctx context.Context, model string, texts []string, dims int) ([][]float32, llm.Usage, error)
}

// Embed implements llmv1.LLMServiceServer. It runs one model with the
// gateway's retry policy and never a fallback chain: vectors of two models
// do not compare, so a collection must keep one model.
func (s *Service) Embed(ctx context.Context, req *llmv1.EmbedRequest) (*llmv1.EmbedResponse, error) {
	if _, err := identity.Require(ctx); err != nil {
		return nil, err
	}
	texts := req.GetTexts()
	if len(texts) == 0 || len(texts) > MaxEmbedTexts {
		return nil, status.Errorf(codes.InvalidArgument, "texts: give 1..%d texts, got %d", MaxEmbedTexts, len(texts))
	}
	for i, t := range texts {
		if t == "" {
			return nil, status.Errorf(codes.InvalidArgument, "texts[%d] is empty", i)
		}
	}
	if req.GetTimeout().AsDuration() < 0 {
		return nil, status.Error(codes.InvalidArgument, "timeout must not be negative")
	}
	var named []requestSpec
	if req.GetModel() != nil {
		specs, err := specsFromProto([]*llmv1.ModelSpec{req.GetModel()})
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		named = specs
	} else {
		named = []requestSpec{{str: s.reg.defEmbed}}
	}
	timeout := time.Duration(0)
	if d := req.GetTimeout().AsDuration(); d > 0 {
		timeout = d
	}
	vecs, usage, out, err := s.embedCall(ctx, "Embed", named[0], texts, 0, timeout)
	if err != nil {
		return nil, rpcstatus.FromError(ctx, err)
	}
	resp := &llmv1.EmbedResponse{
		Embeddings: make([]*llmv1.Embedding, len(vecs)),
		Model:      out.Target.Model,
		Provider:   out.Target.Provider,
		Dimensions: int32(len(vecs[0])),
		Usage:      llmpb.UsageToProto(usage),
	}
	for i, v := range vecs {
		resp.Embeddings[i] = &llmv1.Embedding{Vector: v}
	}
	return resp, nil
}

// embedCall runs one embedding call of model with the gateway's retry
// policy, accounting and metrics, as rpc: dims > 0 asks the model for vectors
// of that size, and timeout > 0 bounds the call (capped by MaxTimeout).
func (s *Service) embedCall(ctx context.Context, rpc string, model requestSpec, texts []string, dims int, timeout time.Duration) ([][]float32, llm.Usage, router.Outcome, error) {
	start := time.Now()
	var out router.Outcome
	var vecs [][]float32
	var usage llm.Usage
	chain, err := s.resolve([]requestSpec{model})
	if err == nil && len(chain) != 1 {
		err = upstream.Errorf(upstream.KindBadSpec, "embedding model %q is a fallback chain: vectors of two models do not compare, so Embed takes one model", model.str)
	}
	if err == nil {
		r := chain[0]
		t := s.target(r)
		out.Target = &t
		if timeout > 0 {
			timeout = min(timeout, MaxTimeout)
		} else {
			timeout = s.cfg.Timeout
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		vecs, usage, err = s.embed(cctx, r, texts, dims, &out)
		cancel()
	}
	usage.CostMicroUSD = s.price(out.Target).CostMicroUSD(usage)
	acct := accounting{usage: usage, overhead: max(time.Since(start)-out.Upstream-out.Backoff, 0), priced: s.price(out.Target) != nil}
	s.metrics.record(ctx, rpc, s.modelLabel(out.Target), out, acct, err)
	if httpRPCs[rpc] {
		s.recordUsage(ctx, out, acct)
	}
	_ = grpc.SetTrailer(ctx, trailer(acct))
	return vecs, usage, out, err
}

// embed returns the normalised vectors of texts from r, checking that they
// all have one size, and the configured one. dims > 0 is the size the caller
// asks for: sent to a provider whose API takes one (OpenAI), else checked
// against what the model makes.
func (s *Service) embed(ctx context.Context, r resolved, texts []string, dims int, out *router.Outcome) ([][]float32, llm.Usage, error) {
	if r.spec.Provider == spec.Hash {
		made, err := hashembed.ParseModel(r.spec.Model)
		if err != nil {
			return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadSpec, "%v", err)
		}
		if r.dims > 0 && r.dims != made {
			return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadSpec, "model %s: dimensions %d in the models file, but %s makes %d", r.name, r.dims, r.spec.Model, made)
		}
		if dims > 0 && dims != made {
			return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadSpec, "model %s makes %d-dimensional vectors and cannot make %d; name %s%d for that size", r.name, made, dims, hashembed.ModelPrefix, dims)
		}
		e, _ := hashembed.New(made)
		vecs := make([][]float32, len(texts))
		for i, t := range texts {
			vecs[i] = e.Embed(t)
		}
		return vecs, llm.Usage{}, nil
	}
	p, err := s.provider(r)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	ep, ok := p.(embedProvider)
	if !ok {
		return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadSpec, "provider %s has no embeddings API; name an OpenAI-compatible model (openai, ollama, vllm) or %s", r.spec.Provider, hashembed.DefaultModel)
	}
	ask := 0
	if r.spec.Provider == spec.OpenAI {
		ask = r.dims // only OpenAI's API takes a size; others are checked below
		if dims > 0 {
			ask = dims
		}
		if dims > 0 && r.dims > 0 && dims != r.dims {
			return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadSpec, "model %s makes %d-dimensional vectors (its models file entry), not %d", r.name, r.dims, dims)
		}
	} else if dims > 0 && dims != r.dims {
		return nil, llm.Usage{}, upstream.Errorf(upstream.KindBadSpec, "model %s (provider %s) does not take a dimensions parameter; leave it out, or name an OpenAI model", r.name, r.spec.Provider)
	}
	var vecs [][]float32
	var usage llm.Usage
	err = s.cfg.Retry.Do(ctx, out, func() error {
		st := time.Now()
		var err error
		vecs, usage, err = ep.Embed(ctx, r.spec.Model, texts, ask)
		out.Upstream += time.Since(st)
		return err
	})
	if err != nil {
		return nil, usage, err
	}
	got := len(vecs[0])
	if r.dims > 0 && got != r.dims {
		return nil, usage, upstream.Errorf(upstream.KindBadResponse, "model %s returned %d-dimensional vectors; the models file says dimensions: %d", r.name, got, r.dims)
	}
	if ask > 0 && got != ask {
		return nil, usage, upstream.Errorf(upstream.KindBadResponse, "model %s returned %d-dimensional vectors, not the %d asked for", r.name, got, ask)
	}
	for i, v := range vecs {
		if len(v) != got || got == 0 {
			return nil, usage, upstream.Errorf(upstream.KindBadResponse, "model %s returned vectors of mixed sizes (%d and %d)", r.name, got, len(v))
		}
		normalise(v)
		vecs[i] = v
	}
	return vecs, usage, nil
}

// normalise scales v to unit length in place, so that a dot product is the
// cosine similarity whatever the provider sent.
func normalise(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}
