package agent

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Invalid UTF-8 cannot cross the gRPC client (protobuf refuses to marshal
// it), so checkTitle is tested directly for it.
func TestCheckTitle(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{" Plan ", "Plan"},
		{"Ünïcode ✓", "Ünïcode ✓"},
		{"bad \xff byte", ""},
		{"tab\there", ""},
		{"\u2028", ""}, // a line separator trims to nothing
		{"del\x7f", ""},
	} {
		got, err := checkTitle(c.in)
		if c.want != "" {
			if err != nil || got != c.want {
				t.Errorf("checkTitle(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), "title: ") {
			t.Errorf("checkTitle(%q) = %q, %v; want InvalidArgument naming title", c.in, got, err)
		}
	}
}
