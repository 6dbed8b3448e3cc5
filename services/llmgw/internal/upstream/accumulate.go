package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/wick-agent/wick/llm"
)

// DefaultMaxResponseBytes bounds the text plus tool arguments of one reply.
const DefaultMaxResponseBytes = 16 << 20

// Accumulator assembles a streamed reply: the text, and tool calls from their
// fragments (keyed by the provider's index, which may be sparse or arrive
// interleaved). It refuses to grow past its limit.
type Accumulator struct {
	limit   int
	size    int
	content strings.Builder
	// thinking is the model's reasoning, streamed before content.
	thinking strings.Builder
	calls    map[int]*partialCall
	order    []int
}

type partialCall struct {
	id, name string
	args     strings.Builder
}

// NewAccumulator returns an accumulator that holds at most limit bytes of
// text and arguments (DefaultMaxResponseBytes when limit <= 0).
func NewAccumulator(limit int) *Accumulator {
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	return &Accumulator{limit: limit}
}

func (a *Accumulator) grow(n int) error {
	a.size += n
	if a.size > a.limit {
		return Errorf(KindTooLarge, "reply is larger than the gateway's limit of %d bytes", a.limit)
	}
	return nil
}

// Text adds a piece of reply text.
func (a *Accumulator) Text(s string) error {
	if err := a.grow(len(s)); err != nil {
		return err
	}
	a.content.WriteString(s)
	return nil
}

// Thinking adds a piece of the model's thinking.
func (a *Accumulator) Thinking(s string) error {
	if err := a.grow(len(s)); err != nil {
		return err
	}
	a.thinking.WriteString(s)
	return nil
}

// Tool adds a tool-call fragment. The id and name are kept from the first
// fragment that carries them.
func (a *Accumulator) Tool(d llm.ToolCallDelta) error {
	if err := a.grow(len(d.ArgumentsDelta) + len(d.ID) + len(d.Name)); err != nil {
		return err
	}
	if a.calls == nil {
		a.calls = map[int]*partialCall{}
	}
	c, ok := a.calls[d.Index]
	if !ok {
		c = &partialCall{}
		a.calls[d.Index] = c
		a.order = append(a.order, d.Index)
	}
	if c.id == "" {
		c.id = d.ID
	}
	if c.name == "" {
		c.name = d.Name
	}
	c.args.WriteString(d.ArgumentsDelta)
	return nil
}

// Content returns the text so far.
func (a *Accumulator) Content() string { return a.content.String() }

// HasToolCalls reports whether any tool-call fragment arrived.
func (a *Accumulator) HasToolCalls() bool { return len(a.calls) > 0 }

// ToolCalls returns the complete calls in index order, arguments parsed.
func (a *Accumulator) ToolCalls() []llm.ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	idx := append([]int(nil), a.order...)
	sort.Ints(idx)
	out := make([]llm.ToolCall, 0, len(idx))
	for _, i := range idx {
		c := a.calls[i]
		tc := llm.ToolCall{ID: c.id, Name: c.name, RawArgs: c.args.String()}
		if tc.ID == "" {
			// Some OpenAI-compatible servers send no id; the caller needs one
			// to link the tool result back to the call.
			tc.ID = fmt.Sprintf("call_%d", i)
		}
		tc.Args, tc.ArgsErr = ParseArguments(tc.RawArgs)
		out = append(out, tc)
	}
	return out
}

// Result returns the assembled reply.
func (a *Accumulator) Result(finish string, usage llm.Usage) llm.Result {
	return llm.Result{Content: a.Content(), ToolCalls: a.ToolCalls(), FinishReason: finish, Usage: usage, Thinking: a.thinking.String()}
}

// ParseArguments parses a tool call's arguments text into an object. Empty
// text is an empty object (providers send it for tools without parameters).
// Anything that is not one JSON object gives a message that says what is
// wrong, for the caller to send back to the model.
func ParseArguments(raw string) (map[string]any, string) {
	trimmed := bytes.TrimSpace([]byte(raw))
	if len(trimmed) == 0 {
		return map[string]any{}, ""
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Sprintf("tool arguments are not valid JSON (%v): %s", err, snippet(raw))
	}
	if dec.More() {
		return nil, fmt.Sprintf("tool arguments have data after the JSON object: %s", snippet(raw))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("tool arguments are not a JSON object: %s", snippet(raw))
	}
	return m, ""
}

const snippetLen = 200

func snippet(s string) string {
	if len(s) <= snippetLen {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:snippetLen], len(s))
}
