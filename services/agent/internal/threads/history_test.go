package threads

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestSaveRefusesInvalidHistory(t *testing.T) {
	t.Parallel()
	readCall := llm.ToolCall{ID: "c1", Name: "read_file", Args: map[string]any{"path": "/a"}}
	tests := []struct {
		name string
		msgs []llm.Message
		want error // nil: the save succeeds
	}{
		{"call with its result", []llm.Message{loop.Human("go"), loop.AI("", readCall), loop.ToolMsg("c1", "read_file", "x")}, nil},
		{"call without its result", []llm.Message{loop.Human("go"), loop.AI("", readCall)}, loop.ErrUnansweredCall},
		{"result of no call", []llm.Message{loop.Human("go"), loop.ToolMsg("c9", "read_file", "x")}, loop.ErrOrphanResult},
		{"result before its call", []llm.Message{loop.Human("go"), loop.ToolMsg("c1", "read_file", "x"), loop.AI("", readCall)}, loop.ErrOrphanResult},
		{"tool message without a name", []llm.Message{loop.Human("go"), loop.AI("", readCall), loop.ToolMsg("c1", "", "x")}, loop.ErrToolMessageFields},
		{"unknown role", []llm.Message{{Role: "robot", Content: "beep"}}, loop.ErrUnknownRole},
	}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			ctx := context.Background()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					st := &loop.AgentState{ThreadID: "th-" + strings.ReplaceAll(tt.name, " ", "-"), Messages: tt.msgs}
					err := s.Save(ctx, "alice", st, "", Bounds{})
					if tt.want == nil {
						if err != nil {
							t.Fatalf("Save = %v", err)
						}
						return
					}
					if !errors.Is(err, ErrInvalidHistory) || !errors.Is(err, tt.want) {
						t.Fatalf("Save = %v, want ErrInvalidHistory wrapping %v", err, tt.want)
					}
					if st.Version != 0 || !st.UpdatedAt.IsZero() {
						t.Fatalf("refused Save changed the state: version %d, updated %v", st.Version, st.UpdatedAt)
					}
					if _, err := s.Get(ctx, "alice", st.ThreadID); !errors.Is(err, ErrNotFound) {
						t.Fatalf("Get after a refused Save = %v, want ErrNotFound", err)
					}
				})
			}
		})
	}
}

// storeRaw writes data as the stored state of a thread at version 1,
// bypassing Save, as a corruption or an older writer would.
func storeRaw(t *testing.T, s Store, user, threadID, data string) {
	t.Helper()
	switch s := s.(type) {
	case *MemoryStore:
		now := s.now()
		s.mu.Lock()
		meta, body := splitRaw(data)
		s.threads[memKey{user, threadID}] = &memEntry{meta: meta, body: body, gen: "g_raw", version: 1, updated: now, lastAccess: now}
		s.mu.Unlock()
	case *RedisStore:
		if err := s.rdb.HSet(context.Background(), s.threadKey(user, threadID), "v", 1, "s", data).Err(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no raw writer for %T", s)
	}
}

// splitRaw splits a stored state into the memory store's two parts; data
// that is not a JSON object becomes the meta part, with no messages.
func splitRaw(data string) (meta, body []byte) {
	var parts map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &parts); err != nil {
		return []byte(data), []byte("[")
	}
	msgs := parts["messages"]
	delete(parts, "messages")
	meta, err := json.Marshal(parts)
	if err != nil {
		panic(err)
	}
	return meta, msgs[:len(msgs)-1]
}

func TestLoadReportsCorruptedThread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string // in the error, after the thread id and ErrCorrupt
	}{
		{"not JSON", `{"thread_id":"x","messages":[`, ""},
		{"result without its call", `{"messages":[{"role":"user","content":"go"},{"role":"tool","content":"x","name":"ls","tool_call_id":"c9"}]}`, loop.ErrOrphanResult.Error()},
		{"tool message without tool_call_id", `{"messages":[{"role":"user","content":"go"},{"role":"tool","content":"x","name":"ls"}]}`, loop.ErrToolMessageFields.Error()},
		{"unknown role", `{"messages":[{"role":"robot","content":"beep"}]}`, loop.ErrUnknownRole.Error()},
	}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			ctx := context.Background()
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					id := "bad" + string(rune('a'+i))
					storeRaw(t, s, "alice", id, tt.data)
					_, err := s.Get(ctx, "alice", id)
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), tt.want) {
						t.Fatalf("Get = %v, want ErrCorrupt naming thread %s and %q", err, id, tt.want)
					}
					// LoadOrCreate must not paper over it with a new thread.
					if st, err := s.LoadOrCreate(ctx, "alice", id); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("LoadOrCreate = %+v, %v, want ErrCorrupt", st, err)
					}
				})
			}
		})
	}
}

// A writer that died between a model's reply and its tools' results leaves
// calls without results; such a thread loads, for the next run to repair.
func TestLoadKeepsUnansweredCalls(t *testing.T) {
	t.Parallel()
	const data = `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"ls","args":{}}]}]}`
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			storeRaw(t, s, "alice", "cut", data)
			st, err := s.Get(context.Background(), "alice", "cut")
			if err != nil || len(st.Messages) != 2 || len(st.Messages[1].ToolCalls) != 1 {
				t.Fatalf("Get = %+v, %v; want the stored two messages", st, err)
			}
		})
	}
}
