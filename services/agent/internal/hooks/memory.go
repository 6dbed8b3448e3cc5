package hooks

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/wickfs"
)

// Memory constants.
const (
	// MemorySeparator joins several AGENTS.md files.
	MemorySeparator = "\n\n---\n\n"
	// DefaultMaxMemoryChars caps the injected memory so a runaway AGENTS.md
	// cannot fill the context window.
	DefaultMaxMemoryChars = 100_000
	// MemoryGuidelines follow the memory block in the system message and tell
	// the model how to keep its memory up to date.
	MemoryGuidelines = "Guidelines for agent memory:\n" +
		"- This memory persists across conversations\n" +
		"- You can update it by using edit_file on the AGENTS.md file\n" +
		"- Use it to track important context, decisions, and patterns\n" +
		"- Keep entries concise and organized"
)

// MemoryHook loads AGENTS.md files and injects them into the system message.
type MemoryHook struct {
	loop.BaseHook
	fs       wickfs.FileSystem
	paths    []string
	maxChars int
	logger   *slog.Logger

	mu      sync.Mutex
	content string
}

// MemoryOption configures a MemoryHook.
type MemoryOption func(*MemoryHook)

// WithMaxMemoryChars caps the injected memory.
func WithMaxMemoryChars(n int) MemoryOption { return func(h *MemoryHook) { h.maxChars = n } }

// WithMemoryLogger sets the logger for skipped files.
func WithMemoryLogger(l *slog.Logger) MemoryOption { return func(h *MemoryHook) { h.logger = l } }

// NewMemoryHook returns the memory hook for the given AGENTS.md paths.
func NewMemoryHook(fs wickfs.FileSystem, paths []string, opts ...MemoryOption) *MemoryHook {
	h := &MemoryHook{fs: fs, paths: paths, maxChars: DefaultMaxMemoryChars, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Name implements loop.Hook.
func (h *MemoryHook) Name() string { return NameMemory }

// Phases implements loop.Hook.
func (h *MemoryHook) Phases() []string { return phasesOf(NameMemory) }

// BeforeAgent reads the memory files; missing or unreadable files are skipped.
func (h *MemoryHook) BeforeAgent(ctx context.Context, _ *loop.AgentState) error {
	var parts []string
	for _, p := range h.paths {
		content, err := h.fs.ReadFile(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			h.logger.DebugContext(ctx, "memory file skipped", "path", p, "err", err)
			continue
		}
		if strings.TrimSpace(content) == "" {
			continue
		}
		parts = append(parts, content)
	}
	joined := strings.Join(parts, MemorySeparator)
	if h.maxChars > 0 && len(joined) > h.maxChars {
		joined = prefix(joined, h.maxChars) + "\n... (memory truncated)"
	}
	h.mu.Lock()
	h.content = joined
	h.mu.Unlock()
	return nil
}

// Content returns the memory loaded by BeforeAgent.
func (h *MemoryHook) Content() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.content
}

// ModifyRequest appends <agent_memory> and the guidelines to the system message.
func (h *MemoryHook) ModifyRequest(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	content := h.Content()
	if content == "" {
		return msgs, nil
	}
	return loop.AppendSystem(msgs, MemoryBlock(content)), nil
}

// MemoryBlock renders the memory section of the system message: the memory
// in <agent_memory> tags, then MemoryGuidelines.
func MemoryBlock(content string) string {
	return "<agent_memory>\n" + content + "\n</agent_memory>\n\n" + MemoryGuidelines
}
