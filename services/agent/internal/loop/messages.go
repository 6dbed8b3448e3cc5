package loop

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wick-agent/wick/llm"
)

// Validation errors; Validate wraps them with the offending message's index.
var (
	ErrUnknownRole       = errors.New("unknown role (only system, user, assistant and tool are allowed)")
	ErrToolMessageFields = errors.New("tool message needs tool_call_id and name")
	ErrEmptyAssistant    = errors.New("assistant message needs content or tool_calls")
	ErrToolCallFields    = errors.New("assistant tool call needs id and name")
	ErrEmptyContent      = errors.New("message content is empty")
	ErrNoMessages        = errors.New("no messages")
	ErrRoleNotAllowed    = errors.New("only user and system messages are accepted as input")
	ErrUnansweredCall    = errors.New("assistant tool call has no tool result")
	ErrOrphanResult      = errors.New("tool message answers no earlier tool call")
)

const prettyToolCallFormat = "  → tool_call: %s(id=%s, args=%v)\n"

// ValidRole reports whether r is one of the four known roles.
func ValidRole(r string) bool {
	switch r {
	case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool:
		return true
	}
	return false
}

// UserInputRole reports whether r may appear in user-submitted messages; an
// outside caller must never inject assistant turns or tool results.
func UserInputRole(r string) bool {
	return r == llm.RoleUser || r == llm.RoleSystem
}

// System builds a system message.
func System(content string) llm.Message { return llm.Message{Role: llm.RoleSystem, Content: content} }

// Human builds a user message.
func Human(content string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: content} }

// AI builds an assistant message, optionally with tool calls.
func AI(content string, calls ...llm.ToolCall) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: content, ToolCalls: calls}
}

// ToolMsg builds a tool result message.
func ToolMsg(toolCallID, name, content string) llm.Message {
	return llm.Message{Role: llm.RoleTool, Content: content, ToolCallID: toolCallID, Name: name}
}

// Messages is an ordered conversation with builder, filter and validation
// methods. Builder methods return a new slice header; like append, they may
// share the backing array with the receiver.
type Messages []llm.Message

// NewMessages returns an empty chain.
func NewMessages() Messages { return Messages{} }

// System appends a system message.
func (m Messages) System(content string) Messages { return append(m, System(content)) }

// Human appends a user message.
func (m Messages) Human(content string) Messages { return append(m, Human(content)) }

// AI appends an assistant message.
func (m Messages) AI(content string, calls ...llm.ToolCall) Messages {
	return append(m, AI(content, calls...))
}

// Tool appends a tool result message.
func (m Messages) Tool(toolCallID, name, content string) Messages {
	return append(m, ToolMsg(toolCallID, name, content))
}

// Add appends arbitrary messages.
func (m Messages) Add(msgs ...llm.Message) Messages { return append(m, msgs...) }

// ByRole returns the messages with the given role.
func (m Messages) ByRole(role string) Messages {
	out := Messages{}
	for _, msg := range m {
		if msg.Role == role {
			out = append(out, msg)
		}
	}
	return out
}

// UserMessages returns the user messages.
func (m Messages) UserMessages() Messages { return m.ByRole(llm.RoleUser) }

// AssistantMessages returns the assistant messages.
func (m Messages) AssistantMessages() Messages { return m.ByRole(llm.RoleAssistant) }

// ToolMessages returns the tool messages.
func (m Messages) ToolMessages() Messages { return m.ByRole(llm.RoleTool) }

// SystemMessages returns the system messages.
func (m Messages) SystemMessages() Messages { return m.ByRole(llm.RoleSystem) }

// Last returns the last message, or the zero Message when empty.
func (m Messages) Last() llm.Message {
	if len(m) == 0 {
		return llm.Message{}
	}
	return m[len(m)-1]
}

// LastContent returns the last message's content.
func (m Messages) LastContent() string { return m.Last().Content }

// Len returns the number of messages.
func (m Messages) Len() int { return len(m) }

// Slice returns the underlying slice.
func (m Messages) Slice() []llm.Message { return []llm.Message(m) }

// Validate checks the whole chain: known roles, tool messages with
// tool_call_id and name, assistant messages with content or tool calls whose
// calls have id and name, user/system messages with content.
func (m Messages) Validate() error {
	for i, msg := range m {
		if err := validateMessage(msg); err != nil {
			return fmt.Errorf("message %d (%s): %w", i, msg.Role, err)
		}
	}
	return nil
}

func validateMessage(msg llm.Message) error {
	switch msg.Role {
	case llm.RoleTool:
		if msg.ToolCallID == "" || msg.Name == "" {
			return ErrToolMessageFields
		}
	case llm.RoleAssistant:
		if msg.Content == "" && len(msg.ToolCalls) == 0 {
			return ErrEmptyAssistant
		}
		for _, c := range msg.ToolCalls {
			if c.ID == "" || c.Name == "" {
				return ErrToolCallFields
			}
		}
	case llm.RoleUser, llm.RoleSystem:
		if msg.Content == "" {
			return ErrEmptyContent
		}
	default:
		return ErrUnknownRole
	}
	return nil
}

// ValidateHistory is Validate plus the pairing a thread keeps between runs,
// which providers insist on: every tool message answers a tool call made
// before it, and every tool call has its result. The loop never leaves a
// call unanswered (RepairToolCalls), so a history failing this is a bug.
func (m Messages) ValidateHistory() error {
	if err := m.Validate(); err != nil {
		return err
	}
	// pending maps a call id to the index of the assistant message making it.
	pending := map[string]int{}
	for i, msg := range m {
		switch msg.Role {
		case llm.RoleAssistant:
			for _, c := range msg.ToolCalls {
				pending[c.ID] = i
			}
		case llm.RoleTool:
			if _, ok := pending[msg.ToolCallID]; !ok {
				return fmt.Errorf("message %d (tool, tool_call_id %q): %w", i, msg.ToolCallID, ErrOrphanResult)
			}
			delete(pending, msg.ToolCallID)
		}
	}
	if len(pending) > 0 {
		// Report the earliest, so the error is the same on every call.
		id, at := "", len(m)
		for c, i := range pending {
			if i < at || i == at && c < id {
				id, at = c, i
			}
		}
		return fmt.Errorf("message %d (assistant, tool call %q): %w", at, id, ErrUnansweredCall)
	}
	return nil
}

// ValidateUserInput is the stricter check for externally submitted messages:
// non-empty, only user and system roles, non-empty content.
func (m Messages) ValidateUserInput() error {
	if len(m) == 0 {
		return ErrNoMessages
	}
	for i, msg := range m {
		if !UserInputRole(msg.Role) {
			return fmt.Errorf("message %d (role %q): %w", i, msg.Role, ErrRoleNotAllowed)
		}
		if strings.TrimSpace(msg.Content) == "" {
			return fmt.Errorf("message %d (%s): %w", i, msg.Role, ErrEmptyContent)
		}
	}
	return nil
}

// EstimateTokens estimates without a tokenizer, at about four bytes a token:
// len(content)/4 + len(rawArgs)/4.
// When a call has no RawArgs (it came back from storage), the size of its
// arguments is estimated from their JSON encoding.
func (m Messages) EstimateTokens() int {
	total := 0
	for _, msg := range m {
		total += EstimateMessageTokens(msg)
	}
	return total
}

// EstimateMessageTokens estimates one message the way EstimateTokens does.
func EstimateMessageTokens(msg llm.Message) int {
	n := len(msg.Content) / 4
	for _, c := range msg.ToolCalls {
		raw := c.RawArgs
		if raw == "" && len(c.Args) > 0 {
			raw = argsJSON(c.Args)
		}
		n += len(raw) / 4
	}
	return n
}

// PrettyPrint renders the chain for humans, one block per message, for logs
// and debugging.
func (m Messages) PrettyPrint() string {
	var b strings.Builder
	for i, msg := range m {
		if i > 0 {
			b.WriteString("\n")
		}
		switch msg.Role {
		case llm.RoleSystem:
			b.WriteString("[System]\n")
		case llm.RoleUser:
			b.WriteString("[Human]\n")
		case llm.RoleAssistant:
			b.WriteString("[AI]\n")
		case llm.RoleTool:
			fmt.Fprintf(&b, "[Tool: %s (call_id=%s)]\n", msg.Name, msg.ToolCallID)
		default:
			fmt.Fprintf(&b, "[%s]\n", msg.Role)
		}
		if msg.Content != "" {
			b.WriteString(msg.Content)
			b.WriteString("\n")
		}
		for _, c := range msg.ToolCalls {
			fmt.Fprintf(&b, prettyToolCallFormat, c.Name, c.ID, c.Args)
		}
	}
	return b.String()
}

// AppendSystem returns msgs with text appended to the leading system message
// (after a blank line), or with a system message holding text inserted first
// when there is none. msgs itself is not modified.
func AppendSystem(msgs []llm.Message, text string) []llm.Message {
	out := make([]llm.Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	if len(out) > 0 && out[0].Role == llm.RoleSystem {
		if out[0].Content == "" {
			out[0].Content = text
		} else {
			out[0].Content += "\n\n" + text
		}
		return out
	}
	return append([]llm.Message{System(text)}, out...)
}
