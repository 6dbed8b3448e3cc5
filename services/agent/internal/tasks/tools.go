package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wick-agent/wick/platform/runevent"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/identity"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Names of the model's task tools.
const (
	CheckTaskTool  = "check_task"
	CancelTaskTool = "cancel_task"
	ListTasksTool  = "list_tasks"
)

// ToolNames are the names of the model's task tools, which no other tool may take.
func ToolNames() []string { return []string{CheckTaskTool, CancelTaskTool, ListTasksTool} }

// Background is implemented by tools whose calls run as background tasks;
// an agent with one gets the model's task tools.
type Background interface {
	loop.Tool
	RunsInBackground() bool
}

// IsBackground reports whether t runs its calls in the background.
func IsBackground(t loop.Tool) bool {
	b, ok := t.(Background)
	return ok && b.RunsInBackground()
}

// marked is a native tool declared background by the embedding program.
type marked struct{ loop.Tool }

func (marked) RunsInBackground() bool { return true }

// MarkBackground declares that calls of the native tool t run in the
// background; Manager.Native then wraps it for the loop.
func MarkBackground(t loop.Tool) loop.Tool { return marked{t} }

// Unmark returns the tool a MarkBackground wrapped (t itself otherwise).
func Unmark(t loop.Tool) loop.Tool {
	if m, ok := t.(marked); ok {
		return m.Tool
	}
	return t
}

// starter runs a tool's calls as tasks: native calls entirely in the
// background, HTTP calls up to the status URL their endpoint answers.
type starter struct {
	loop.Tool
	m    *Manager
	kind string
}

// Native returns the loop's form of a background native tool: each call
// starts a task and answers its id at once. The tool itself must be among
// the manager's native tools, so that a take-over can run it again.
func (m *Manager) Native(t loop.Tool) loop.Tool { return &starter{Tool: t, m: m, kind: KindNative} }

// AsyncHTTP returns the loop's form of an HTTP tool registered async: each
// call is POSTed as usual, and an answer {"status_url": …} starts a task that
// polls it. An answer without status_url is the call's result, as for a
// synchronous tool.
func (m *Manager) AsyncHTTP(t loop.Tool) loop.Tool { return &starter{Tool: t, m: m, kind: KindHTTP} }

func (s *starter) RunsInBackground() bool { return true }

func (s *starter) Description() string {
	return s.Tool.Description() + " (runs in the background: the call answers a task id; the result is added to the conversation when it finishes)"
}

func (s *starter) Execute(ctx context.Context, args map[string]any) (string, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return "", err
	}
	info, _ := loop.CallInfoFromContext(ctx)
	spec := Spec{User: user, ThreadID: info.ThreadID, RunID: info.RunID, ToolCallID: info.ToolCallID, Tool: s.Name(), Kind: s.kind, Args: args}
	if s.kind == KindHTTP {
		out, err := s.Tool.Execute(ctx, args)
		if err != nil {
			return out, err
		}
		var reply struct {
			StatusURL string `json:"status_url"`
		}
		if json.Unmarshal([]byte(out), &reply) != nil || reply.StatusURL == "" {
			return out, nil
		}
		if err := ValidStatusURL(reply.StatusURL); err != nil {
			return "", fmt.Errorf("tool %s: %w", s.Name(), err)
		}
		spec.StatusURL = reply.StatusURL
	}
	t, err := s.m.Begin(context.WithoutCancel(ctx), spec)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Started background task %s (%s). Its result will be added to this conversation when it finishes; check_task, cancel_task and list_tasks follow it.", t.ID, t.Tool), nil
}

// Note is the message that gives a finished task's result to its thread.
func Note(t *Task) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("[background task %s (%s) %s]\n%s", t.ID, t.Tool, t.Status, t.Result)}
}

// Notes takes the thread's finished, undelivered tasks and returns their
// notes, oldest first; each task is delivered once.
func (m *Manager) Notes(ctx context.Context, user, threadID string) ([]llm.Message, error) {
	ts, err := m.store.TakeUndelivered(ctx, user, threadID)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Message, len(ts))
	for i, t := range ts {
		out[i] = Note(t)
	}
	return out, nil
}

// ModelTools are check_task, cancel_task and list_tasks, given to agents
// with a background tool.
func (m *Manager) ModelTools() []loop.Tool {
	idParam := map[string]any{"type": "object", "properties": map[string]any{
		"task_id": map[string]any{"type": "string", "description": "the id a background tool call answered"},
	}, "required": []string{"task_id"}}
	return []loop.Tool{
		&loop.FuncTool{ToolName: CheckTaskTool, ToolDesc: "Show a background task's status, and its result once finished.", ToolParams: idParam,
			Fn: func(ctx context.Context, args map[string]any) (string, error) {
				return m.byID(ctx, args, func(ctx context.Context, user, id string) (*Task, error) { return m.store.Get(ctx, user, id) })
			}},
		&loop.FuncTool{ToolName: CancelTaskTool, ToolDesc: "Cancel a running background task.", ToolParams: idParam,
			Fn: func(ctx context.Context, args map[string]any) (string, error) { return m.byID(ctx, args, m.Cancel) }},
		&loop.FuncTool{ToolName: ListTasksTool, ToolDesc: "List this conversation's background tasks and their status.",
			Fn: func(ctx context.Context, _ map[string]any) (string, error) {
				user, err := identity.Require(ctx)
				if err != nil {
					return "", err
				}
				info, _ := loop.CallInfoFromContext(ctx)
				ts, err := m.store.List(ctx, user, info.ThreadID)
				if err != nil {
					return "", err
				}
				if len(ts) == 0 {
					return "no background tasks in this conversation", nil
				}
				var b strings.Builder
				for _, t := range ts {
					fmt.Fprintf(&b, "%s %s %s\n", t.ID, t.Tool, t.Status)
				}
				return b.String(), nil
			}},
	}
}

func (m *Manager) byID(ctx context.Context, args map[string]any, get func(context.Context, string, string) (*Task, error)) (string, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return "", err
	}
	id, _ := args["task_id"].(string)
	if id == "" {
		return "", errors.New("task_id is required")
	}
	t, err := get(ctx, user, id)
	if err != nil {
		return "", err
	}
	b, err := runevent.AppendMessage(nil, EventData(t))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
