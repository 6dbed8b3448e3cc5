package runexec

import (
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
			"data other than a lone delta stays apart",
			join(deltas(1, 15), []loop.StreamEvent{{RunID: "r", ThreadID: "t", ID: "16-0", Data: runevent.MustFromJSON("on_chat_model_stream", map[string]any{"delta": "16 ", "extra": "1"})}}),
			join([]loop.StreamEvent{textEv("15-0", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 ")}, []loop.StreamEvent{{RunID: "r", ThreadID: "t", ID: "16-0", Data: runevent.MustFromJSON("on_chat_model_stream", map[string]any{"delta": "16 ", "extra": "1"})}}),
		},
		{
			"a merged event stops growing at maxMergedDelta",
			join([]loop.StreamEvent{textEv("1-0", bigPiece)}, deltas(2, 16)),
			[]loop.StreamEvent{textEv("1-0", bigPiece), textEv("17-0", "2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 ")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]loop.StreamEvent(nil), tc.in...)
			got := mergeDeltas(in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("merged:\n%v\nwant:\n%v", got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Fatal("the events read were modified")
			}
		})
	}
}
