package threads

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// storedGen is the generation of a thread's stored messages array: an
// append keeps it, a whole write starts a new one.
func storedGen(t *testing.T, s Store, user, threadID string) string {
	t.Helper()
	switch s := s.(type) {
	case *MemoryStore:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.threads[memKey{user, threadID}].gen
	case *RedisStore:
		g, err := s.rdb.HGet(context.Background(), s.threadKey(user, threadID), "g").Result()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	t.Fatalf("no generation for %T", s)
	return ""
}

// round appends one tool round (call and result) and an answer.
func round(st *loop.AgentState, i int) {
	id := fmt.Sprintf("c%d", i)
	st.Messages = append(st.Messages,
		loop.AI("", llm.ToolCall{ID: id, Name: "ls", Args: map[string]any{"n": float64(i)}}),
		loop.ToolMsg(id, "ls", fmt.Sprintf("result %d", i)),
		loop.AI(fmt.Sprintf("answer %d", i)))
}

// TestSavesAppend: a save whose history begins with what the store holds
// appends (the array keeps its generation) and a load returns every
// message; a history changed before its end, a state the store never saw,
// and a thread replaced behind the writer's back are written whole, and
// every load returns exactly what was saved.
func TestSavesAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			check := func(st *loop.AgentState) {
				t.Helper()
				got, err := s.Get(ctx, "alice", st.ThreadID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Version != st.Version || !reflect.DeepEqual(got.Messages, st.Messages) {
					t.Fatalf("loaded version %d with %d messages, want version %d with %v", got.Version, len(got.Messages), st.Version, st.Messages)
				}
			}
			st := &loop.AgentState{ThreadID: "th", Messages: []llm.Message{loop.Human("go")}}
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			gen := storedGen(t, s, "alice", "th")
			for i := range 3 {
				round(st, i)
				if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
					t.Fatal(err)
				}
				if g := storedGen(t, s, "alice", "th"); g != gen {
					t.Fatalf("round %d rewrote the thread (generation %s, was %s)", i, g, gen)
				}
				check(st)
			}
			// A save with nothing new appends nothing.
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			check(st)

			// An old tool result cut in place (what the byte bound does).
			st.Messages[2].Content = "cut"
			round(st, 3)
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			if g := storedGen(t, s, "alice", "th"); g == gen {
				t.Fatal("a history changed before its end was appended to")
			}
			check(st)

			// A history that lost messages.
			st.Messages = st.Messages[:4]
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			check(st)

			// A loaded state appends.
			loaded, err := s.Get(ctx, "alice", "th")
			if err != nil {
				t.Fatal(err)
			}
			gen = storedGen(t, s, "alice", "th")
			round(loaded, 4)
			if err := s.Save(ctx, "alice", loaded, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			if g := storedGen(t, s, "alice", "th"); g != gen {
				t.Fatal("a loaded state's next round rewrote the thread")
			}
			check(loaded)

			// The thread is deleted and written again up to the version the
			// writer holds: the writer's append must not land on the new
			// array, and its save is written whole.
			if err := s.Delete(ctx, "alice", "th"); err != nil {
				t.Fatal(err)
			}
			other := &loop.AgentState{ThreadID: "th", Messages: []llm.Message{loop.Human("other")}}
			for other.Version < loaded.Version {
				if err := s.Save(ctx, "alice", other, "", Bounds{}); err != nil {
					t.Fatal(err)
				}
			}
			round(loaded, 5)
			if err := s.Save(ctx, "alice", loaded, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			check(loaded)
		})
	}
}

// TestSaveWritesMessagesEditedInPlace: a hook that edits a stored message
// in place, over the very memory the store saw (a call's name or id in the
// stored array, a role, a tool result's call id), has its edit written by
// the next save, so the stored thread never differs from the writer's.
func TestSaveWritesMessagesEditedInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	edits := []struct {
		name string
		edit func(msgs []llm.Message)
	}{
		{"a call renamed", func(msgs []llm.Message) { msgs[1].ToolCalls[0].Name = "rm" }},
		{"a call's id and its result's", func(msgs []llm.Message) {
			msgs[1].ToolCalls[0].ID, msgs[2].ToolCallID = "z0", "z0"
		}},
		{"a call's args given a key", func(msgs []llm.Message) { msgs[1].ToolCalls[0].Args["all"] = true }},
		{"a tool result's tool name", func(msgs []llm.Message) { msgs[2].Name = "grep" }},
		{"an answer's role", func(msgs []llm.Message) { msgs[3].Role = llm.RoleUser }},
	}
	for name, mk := range stores(t) {
		for _, e := range edits {
			t.Run(name+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				s := mk(t)
				st := &loop.AgentState{ThreadID: "th", Messages: []llm.Message{loop.Human("go")}}
				round(st, 0)
				if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
					t.Fatal(err)
				}
				e.edit(st.Messages)
				round(st, 1)
				if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
					t.Fatal(err)
				}
				got, err := s.Get(ctx, "alice", "th")
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Messages, st.Messages) {
					t.Fatalf("stored %v,\nwant %v", got.Messages, st.Messages)
				}
			})
		}
	}
}

// TestUnansweredCallsAreNotAppendedTo: a loaded thread that left a call
// unanswered is written whole by its next save, whose history a check of
// the appended messages alone would refuse (the result answers an old
// call).
func TestUnansweredCallsAreNotAppendedTo(t *testing.T) {
	t.Parallel()
	const data = `{"thread_id":"cut","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"ls","args":{}}]}]}`
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			storeRaw(t, s, "alice", "cut", data)
			st, err := s.Get(ctx, "alice", "cut")
			if err != nil {
				t.Fatal(err)
			}
			st.Messages = append(st.Messages, loop.ToolMsg("c1", "ls", "late"))
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatalf("Save = %v", err)
			}
			got, err := s.Get(ctx, "alice", "cut")
			if err != nil || len(got.Messages) != 3 {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			// And an orphan result after a complete history is refused.
			got.Messages = append(got.Messages, loop.ToolMsg("c1", "ls", "twice"))
			if err := s.Save(ctx, "alice", got, "", Bounds{}); !errors.Is(err, ErrInvalidHistory) {
				t.Fatalf("Save of an orphan result = %v, want ErrInvalidHistory", err)
			}
		})
	}
}

// TestOldFormatThreadConverts: a thread the Redis store wrote whole before
// the two parts loads, and its next save writes the two parts.
func TestOldFormatThreadConverts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewRedisStore(newRedis(t))
	storeRaw(t, s, "alice", "old", `{"thread_id":"old","agent_id":"a1","messages":[{"role":"user","content":"hi"}],"todos":[{"id":"1","title":"t","status":"pending"}]}`)
	st, err := s.Get(ctx, "alice", "old")
	if err != nil || st.AgentID != "a1" || len(st.Messages) != 1 || len(st.Todos) != 1 {
		t.Fatalf("Get = %+v, %v", st, err)
	}
	st.Messages = append(st.Messages, loop.AI("hello"))
	if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.rdb.HExists(ctx, s.threadKey("alice", "old"), "s").Result(); err != nil || n {
		t.Fatalf("whole state still stored after a save: %v, %v", n, err)
	}
	got, err := s.Get(ctx, "alice", "old")
	if err != nil || got.AgentID != "a1" || len(got.Messages) != 2 || len(got.Todos) != 1 || got.Version != 2 {
		t.Fatalf("Get after conversion = %+v, %v", got, err)
	}
}

// TestEveryStateFieldSurvives: the meta part is the state with its
// messages cleared, so a field added to loop.AgentState is stored without
// anyone listing it; this fills every serialized field and compares.
func TestEveryStateFieldSurvives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			st := &loop.AgentState{}
			v := reflect.ValueOf(st).Elem()
			for i := range v.NumField() {
				f, field := v.Field(i), v.Type().Field(i)
				if !field.IsExported() || field.Tag.Get("json") == "-" {
					continue
				}
				switch field.Name {
				case "ThreadID":
					f.SetString("every")
				case "Version", "UpdatedAt": // the store's own
				case "Messages":
					f.Set(reflect.ValueOf([]llm.Message{loop.Human("hi")}))
				default:
					fill(t, field.Name, f)
				}
			}
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, "alice", "every")
			if err != nil {
				t.Fatal(err)
			}
			got.Stored, st.Stored = nil, nil
			if !got.UpdatedAt.Equal(st.UpdatedAt) {
				t.Fatalf("UpdatedAt = %v, want %v", got.UpdatedAt, st.UpdatedAt)
			}
			got.UpdatedAt = st.UpdatedAt
			if !reflect.DeepEqual(got, st) {
				t.Fatalf("loaded %+v\nsaved  %+v", got, st)
			}
		})
	}
}

// fill sets f to a value that is not its zero value.
func fill(t *testing.T, name string, f reflect.Value) {
	t.Helper()
	switch f.Kind() {
	case reflect.String:
		f.SetString(name + "-value")
	case reflect.Int, reflect.Int64, reflect.Int32:
		f.SetInt(7)
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 1, 1)
		fill(t, name, s.Index(0))
		f.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(f.Type())
		k, e := reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem()
		fill(t, name+"-key", k)
		fill(t, name, e)
		m.SetMapIndex(k, e)
		f.Set(m)
	case reflect.Struct:
		if f.Type() == reflect.TypeOf(time.Time{}) {
			f.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range f.NumField() {
			if f.Type().Field(i).IsExported() {
				fill(t, name+"."+f.Type().Field(i).Name, f.Field(i))
			}
		}
	default:
		t.Fatalf("field %s: fill has no value for %s; teach it one", name, f.Kind())
	}
}
