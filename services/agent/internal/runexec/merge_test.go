package runexec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/runevent"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

func textEv(id, text string) loop.StreamEvent {
	return loop.StreamEvent{RunID: "r", ThreadID: "t", ID: id, Data: runevent.MustFromJSON("on_chat_model_stream", map[string]any{"delta": text})}
}

func otherEv(id, kind string) loop.StreamEvent {
	return loop.StreamEvent{RunID: "r", ThreadID: "t", ID: id, Data: runevent.MustFromJSON(kind, map[string]any{"x": "y"})}
}

// render is events as the run log writes them.
func render(t *testing.T, evs []loop.StreamEvent) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// deltas is n text events "0 ", "1 ", … with ids "<from+i>-0".
func deltas(from, n int) []loop.StreamEvent {
	var out []loop.StreamEvent
	for i := range n {
		out = append(out, textEv(fmt.Sprintf("%d-0", from+i), fmt.Sprintf("%d ", from+i)))
	}
	return out
}

func join(evs ...[]loop.StreamEvent) []loop.StreamEvent {
	var out []loop.StreamEvent
	for _, e := range evs {
		out = append(out, e...)
	}
	return out
}

func TestMergeDeltas(t *testing.T) {
	other := textEv("20-0", "x")
	other.Name = "sub-agent"
	bigPiece := strings.Repeat("a", maxMergedDelta)
	for _, tc := range []struct {
		name string
		in   []loop.StreamEvent
		want []loop.StreamEvent
	}{
		{"fewer than mergeBehind waiting: as read", deltas(1, mergeBehind-1), deltas(1, mergeBehind-1)},
		{"a backlog merges into one event with the last id", deltas(1, mergeBehind), []loop.StreamEvent{textEv(fmt.Sprintf("%d-0", mergeBehind), "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 ")}},
		{
			"never across another kind of event",
			join(deltas(1, 8), []loop.StreamEvent{otherEv("9-0", "on_tool_start")}, deltas(10, 8)),
			[]loop.StreamEvent{textEv("8-0", "1 2 3 4 5 6 7 8 "), otherEv("9-0", "on_tool_start"), textEv("17-0", "10 11 12 13 14 15 16 17 ")},
		},
		{
			"never across sources",
			join(deltas(1, 16), []loop.StreamEvent{other}),
			[]loop.StreamEvent{textEv("16-0", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 "), other},
		},
		{
			"a merged event stops growing at maxMergedDelta",
			join([]loop.StreamEvent{textEv("1-0", bigPiece)}, deltas(2, 16)),
			[]loop.StreamEvent{textEv("1-0", bigPiece), textEv("17-0", "2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 ")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]loop.StreamEvent(nil), tc.in...)
			before := render(t, tc.in)
			got := mergeDeltas(in)
			if g, w := render(t, got), render(t, tc.want); !reflect.DeepEqual(g, w) {
				t.Fatalf("merged:\n%v\nwant:\n%v", g, w)
			}
			if !reflect.DeepEqual(render(t, in), before) {
				t.Fatal("the events read were modified")
			}
		})
	}
}
