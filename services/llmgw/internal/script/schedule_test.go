package script

import (
	"testing"
	"time"
)

// TestScheduleDoesNotDrift: each piece is due delay after the previous
// one's due time, whenever the previous one went out, so a late timer or a
// slow receiver does not put the rest of the reply off.
func TestScheduleDoesNotDrift(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	s := schedule{next: t0, delay: 20 * ms}
	steps := []struct {
		now  time.Duration // when the piece before went out, after t0
		want time.Duration // how long the next one waits
	}{
		{0, 20 * ms},         // the first piece, at the start
		{21 * ms, 19 * ms},   // its timer fired 1 ms late: the next waits less
		{40 * ms, 20 * ms},   // on time
		{125 * ms, -45 * ms}, // the receiver held the piece: due 45 ms ago, at once
		{126 * ms, -26 * ms}, // still behind: at once
		{127 * ms, -7 * ms},
		{128 * ms, 12 * ms}, // back on the schedule: 140 ms
	}
	for i, st := range steps {
		if got := s.until(t0.Add(st.now)); got != st.want {
			t.Fatalf("piece %d at +%v: waits %v, want %v", i, st.now, got, st.want)
		}
	}
	if z := (schedule{next: t0}); z.until(t0.Add(ms)) > 0 {
		t.Fatal("no delay must never wait")
	}
}
