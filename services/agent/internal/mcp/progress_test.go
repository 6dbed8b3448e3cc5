package mcp

import (
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
	"github.com/wick-agent/wick/services/agent/internal/mcp/mcptest"
)

// TestProgressSink checks the rate limit and bound of a call's progress
// events: notifications closer than ProgressInterval are dropped, except
// the one that completes the call, and no call sends more than
// MaxProgressEvents.
func TestProgressSink(t *testing.T) {
	t.Parallel()
	type note struct {
		after           time.Duration
		progress, total float64
	}
	for _, tc := range []struct {
		name  string
		notes []note
		want  []float64
	}{
		{"first always", []note{{0, 1, 0}}, []float64{1}},
		{"too fast dropped", []note{{0, 1, 10}, {10 * time.Millisecond, 2, 10}, {ProgressInterval, 3, 10}}, []float64{1, 3}},
		{"completion kept", []note{{0, 1, 3}, {time.Millisecond, 2, 3}, {time.Millisecond, 3, 3}}, []float64{1, 3}},
		{"spaced kept", []note{{0, 1, 0}, {ProgressInterval, 2, 0}, {ProgressInterval, 3, 0}}, []float64{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []float64
			s := newProgressSink("ev__long", "call-1", func(ev loop.StreamEvent) {
				got = append(got, ev.Data.GetOnToolProgress().GetProgress())
			})
			now := time.Unix(0, 0)
			s.now = func() time.Time { return now }
			for _, n := range tc.notes {
				now = now.Add(n.after)
				s.notify(&sdk.ProgressNotificationParams{Progress: n.progress, Total: n.total})
			}
			if !equalFloats(got, tc.want) {
				t.Fatalf("events = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		n := 0
		s := newProgressSink("ev__long", "call-1", func(loop.StreamEvent) { n++ })
		now := time.Unix(0, 0)
		s.now = func() time.Time { return now }
		for i := range 3 * MaxProgressEvents {
			now = now.Add(ProgressInterval)
			s.notify(&sdk.ProgressNotificationParams{Progress: float64(i + 1)})
		}
		if n != MaxProgressEvents {
			t.Fatalf("%d events, want %d", n, MaxProgressEvents)
		}
	})
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestProgressEvent checks the run event of one notification as a client
// reads it.
func TestProgressEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		n        sdk.ProgressNotificationParams
		wantJSON string
	}{
		{"with total and message", sdk.ProgressNotificationParams{Progress: 2, Total: 5, Message: "step 2"}, `{"message":"step 2","progress":2,"tool_call_id":"call-1","total":5}`},
		{"progress only", sdk.ProgressNotificationParams{Progress: 0.5}, `{"progress":0.5,"tool_call_id":"call-1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := progressEvent("ev__long", "call-1", &tc.n)
			if ev.Name != "ev__long" || runevent.Kind(ev.Data) != "on_tool_progress" {
				t.Fatalf("event %s/%s", ev.Name, runevent.Kind(ev.Data))
			}
			raw, err := runevent.MarshalData(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.wantJSON {
				t.Fatalf("JSON = %s, want %s", raw, tc.wantJSON)
			}
		})
	}
	long := progressEvent("t", "c", &sdk.ProgressNotificationParams{Message: strings.Repeat("m", 10*maxProgressMessage)})
	if n := len(long.Data.GetOnToolProgress().GetMessage()); n > maxProgressMessage+len("…") {
		t.Fatalf("message of %d bytes, want at most %d", n, maxProgressMessage)
	}
}

// TestProgressRoutes checks that a notification reaches the sink of its
// token only, and none after the call removed it.
func TestProgressRoutes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]int{}
	sink := func(call string) *progressSink {
		return newProgressSink("t", call, func(ev loop.StreamEvent) {
			mu.Lock()
			got[ev.Data.GetOnToolProgress().GetToolCallId()]++
			mu.Unlock()
		})
	}
	var r progressRoutes
	a, b := newProgressToken(), newProgressToken()
	if a == b {
		t.Fatalf("tokens repeat: %s", a)
	}
	r.add(a, sink("A"))
	r.add(b, sink("B"))
	r.route(&sdk.ProgressNotificationParams{ProgressToken: a, Progress: 1})
	r.route(&sdk.ProgressNotificationParams{ProgressToken: "unknown", Progress: 1})
	r.route(&sdk.ProgressNotificationParams{ProgressToken: 7, Progress: 1})
	r.remove(b)
	r.route(&sdk.ProgressNotificationParams{ProgressToken: b, Progress: 1})
	if got["A"] != 1 || got["B"] != 0 || len(got) != 1 {
		t.Fatalf("events per call = %v, want A once", got)
	}
}

// TestCallAsksForProgress checks that a call with a progress sink carries
// a progress token to the server, and one without does not.
func TestCallAsksForProgress(t *testing.T) {
	t.Parallel()
	url, _ := serveHTTP(t)
	p := newPool(t, loopbackClient())
	cfg := []loop.MCPServerCfg{{Name: "srv", URL: url, Headers: map[string]string{"Authorization": "Bearer " + testToken}}}
	ctx := testCtx(t)
	prog := byName(listed(p.Tools(ctx, "alice", "dev", nil, cfg)))["srv__progress"].(*tool)
	for _, tc := range []struct {
		name string
		sink *progressSink
		want string
	}{
		{"with a sink", newProgressSink("srv__progress", "c1", func(loop.StreamEvent) {}), "token: wick-"},
		{"without", nil, "token: <nil>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := prog.server.call(ctx, mcptest.Progress, map[string]any{}, tc.sink)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("answer %q, want it to start with %q", got, tc.want)
			}
		})
	}
}
