package ids

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in string
		ok bool
	}{
		{"default", true}, {"a-b_C9", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"a b", false}, {"../x", false}, {"a:b", false}, {"é", false}, {"a{b}", false},
	}
	for _, tc := range cases {
		err := Check("agent_id", tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "agent_id") {
			t.Errorf("error %q does not name the field", err)
		}
	}
	a, b := New("th_"), New("th_")
	if a == b || !strings.HasPrefix(a, "th_") || !Valid(a) {
		t.Fatalf("New = %q, %q", a, b)
	}
}
