package threads

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// listOf is the first page of the user's threads of agentID, as large as a
// page can be.
func listOf(ctx context.Context, s Store, user, agentID string) ([]Summary, error) {
	p, err := s.List(ctx, user, ListQuery{AgentID: agentID, Limit: MaxPageSize})
	return p.Threads, err
}

// saveNew saves a new thread of agentID whose first message is text.
func saveNew(t *testing.T, s Store, user, threadID, agentID, text string) *loop.AgentState {
	t.Helper()
	st := &loop.AgentState{ThreadID: threadID, AgentID: agentID, Messages: []llm.Message{loop.Human(text)}}
	if err := s.Save(context.Background(), user, st, "", Bounds{}); err != nil {
		t.Fatal(err)
	}
	return st
}

// pages reads every page of q, checking that each page but the last one
// says where the next starts, and returns the threads and how many pages
// it took.
func pages(t *testing.T, s Store, user string, q ListQuery) ([]Summary, int) {
	t.Helper()
	var all []Summary
	for n := 1; ; n++ {
		p, err := s.List(context.Background(), user, q)
		if err != nil {
			t.Fatalf("List page %d = %v", n, err)
		}
		if len(p.Threads) > q.limit() {
			t.Fatalf("page %d holds %d threads, over its limit %d", n, len(p.Threads), q.limit())
		}
		all = append(all, p.Threads...)
		if p.Next == nil {
			return all, n
		}
		if n > 1000 {
			t.Fatal("paging does not end")
		}
		q.After = p.Next
	}
}

func threadIDs(list []Summary) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ThreadID
	}
	return out
}

// inListOrder checks that list is in the list order: updated time, then
// id, both descending, without repeats.
func inListOrder(t *testing.T, list []Summary) {
	t.Helper()
	for i := 1; i < len(list); i++ {
		a, b := list[i-1], list[i]
		if a.UpdatedAt.Before(b.UpdatedAt) || (a.UpdatedAt.Equal(b.UpdatedAt) && a.ThreadID <= b.ThreadID) {
			t.Fatalf("%s (%v) listed before %s (%v)", a.ThreadID, a.UpdatedAt, b.ThreadID, b.UpdatedAt)
		}
	}
}

func TestListPages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		limit int
	}{
		{"one thread a page", 1},
		{"pages of four", 4},
		{"one page", MaxPageSize},
		{"default size", 0},
	}
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := mk(t)
			// Saved back to back, many threads share a millisecond: the
			// order within one is by id.
			for i := range 23 {
				saveNew(t, s, "alice", fmt.Sprintf("th%02d", i), "a1", fmt.Sprintf("question %d", i))
			}
			saveNew(t, s, "bob", "th_bob", "a1", "not alice's")
			whole, err := listOf(context.Background(), s, "alice", "")
			if err != nil || len(whole) != 23 {
				t.Fatalf("List = %d threads, %v", len(whole), err)
			}
			inListOrder(t, whole)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					got, n := pages(t, s, "alice", ListQuery{Limit: c.limit})
					if !slices.Equal(threadIDs(got), threadIDs(whole)) {
						t.Fatalf("pages list %v, want %v", threadIDs(got), threadIDs(whole))
					}
					if want := (23 + c.limit - 1) / max(c.limit, 1); c.limit > 0 && n > want+1 {
						t.Fatalf("%d pages of %d for 23 threads", n, c.limit)
					}
				})
			}
		})
	}
}

// TestListPagesWhileThreadsChange pages through threads that are saved
// and deleted between pages: every thread left unchanged is listed once,
// a thread saved after its page was read is not listed again, one saved
// before its page was read moves to the front and is not listed by the
// pages that follow, and a deleted one is not listed.
func TestListPagesWhileThreadsChange(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			states := map[string]*loop.AgentState{}
			for i := range 12 {
				id := fmt.Sprintf("th%02d", i)
				states[id] = saveNew(t, s, "alice", id, "a1", "q")
			}
			whole, _ := listOf(ctx, s, "alice", "")
			order := threadIDs(whole)
			first, err := s.List(ctx, "alice", ListQuery{Limit: 4})
			if err != nil || len(first.Threads) != 4 || first.Next == nil {
				t.Fatalf("first page = %+v, %v", first, err)
			}
			seen, later := order[1], order[8] // on the first page; on the third
			deleted := order[6]
			for _, id := range []string{seen, later} {
				st := states[id]
				st.Messages = append(st.Messages, loop.AI("answer"))
				if err := s.Save(ctx, "alice", st, "", Bounds{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Delete(ctx, "alice", deleted); err != nil {
				t.Fatal(err)
			}
			rest, _ := pages(t, s, "alice", ListQuery{Limit: 4, After: first.Next})
			got := append(threadIDs(first.Threads), threadIDs(rest)...)
			var want []string
			for _, id := range order {
				if id != later && id != deleted {
					want = append(want, id)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pages list %v, want %v", got, want)
			}
			// A new first page has both at the front.
			again, _ := s.List(ctx, "alice", ListQuery{Limit: 2})
			if front := threadIDs(again.Threads); !slices.Contains(front, seen) || !slices.Contains(front, later) {
				t.Fatalf("new first page = %v, want %s and %s", front, seen, later)
			}
		})
	}
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			saveNew(t, s, "alice", "th_a", "a1", "Fix the Parser bug")
			saveNew(t, s, "alice", "th_b", "a1", "parser speed")
			saveNew(t, s, "alice", "th_c", "a2", "Fix the build")
			saveNew(t, s, "alice", "th_sub_1", "a1", "fix the parser, as a sub-agent")
			named := saveNew(t, s, "alice", "th_d", "a2", "something")
			if err := s.Rename(ctx, "alice", named.ThreadID, "Renamed PARSER notes"); err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name string
				q    ListQuery
				want []string
			}{
				{"all", ListQuery{}, []string{"th_sub_1", "th_d", "th_c", "th_b", "th_a"}},
				{"one agent", ListQuery{AgentID: "a2"}, []string{"th_d", "th_c"}},
				{"no sub-agents", ListQuery{SkipPrefix: "th_sub_"}, []string{"th_d", "th_c", "th_b", "th_a"}},
				{"a word, any case, the given title too", ListQuery{Words: []string{"parser"}, SkipPrefix: "th_sub_"}, []string{"th_d", "th_b", "th_a"}},
				{"every word", ListQuery{Words: []string{"fix", "parser"}}, []string{"th_sub_1", "th_a"}},
				{"words and agent", ListQuery{Words: []string{"fix"}, AgentID: "a2"}, []string{"th_c"}},
				{"nothing", ListQuery{Words: []string{"zebra"}}, nil},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					q := c.q
					q.Limit = 1
					got, _ := pages(t, s, "alice", q)
					// Saved in one millisecond or not, the order is by
					// time first: compare as sets, then check the order.
					inListOrder(t, got)
					if g, w := slices.Sorted(slices.Values(threadIDs(got))), slices.Sorted(slices.Values(c.want)); !slices.Equal(g, w) {
						t.Fatalf("listed %v, want %v", g, w)
					}
				})
			}
		})
	}
}

// TestListScanBudget: a page of one agent's threads among many of another
// agent reads a bounded number of threads, so it may come back short, even
// empty, with a next page; paging on finds them all. The memory store
// walks the threads in memory and fills the page at once.
func TestListScanBudget(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			for i := range 3 {
				saveNew(t, s, "alice", fmt.Sprintf("th_old%d", i), "a1", "old")
			}
			for i := range 30 {
				saveNew(t, s, "alice", fmt.Sprintf("th_new%02d", i), "a2", "new")
			}
			q := ListQuery{AgentID: "a1", Limit: 2}
			first, err := s.List(ctx, "alice", q)
			if err != nil {
				t.Fatal(err)
			}
			got, n := pages(t, s, "alice", q)
			if g := threadIDs(got); !slices.Equal(slices.Sorted(slices.Values(g)), []string{"th_old0", "th_old1", "th_old2"}) {
				t.Fatalf("listed %v", g)
			}
			if name == "redis" {
				if len(first.Threads) != 0 || first.Next == nil {
					t.Fatalf("first page = %+v, want none and a next page (it read %d threads of a2)", first, scanBudget(2))
				}
				if min := 30/scanBudget(2) + 1; n < min {
					t.Fatalf("%d pages, want at least %d: a page read more than its budget", n, min)
				}
			}
			if strings.Contains(name, "memory") && (len(first.Threads) != 2 || n != 2) {
				t.Fatalf("memory: first page %v, %d pages", threadIDs(first.Threads), n)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := mk(t)
			if _, err := s.Summary(ctx, "alice", "th1"); err != ErrNotFound {
				t.Fatalf("Summary of a missing thread = %v", err)
			}
			saveNew(t, s, "alice", "th1", "a1", "hello there")
			lease, err := s.Acquire(ctx, "alice", "th1", false)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.MarkRun(ctx, "alice", "th1", lease.Token(), "run_7", MarkWaiting); err != nil {
				t.Fatal(err)
			}
			got, err := s.Summary(ctx, "alice", "th1")
			want := Summary{ThreadID: "th1", AgentID: "a1", MessageCount: 1, Title: "hello there", Status: StatusInterrupted, ActiveRunID: "run_7"}
			want.UpdatedAt = got.UpdatedAt
			if err != nil || got != want {
				t.Fatalf("Summary = %+v, %v; want %+v", got, err, want)
			}
			if listed, _ := listOf(ctx, s, "alice", ""); len(listed) != 1 || listed[0] != got {
				t.Fatalf("List = %+v, want %+v", listed, got)
			}
			if _, err := s.Summary(ctx, "bob", "th1"); err != ErrNotFound {
				t.Fatalf("bob's Summary = %v", err)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// No run holds it: no run id, whatever the last one marked.
			if got, _ := s.Summary(ctx, "alice", "th1"); got.ActiveRunID != "" || got.Status != StatusError {
				t.Fatalf("after release = %+v", got)
			}
		})
	}
}
