package threads

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func TestTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ab ", 40) // 120 characters
	cjk := strings.Repeat("日本語", 30)  // 90 runes of 3 bytes
	cases := []struct {
		name string
		msgs []llm.Message
		want string
	}{
		{"none", nil, ""},
		{"no user message", []llm.Message{{Role: llm.RoleSystem, Content: "be nice"}, loop.AI("hi")}, ""},
		{"first user message", []llm.Message{{Role: llm.RoleSystem, Content: "sys"}, loop.Human("first"), loop.AI("x"), loop.Human("second")}, "first"},
		{"whitespace collapsed", []llm.Message{loop.Human("  fix\tthe\n\n bug  ")}, "fix the bug"},
		{"exactly the bound", []llm.Message{loop.Human(strings.Repeat("x", MaxTitleRunes))}, strings.Repeat("x", MaxTitleRunes)},
		{"cut", []llm.Message{loop.Human(long)}, strings.TrimSpace(long[:MaxTitleRunes-1]) + "…"},
		{"cut on a rune boundary", []llm.Message{loop.Human(cjk)}, string([]rune(cjk)[:MaxTitleRunes-1]) + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := title(c.msgs)
			if got != c.want {
				t.Fatalf("title = %q, want %q", got, c.want)
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxTitleRunes {
				t.Fatalf("title %q is not valid UTF-8 of at most %d runes", got, MaxTitleRunes)
			}
		})
	}
}

// TestListTitleAndStatus checks what List reports of each thread: the title
// stored at save, and the status from the run lock and the run's mark.
func TestListTitleAndStatus(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			summary := func(t *testing.T) Summary {
				t.Helper()
				list, err := listOf(ctx, s, "alice", "")
				if err != nil || len(list) != 1 {
					t.Fatalf("List = %+v, %v", list, err)
				}
				return list[0]
			}
			wantStatus := func(t *testing.T, want string) {
				t.Helper()
				if got := summary(t).Status; got != want {
					t.Fatalf("status = %q, want %q", got, want)
				}
			}

			// Marking a thread that was never saved marks nothing.
			if err := s.MarkRun(ctx, "alice", "th1", "", "run_1", MarkFailed); err != nil {
				t.Fatalf("MarkRun before save = %v", err)
			}
			msg := "  Ünïcode   title\t" + strings.Repeat("é", 100)
			st := &loop.AgentState{ThreadID: "th1", AgentID: "a1", Messages: []llm.Message{loop.Human(msg), loop.AI("ok")}}
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			got := summary(t)
			if want := title(st.Messages); got.Title != want || !strings.HasPrefix(want, "Ünïcode title éé") || !strings.HasSuffix(want, "é…") {
				t.Fatalf("title = %q, want %q", got.Title, want)
			}
			wantStatus(t, StatusIdle)

			lease, err := s.Acquire(ctx, "alice", "th1", false)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusRunning)
			// Only the lock's holder marks.
			if err := s.MarkRun(ctx, "alice", "th1", "", "run_1", MarkWaiting); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("MarkRun without the lock = %v, want ErrLeaseLost", err)
			}
			wantStatus(t, StatusRunning)
			if err := s.MarkRun(ctx, "alice", "th1", lease.Token(), "run_1", MarkWaiting); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusInterrupted)
			// A save by the run keeps its mark and the first message's title.
			st.Messages = append(st.Messages, loop.Human("later"))
			if err := s.Save(ctx, "alice", st, lease.Token(), Bounds{}); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusInterrupted)
			if got := summary(t); got.Title != title(st.Messages[:1]) || got.MessageCount != 3 {
				t.Fatalf("after save = %+v", got)
			}
			if err := s.MarkRun(ctx, "alice", "th1", lease.Token(), "run_1", MarkNone); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusRunning)
			if err := s.MarkRun(ctx, "alice", "th1", lease.Token(), "run_1", MarkFailed); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusRunning)
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusError)

			// A run that died waiting leaves its thread failed.
			lease, err = s.Acquire(ctx, "alice", "th1", false)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.MarkRun(ctx, "alice", "th1", lease.Token(), "run_1", MarkWaiting); err != nil {
				t.Fatal(err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, StatusError)
		})
	}
}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		locked bool
		mark   string
		want   string
	}{
		{false, MarkNone, StatusIdle},
		{false, "unknown", StatusIdle},
		{false, MarkFailed, StatusError},
		{false, MarkWaiting, StatusError},
		{true, MarkNone, StatusRunning},
		{true, MarkFailed, StatusRunning},
		{true, MarkWaiting, StatusInterrupted},
	}
	for _, c := range cases {
		if got := statusOf(c.locked, c.mark); got != c.want {
			t.Errorf("statusOf(%v, %q) = %q, want %q", c.locked, c.mark, got, c.want)
		}
	}
}
