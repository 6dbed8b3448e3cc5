package runexec

import (
	"strings"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Limits of merging.
const (
	// mergeBehind is how many events must wait for a follower before its
	// deltas merge: a follower that keeps up finds one or a few new events
	// at each read (those logged while it woke up), one that is this many
	// events behind has fallen behind its run.
	mergeBehind = 16
	// maxMergedDelta bounds the text of one merged event (bytes): a
	// follower far behind gets its backlog in events of at most this size,
	// plus one piece.
	maxMergedDelta = 64 << 10
)

// mergeDeltas merges, in a batch of events read from the log together by a
// follower that had caught up with its run, each run of adjacent text
// deltas of the same run into one event: the text of its pieces joined,
// the id of its last piece. A batch of at least mergeBehind events is then
// a backlog that waited for a follower which fell behind (its client reads
// slowly); a smaller one is returned as it is, and so is a replay of the
// run's history (follow decides). So a slow client gets fewer, larger
// events rather than an ever longer wait. A client re-joining from a merged event's id continues
// after its last piece, as from that piece's own id. Nothing merges across
// an event of another kind (a tool event, usage), and the order is kept.
// The batch's events are not modified: the log shares their data.
func mergeDeltas(evs []loop.StreamEvent) []loop.StreamEvent {
	if len(evs) < mergeBehind {
		return evs
	}
	out := evs[:0:0]
	var b strings.Builder
	for i := 0; i < len(evs); {
		text, ok := delta(evs[i])
		j := i + 1
		if ok {
			b.Reset()
			b.WriteString(text)
			for ; j < len(evs) && b.Len() < maxMergedDelta && sameSource(evs[i], evs[j]); j++ {
				next, ok := delta(evs[j])
				if !ok {
					break
				}
				b.WriteString(next)
			}
		}
		if j == i+1 {
			out = append(out, evs[i])
			i = j
			continue
		}
		merged := evs[j-1]
		merged.Data = loop.DeltaData(b.String())
		out = append(out, merged)
		i = j
	}
	return out
}

// delta is the text of a text-delta event; no other event merges.
func delta(ev loop.StreamEvent) (string, bool) {
	d := ev.Data.GetOnChatModelStream()
	if d == nil {
		return "", false
	}
	return d.GetDelta(), true
}

// sameSource reports whether two deltas come from the same run and model.
func sameSource(a, b loop.StreamEvent) bool {
	return a.RunID == b.RunID && a.ThreadID == b.ThreadID && a.Name == b.Name
}
