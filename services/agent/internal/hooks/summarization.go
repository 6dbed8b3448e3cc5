package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Summarization defaults.
const (
	// DefaultContextWindow is used when the agent configures none.
	DefaultContextWindow = 128_000
	// DefaultTriggerRatio: summarize when the estimate exceeds 85% of the window.
	DefaultTriggerRatio = 0.85
	// DefaultKeepRatio: the last 10% of the messages are kept verbatim…
	DefaultKeepRatio = 0.10
	// DefaultMinKeep: …and at least this many.
	DefaultMinKeep = 2
	// DefaultFileArgChars truncates write_file/edit_file contents in old messages.
	DefaultFileArgChars = 2_000
	// DefaultSummaryMaxWords bounds the summary.
	DefaultSummaryMaxWords = 2_000
	// SummaryPrefix starts the message that replaces the old messages.
	SummaryPrefix = "Summary of the earlier conversation (older messages were condensed to save context):\n\n"
	// transcriptBudget is the share of the window the summarizer's input may use.
	transcriptBudget = 0.75
)

// Caller is the model the summarization hook asks for a whole reply at
// once; the agent's gateway client implements it with the gateway's Call.
type Caller interface {
	Call(ctx context.Context, req llm.Request) (*llm.Result, error)
}

// SummarizationHook compresses old messages when the conversation nears the
// context window. It never separates an assistant tool call from its results.
type SummarizationHook struct {
	loop.BaseHook
	model         Caller
	window        int
	triggerRatio  float64
	keepRatio     float64
	minKeep       int
	fileArgChars  int
	maxWords      int
	logger        *slog.Logger
	summaryModel  string
	summaryTokens int

	mu    sync.Mutex
	cache *summaryCache
}

// summaryCache remembers the last summary and the prefix of messages it
// covers, so later turns of the run reuse it instead of calling the model.
type summaryCache struct {
	n       int
	fp      [32]byte
	summary string
}

// SummarizationOption configures a SummarizationHook.
type SummarizationOption func(*SummarizationHook)

// WithTriggerRatio sets the share of the window that triggers summarization.
func WithTriggerRatio(r float64) SummarizationOption {
	return func(h *SummarizationHook) { h.triggerRatio = r }
}

// WithKeepRatio sets the share of recent messages kept verbatim.
func WithKeepRatio(r float64) SummarizationOption {
	return func(h *SummarizationHook) { h.keepRatio = r }
}

// WithMinKeep sets the minimum number of recent messages kept.
func WithMinKeep(n int) SummarizationOption { return func(h *SummarizationHook) { h.minKeep = n } }

// WithFileArgChars sets the truncation of write_file/edit_file contents.
func WithFileArgChars(n int) SummarizationOption {
	return func(h *SummarizationHook) { h.fileArgChars = n }
}

// WithSummaryMaxWords bounds the summary.
func WithSummaryMaxWords(n int) SummarizationOption {
	return func(h *SummarizationHook) { h.maxWords = n }
}

// WithSummaryModel sets the model of the summary request (default: the client's).
func WithSummaryModel(m string) SummarizationOption {
	return func(h *SummarizationHook) { h.summaryModel = m }
}

// WithSummarizationLogger sets the logger.
func WithSummarizationLogger(l *slog.Logger) SummarizationOption {
	return func(h *SummarizationHook) { h.logger = l }
}

// NewSummarizationHook returns the summarization hook; contextWindow ≤ 0
// means DefaultContextWindow.
func NewSummarizationHook(model Caller, contextWindow int, opts ...SummarizationOption) *SummarizationHook {
	if contextWindow <= 0 {
		contextWindow = DefaultContextWindow
	}
	h := &SummarizationHook{
		model:        model,
		window:       contextWindow,
		triggerRatio: DefaultTriggerRatio,
		keepRatio:    DefaultKeepRatio,
		minKeep:      DefaultMinKeep,
		fileArgChars: DefaultFileArgChars,
		maxWords:     DefaultSummaryMaxWords,
		logger:       slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(h)
	}
	h.summaryTokens = h.maxWords * 2
	return h
}

// Name implements loop.Hook.
func (h *SummarizationHook) Name() string { return NameSummarization }

// Phases implements loop.Hook.
func (h *SummarizationHook) Phases() []string { return phasesOf(NameSummarization) }

// Threshold is the token estimate above which the hook summarizes.
func (h *SummarizationHook) Threshold() int { return int(float64(h.window) * h.triggerRatio) }

// WrapModelCall summarizes old messages when the estimate is over the
// threshold and passes the shorter conversation on. If summarizing fails the
// messages pass through unchanged.
func (h *SummarizationHook) WrapModelCall(ctx context.Context, msgs []llm.Message, next loop.ModelCallWrapFunc) (*llm.Result, error) {
	threshold := h.Threshold()
	if loop.Messages(msgs).EstimateTokens() <= threshold {
		return next(ctx, msgs)
	}
	lead, body := splitLead(msgs)

	prev, start := "", 0
	if c := h.cached(body); c != nil {
		prev, start = c.summary, c.n
		candidate := compose(lead, prev, body[start:])
		if loop.Messages(candidate).EstimateTokens() <= threshold {
			return next(ctx, candidate)
		}
	}

	keep := int(float64(len(body)) * h.keepRatio)
	if keep < h.minKeep {
		keep = h.minKeep
	}
	cut := SafeCut(body, len(body)-keep)
	if cut <= start {
		if prev != "" {
			return next(ctx, compose(lead, prev, body[start:]))
		}
		return next(ctx, msgs)
	}
	summary, err := h.summarize(ctx, prev, body[start:cut])
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		h.logger.WarnContext(ctx, "summarization failed; sending the conversation unchanged", "err", err)
		return next(ctx, msgs)
	}
	h.store(body[:cut], summary)
	return next(ctx, compose(lead, summary, body[cut:]))
}

// SafeCut moves a cut index back so that the kept part msgs[cut:] never
// starts with tool results whose assistant call would be summarized away; an
// assistant call and its results stay on the same side.
func SafeCut(msgs []llm.Message, cut int) int {
	if cut <= 0 {
		return 0
	}
	if cut > len(msgs) {
		cut = len(msgs)
	}
	for cut > 0 && cut < len(msgs) && msgs[cut].Role == llm.RoleTool {
		cut--
	}
	return cut
}

// splitLead separates the leading system messages, which are never summarized.
func splitLead(msgs []llm.Message) ([]llm.Message, []llm.Message) {
	i := 0
	for i < len(msgs) && msgs[i].Role == llm.RoleSystem {
		i++
	}
	return msgs[:i], msgs[i:]
}

func compose(lead []llm.Message, summary string, recent []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(lead)+1+len(recent))
	out = append(out, lead...)
	out = append(out, loop.Human(SummaryPrefix+summary))
	return append(out, recent...)
}

func fingerprint(msgs []llm.Message) [32]byte {
	b, _ := json.Marshal(msgs)
	return sha256.Sum256(b)
}

func (h *SummarizationHook) cached(body []llm.Message) *summaryCache {
	h.mu.Lock()
	c := h.cache
	h.mu.Unlock()
	if c == nil || c.n > len(body) || fingerprint(body[:c.n]) != c.fp {
		return nil
	}
	return c
}

func (h *SummarizationHook) store(prefix []llm.Message, summary string) {
	c := &summaryCache{n: len(prefix), fp: fingerprint(prefix), summary: summary}
	h.mu.Lock()
	h.cache = c
	h.mu.Unlock()
}

var errEmptySummary = errors.New("the model returned an empty summary")

func (h *SummarizationHook) summarize(ctx context.Context, prev string, old []llm.Message) (string, error) {
	transcript := loop.Messages(TruncateFileArgs(old, h.fileArgChars)).PrettyPrint()
	budget := int(float64(h.window)*transcriptBudget) * 4 // chars, by the len/4 heuristic
	if len(transcript) > budget {
		transcript = "[the beginning of this part was omitted]\n" + transcript[len(transcript)-budget:]
	}
	var user strings.Builder
	if prev != "" {
		user.WriteString("Summary of the conversation before this part:\n")
		user.WriteString(prev)
		user.WriteString("\n\n")
	}
	user.WriteString("Conversation to summarize:\n\n")
	user.WriteString(transcript)

	resp, err := h.model.Call(ctx, llm.Request{
		Model: h.summaryModel,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: SummaryInstructions(h.maxWords)},
			{Role: llm.RoleUser, Content: user.String()},
		},
		MaxTokens: h.summaryTokens,
	})
	if err != nil {
		return "", fmt.Errorf("summary call: %w", err)
	}
	if resp == nil || strings.TrimSpace(resp.Content) == "" {
		return "", errEmptySummary
	}
	return strings.TrimSpace(resp.Content), nil
}

// SummaryInstructions is the system prompt of the summary request.
func SummaryInstructions(maxWords int) string {
	return fmt.Sprintf("You condense the earlier part of a conversation between a user and an AI agent so the agent can continue the work without it. "+
		"Write a summary of fewer than %d words. Keep the user's goals and requests, decisions and their reasons, important facts, "+
		"file paths and what was done to them, tool results that still matter, and unfinished tasks. Reply with the summary only.", maxWords)
}

// TruncateFileArgs returns msgs with the string arguments of write_file and
// edit_file calls cut to max characters. msgs is not modified.
func TruncateFileArgs(msgs []llm.Message, max int) []llm.Message {
	out := make([]llm.Message, len(msgs))
	copy(out, msgs)
	for i, m := range out {
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		var calls []llm.ToolCall
		for j, c := range m.ToolCalls {
			if c.Name != ToolWriteFile && c.Name != ToolEditFile {
				continue
			}
			args := make(map[string]any, len(c.Args))
			changed := false
			for k, v := range c.Args {
				if s, ok := v.(string); ok && len(s) > max {
					if cut := prefix(s, max); len(cut) < len(s) {
						v = cut + fmt.Sprintf("... (%d more characters truncated)", len([]rune(s))-max)
						changed = true
					}
				}
				args[k] = v
			}
			if !changed {
				continue
			}
			if calls == nil {
				calls = append([]llm.ToolCall(nil), m.ToolCalls...)
			}
			calls[j].Args = args
			calls[j].RawArgs = ""
		}
		if calls != nil {
			out[i].ToolCalls = calls
		}
	}
	return out
}
