package tasks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/runevent"

	"github.com/wick-agent/wick/platform/netguard"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/tools"
)

// ends records the tasks the manager announces as finished.
type ends struct {
	mu   sync.Mutex
	done chan *Task
	seen map[string][]string
}

func newEnds() *ends { return &ends{done: make(chan *Task, 8), seen: map[string][]string{}} }

func (e *ends) Event(t *Task, data *agentv1.RunEventData) {
	e.mu.Lock()
	e.seen[t.ID] = append(e.seen[t.ID], runevent.Kind(data))
	e.mu.Unlock()
}
func (e *ends) Finished(t *Task) { e.done <- t }

func (e *ends) wait(t *testing.T) *Task {
	t.Helper()
	select {
	case tk := <-e.done:
		return tk
	case <-time.After(30 * time.Second):
		t.Fatal("no task finished")
		return nil
	}
}

// TestManagerFinishes: a native tool's output, a native tool's panic, a
// status URL that answers running, then failed, a kind carried by a
// Carrier and an unknown kind each end their task once
// with the right status and result, announced with start and end events.
func TestManagerFinishes(t *testing.T) {
	t.Parallel()
	polls := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls++
		n := polls
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n < 3 {
			_, _ = w.Write([]byte(`{"status":"running","progress":"step ` + strconv.Itoa(n) + `"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"failed","error":"boom"}`))
	}))
	t.Cleanup(srv.Close)
	native := map[string]loop.Tool{
		"ok": &loop.FuncTool{ToolName: "ok", Fn: func(ctx context.Context, args map[string]any) (string, error) {
			return "made " + args["what"].(string), nil
		}},
		"panics": &loop.FuncTool{ToolName: "panics", Fn: func(context.Context, map[string]any) (string, error) { panic("bad") }},
	}
	client := tools.SafeHTTPClient(netguard.New(netip.MustParsePrefix("127.0.0.0/8")))
	for _, tc := range []struct {
		name, status, result string
		spec                 Spec
		events               int
	}{
		{"native", StatusDone, "made cake", Spec{Tool: "ok", Kind: KindNative, Args: map[string]any{"what": "cake"}}, 2},
		{"panic", StatusFailed, "Error: tool panics failed unexpectedly", Spec{Tool: "panics", Kind: KindNative}, 2},
		{"http", StatusFailed, "Error: boom", Spec{Tool: "remote", Kind: KindHTTP, StatusURL: srv.URL + "/s"}, 4},
		{"carried", StatusDone, "carried for th1", Spec{Tool: "task", Kind: "carried"}, 2},
		{"unknown kind", StatusFailed, `Error: unknown task kind "nope"`, Spec{Tool: "task", Kind: "nope"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnds()
			m := NewManager(NewMemoryStore(), "A", native, nil, client, WithPollBackoff(time.Millisecond, 5*time.Millisecond))
			m.Carry("carried", func(_ context.Context, t *Task) (string, error) { return "carried for " + t.ThreadID, nil })
			m.Start(e)
			t.Cleanup(m.Close)
			tc.spec.User, tc.spec.ThreadID = "alice", "th1"
			started, err := m.Begin(context.Background(), tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := e.wait(t)
			if got.ID != started.ID || got.Status != tc.status || got.Result != tc.result {
				t.Fatalf("finished %+v, want %s %q", got, tc.status, tc.result)
			}
			stored, err := m.Store().Get(context.Background(), "alice", started.ID)
			if err != nil || stored.Status != tc.status || stored.Owner != "" {
				t.Fatalf("stored %+v, %v", stored, err)
			}
			e.mu.Lock()
			evs := e.seen[started.ID]
			e.mu.Unlock()
			if len(evs) != tc.events || evs[0] != "on_task_start" || evs[len(evs)-1] != "on_task_end" {
				t.Fatalf("events %v", evs)
			}
		})
	}
}
