package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/wick-agent/wick/llm"
)

// DiscardStepsTool is the name of the tool by which the model drops results
// of earlier tool calls from its later prompts.
const DiscardStepsTool = "discard_steps"

// discardedPlaceholder replaces a discarded result in prompts: the call and
// its result stay paired, so providers accept the history.
const discardedPlaceholder = "[result discarded by the agent: %d characters of %s output]"

// maxDiscardIDs bounds the ids one discard_steps call names.
const maxDiscardIDs = 100

// DiscardSteps returns the discard_steps tool. Which results are discarded
// is read back from the thread's own discard_steps calls (WithoutDiscarded),
// so the thread needs no other record of it and keeps every result in full.
func DiscardSteps() Tool {
	return &FuncTool{
		ToolName: DiscardStepsTool,
		ToolDesc: "Drop the results of earlier tool calls you no longer need from your context, to keep later prompts small. " +
			"Each result is replaced by a one-line placeholder; the user still sees it in full. Name the tool_call_ids of earlier calls.",
		ToolParams: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tool_call_ids": map[string]any{
					"type": "array", "items": map[string]any{"type": "string"}, "maxItems": maxDiscardIDs,
					"description": "The ids of earlier tool calls whose results to discard.",
				},
			},
			"required": []string{"tool_call_ids"},
		},
		Fn: discardSteps,
	}
}

func discardSteps(ctx context.Context, args map[string]any) (string, error) {
	raw, _ := args["tool_call_ids"].([]any)
	if len(raw) == 0 {
		return "", fmt.Errorf("tool_call_ids: name at least one earlier tool call")
	}
	if len(raw) > maxDiscardIDs {
		return "", fmt.Errorf("tool_call_ids: at most %d per call", maxDiscardIDs)
	}
	s := scopeFrom(ctx)
	if s == nil {
		return "", fmt.Errorf("discard_steps runs only inside an agent's loop")
	}
	answered := map[string]bool{}
	MutateState(ctx, s.state, func(st *AgentState) {
		for _, m := range st.Messages {
			if m.Role == llm.RoleTool {
				answered[m.ToolCallID] = true
			}
		}
	})
	var unknown []string
	for _, v := range raw {
		id, _ := v.(string)
		if !answered[id] {
			unknown = append(unknown, fmt.Sprintf("%q", id))
		}
	}
	if len(unknown) == len(raw) {
		return "", fmt.Errorf("none of these is the id of an earlier tool call with a result: %s", strings.Join(unknown, ", "))
	}
	out := fmt.Sprintf("discarded %d result(s) from later prompts", len(raw)-len(unknown))
	if len(unknown) > 0 {
		out += "; ignored, as no earlier tool call has these ids: " + strings.Join(unknown, ", ")
	}
	return out, nil
}

// WithoutDiscarded returns msgs with the results the model discarded
// replaced by a placeholder, in a copy; msgs itself when nothing was
// discarded. A discard_steps call counts only for results before it.
func WithoutDiscarded(msgs []llm.Message) []llm.Message {
	discard := map[string]bool{}
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			seen[m.ToolCallID] = true
		}
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if c.Name != DiscardStepsTool {
				continue
			}
			ids, _ := c.Args["tool_call_ids"].([]any)
			for _, v := range ids {
				if id, _ := v.(string); seen[id] {
					discard[id] = true
				}
			}
		}
	}
	if len(discard) == 0 {
		return msgs
	}
	out := make([]llm.Message, len(msgs))
	copy(out, msgs)
	for i, m := range out {
		if m.Role == llm.RoleTool && discard[m.ToolCallID] {
			out[i].Content = fmt.Sprintf(discardedPlaceholder, len(m.Content), m.Name)
		}
	}
	return out
}
