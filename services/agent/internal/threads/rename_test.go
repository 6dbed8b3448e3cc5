package threads

import (
	"context"
	"errors"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// TestRename checks that a given title replaces the derived one in List,
// survives saves by a run that loaded the thread before the rename (with
// the lock held, appending or writing whole), is per user, and is dropped
// by a reset and by deleting the thread.
func TestRename(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			listed := func(t *testing.T) Summary {
				t.Helper()
				list, err := listOf(ctx, s, "alice", "")
				if err != nil || len(list) != 1 {
					t.Fatalf("List = %+v, %v", list, err)
				}
				return list[0]
			}
			if err := s.Rename(ctx, "alice", "th1", "early"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Rename before the first save = %v, want ErrNotFound", err)
			}
			st := &loop.AgentState{ThreadID: "th1", AgentID: "a1", Messages: []llm.Message{loop.Human("first question"), loop.AI("ok")}}
			if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
				t.Fatal(err)
			}

			// A run holds the thread and has loaded it.
			lease, err := s.Acquire(ctx, "alice", "th1", false)
			if err != nil {
				t.Fatal(err)
			}
			run, err := s.Get(ctx, "alice", "th1")
			if err != nil {
				t.Fatal(err)
			}
			before := listed(t)
			if err := s.Rename(ctx, "alice", "th1", "Renamed ✓"); err != nil {
				t.Fatal(err)
			}
			if got := listed(t); got.Title != "Renamed ✓" || !got.UpdatedAt.Equal(before.UpdatedAt) {
				t.Fatalf("after Rename = %+v, before %+v", got, before)
			}
			if err := s.Rename(ctx, "bob", "th1", "bob's"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("bob's Rename = %v, want ErrNotFound", err)
			}

			for _, save := range []struct {
				name  string
				whole bool
			}{{"append", false}, {"whole", true}} {
				if save.whole {
					run.Stored = nil
				}
				run.Messages = append(run.Messages, loop.Human("next from "+save.name), loop.AI("ok"))
				if err := s.Save(ctx, "alice", run, lease.Token(), Bounds{}); err != nil {
					t.Fatalf("%s save = %v", save.name, err)
				}
				if got := listed(t); got.Title != "Renamed ✓" || got.MessageCount != len(run.Messages) {
					t.Fatalf("after the run's %s save = %+v", save.name, got)
				}
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}

			if err := s.Rename(ctx, "alice", "th1", ""); err != nil {
				t.Fatal(err)
			}
			if got := listed(t); got.Title != "first question" {
				t.Fatalf("after reset = %+v", got)
			}

			if err := s.Rename(ctx, "alice", "th1", "again"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "alice", "th1"); err != nil {
				t.Fatal(err)
			}
			fresh := &loop.AgentState{ThreadID: "th1", AgentID: "a1", Messages: []llm.Message{loop.Human("new start")}}
			if err := s.Save(ctx, "alice", fresh, "", Bounds{}); err != nil {
				t.Fatal(err)
			}
			if got := listed(t); got.Title != "new start" {
				t.Fatalf("a thread written again after Delete = %+v", got)
			}
		})
	}
}
