// Package script is the scripted model provider: it replays a file of turns
// (thinking, text and tool calls), streamed token by token, so that agents can be tested
// and demonstrated without a hosted model. It is stateless: the turn to play is
// the number of assistant messages already in the conversation, so any replica
// answers the same conversation the same way.
package script

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/llmgw/internal/upstream"
)

// DemoName is the name of the embedded demo script ("script:demo").
const DemoName = "demo"

// ShowcaseName is the name of the embedded showcase script
// ("script:showcase"): an agent that uses the csv-analyzer skill of the
// skills library the way a model would, and writes a slide deck.
const ShowcaseName = "showcase"

// Defaults of a script.
const (
	// DefaultEndText is the reply once every turn has been played.
	DefaultEndText = "(the script has no more turns)"
	// MaxScriptBytes bounds a script file.
	MaxScriptBytes = 1 << 20
	// argumentChunk is the size of the tool-argument fragments streamed.
	argumentChunk = 16
)

//go:embed demo.json
var demoJSON []byte

//go:embed showcase.json
var showcaseJSON []byte

// Script is a parsed script file.
type Script struct {
	// Delay is the pause before each token.
	Delay time.Duration
	// Turns are the model's replies, in order.
	Turns []Turn
	// EndText is the reply after the last turn.
	EndText string
	// AcceptsImages makes the scripted model take requests with images, as
	// a vision model does; without it they are refused like a text-only
	// model's.
	AcceptsImages bool
}

// ImagesPlaceholder in a turn's text is replaced by the number of images
// the request carried, so that a test sees what reached the model.
const ImagesPlaceholder = "{{images}}"

// Turn is one reply of the model.
type Turn struct {
	// Thinking is streamed as the model's reasoning before Text. APIs that
	// have no place for it (the gRPC API, Chat Completions) leave it out.
	Thinking     string     `json:"thinking"`
	Text         string     `json:"text"`
	ToolCalls    []ToolCall `json:"tool_calls"`
	FinishReason string     `json:"finish_reason"`
	Error        *TurnError `json:"error"`
	// Usage replaces the estimated token counts of the turn, so that a test
	// of accounting (usage, cost, budgets) knows them exactly.
	Usage *TurnUsage `json:"usage"`
}

// TurnUsage is the token counts a turn reports.
type TurnUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// ToolCall is one call of a turn.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// TurnError makes a turn fail the way a provider would, before any output:
// for testing retries and fallback chains.
type TurnError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

type fileFormat struct {
	Delay         string `json:"delay"`
	Turns         []Turn `json:"turns"`
	EndText       string `json:"end_text"`
	AcceptsImages bool   `json:"accepts_images"`
}

// Demo returns the embedded demo script.
func Demo() *Script { return mustParse(DemoName, demoJSON) }

// Showcase returns the embedded showcase script.
func Showcase() *Script { return mustParse(ShowcaseName, showcaseJSON) }

func mustParse(name string, data []byte) *Script {
	s, err := Parse(data)
	if err != nil {
		panic(fmt.Sprintf("embedded %s script: %v", name, err)) // a build defect, caught by tests
	}
	return s
}

// Parse parses a script: either {"delay","turns","end_text"} or a bare array
// of turns. Unknown fields are refused, so that a typo does not pass silently.
func Parse(data []byte) (*Script, error) {
	if len(data) > MaxScriptBytes {
		return nil, fmt.Errorf("script is larger than %d bytes", MaxScriptBytes)
	}
	var f fileFormat
	trimmed := bytes.TrimSpace(data)
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var err error
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = dec.Decode(&f.Turns)
	} else {
		err = dec.Decode(&f)
	}
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("script: data after the JSON value")
	}
	s := &Script{Turns: f.Turns, EndText: f.EndText, AcceptsImages: f.AcceptsImages}
	if s.EndText == "" {
		s.EndText = DefaultEndText
	}
	if f.Delay != "" {
		if s.Delay, err = time.ParseDuration(f.Delay); err != nil || s.Delay < 0 {
			return nil, fmt.Errorf("script: delay %q is not a duration such as \"20ms\"", f.Delay)
		}
	}
	for i, t := range s.Turns {
		if t.Text == "" && len(t.ToolCalls) == 0 && t.Error == nil {
			return nil, fmt.Errorf("script: turn %d has no text, tool_calls or error", i)
		}
		if u := t.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0) {
			return nil, fmt.Errorf("script: turn %d: usage counts must not be negative", i)
		}
		for j, tc := range t.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("script: turn %d tool call %d has no name", i, j)
			}
			if len(tc.Arguments) == 0 {
				continue
			}
			if _, msg := upstream.ParseArguments(string(tc.Arguments)); msg != "" {
				return nil, fmt.Errorf("script: turn %d tool call %d (%s): %s", i, j, tc.Name, msg)
			}
		}
		if t.Error != nil && t.Error.Status < 400 {
			return nil, fmt.Errorf("script: turn %d error status %d is not an HTTP error status", i, t.Error.Status)
		}
	}
	return s, nil
}

// Provider plays a script.
type Provider struct {
	script *Script
	delay  time.Duration
}

// New returns a provider for s; delay, when non-negative, overrides the
// script's own delay.
func New(s *Script, delay time.Duration) *Provider {
	p := &Provider{script: s, delay: s.Delay}
	if delay >= 0 {
		p.delay = delay
	}
	return p
}

// AcceptsImages implements llm.ImageAccepter: a script takes images when it
// says accepts_images.
func (p *Provider) AcceptsImages() bool { return p.script.AcceptsImages }

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req llm.Request, emit llm.Emit) (llm.Result, error) {
	n, images := 0, 0
	var in int64 = upstream.EstimateTokens(req.SystemPrompt)
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			n++
		}
		in += upstream.EstimateTokens(m.Content)
		images += len(m.Images)
	}
	turn := Turn{Text: p.script.EndText}
	if n < len(p.script.Turns) {
		turn = p.script.Turns[n]
	}
	turn.Text = strings.ReplaceAll(turn.Text, ImagesPlaceholder, strconv.Itoa(images))
	if e := turn.Error; e != nil {
		msg := e.Message
		if msg == "" {
			msg = fmt.Sprintf("scripted error for turn %d", n)
		}
		return llm.Result{}, &upstream.Error{Kind: upstream.KindForStatus(e.Status), Status: e.Status, Message: msg}
	}
	acc := upstream.NewAccumulator(0)
	var out int64
	pace := schedule{next: time.Now(), delay: p.delay}
	for _, tok := range tokens(turn.Thinking) {
		if err := pace.wait(ctx); err != nil {
			return llm.Result{}, ctxError(err)
		}
		if err := acc.Thinking(tok); err != nil {
			return llm.Result{}, err
		}
		if err := emit(llm.Event{Thinking: tok}); err != nil {
			return llm.Result{}, err
		}
	}
	out += upstream.EstimateTokens(turn.Thinking)
	for _, tok := range tokens(turn.Text) {
		if err := pace.wait(ctx); err != nil {
			return llm.Result{}, ctxError(err)
		}
		if err := acc.Text(tok); err != nil {
			return llm.Result{}, err
		}
		if err := emit(llm.Event{Delta: tok}); err != nil {
			return llm.Result{}, err
		}
	}
	out += upstream.EstimateTokens(turn.Text)
	for i, tc := range turn.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_script_%d_%d", n, i)
		}
		args, err := compact(tc.Arguments)
		if err != nil {
			return llm.Result{}, upstream.Errorf(upstream.KindBadSpec, "script turn %d tool call %d: %v", n, i, err)
		}
		out += upstream.EstimateTokens(args) + upstream.EstimateTokens(tc.Name)
		first := llm.ToolCallDelta{Index: i, ID: id, Name: tc.Name}
		if err := pace.wait(ctx); err != nil {
			return llm.Result{}, ctxError(err)
		}
		if err := acc.Tool(first); err != nil {
			return llm.Result{}, err
		}
		if err := emit(llm.Event{ToolCallDelta: &first}); err != nil {
			return llm.Result{}, err
		}
		for _, piece := range chunks(args, argumentChunk) {
			if err := pace.wait(ctx); err != nil {
				return llm.Result{}, ctxError(err)
			}
			d := llm.ToolCallDelta{Index: i, ArgumentsDelta: piece}
			if err := acc.Tool(d); err != nil {
				return llm.Result{}, err
			}
			if err := emit(llm.Event{ToolCallDelta: &d}); err != nil {
				return llm.Result{}, err
			}
		}
	}
	finish := turn.FinishReason
	if finish == "" {
		finish = llm.FinishStop
		if len(turn.ToolCalls) > 0 {
			finish = llm.FinishToolCalls
		}
	}
	if u := turn.Usage; u != nil {
		in, out = u.InputTokens, u.OutputTokens
	}
	return acc.Result(finish, llm.Usage{InputTokens: in, OutputTokens: out}), nil
}

// schedule paces a reply's pieces delay apart counted from the call's
// start, not from the previous piece. A timer fires late by a fraction of
// a millisecond or more, and sleeping delay after each piece added that
// lateness up (50 tokens 20 ms apart took about 1.04 s); a provider sends
// at its own pace, and a piece that waited for a slow receiver does not
// put off the ones after it, which come at once until the reply is back
// on its schedule.
type schedule struct {
	next  time.Time
	delay time.Duration
}

// wait sleeps until the next piece is due or ctx ends.
func (s *schedule) wait(ctx context.Context) error {
	return upstream.Sleep(ctx, s.until(time.Now()))
}

// until moves to the next piece and says how long it is due after now: at
// once when it is zero or less.
func (s *schedule) until(now time.Time) time.Duration {
	s.next = s.next.Add(s.delay)
	return s.next.Sub(now)
}

func ctxError(err error) error {
	if err == context.DeadlineExceeded {
		return &upstream.Error{Kind: upstream.KindTimeout, Message: "the call's timeout passed", Err: err}
	}
	return &upstream.Error{Kind: upstream.KindCanceled, Message: "the call was canceled", Err: err}
}

func compact(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "{}", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// tokens splits text into words, each with the whitespace that follows it,
// so that joining them gives the text back.
func tokens(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// chunks splits s into pieces of about n bytes, never inside a UTF-8 sequence.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// SplitName splits "name?delay=20ms" into the name and the delay override
// (-1 when none is given).
func SplitName(s string) (name string, delay time.Duration, err error) {
	name, query, ok := strings.Cut(s, "?")
	delay = -1
	if !ok {
		return name, delay, nil
	}
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "delay":
			if delay, err = time.ParseDuration(v); err != nil || delay < 0 {
				return "", 0, fmt.Errorf("script delay %q is not a duration such as \"20ms\"", v)
			}
		default:
			return "", 0, fmt.Errorf("unknown script option %q (known: delay)", k)
		}
	}
	return name, delay, nil
}
