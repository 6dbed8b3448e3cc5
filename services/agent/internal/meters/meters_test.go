package meters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyErr is an error reply of the server, as go-redis returns it.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestIsRedisError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"missing key", fmt.Errorf("get thread: %w", redis.Nil), false},
		{"lost transaction", redis.TxFailedErr, false},
		{"cancelled by the caller", fmt.Errorf("save: %w", context.Canceled), false},
		{"the store's own refusal", errors.New("thread t1 not found"), false},
		{"connection refused", fmt.Errorf("save: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), true},
		{"error reply", fmt.Errorf("append: %w", replyErr("OOM command not allowed")), true},
		{"closed client", redis.ErrClosed, true},
		{"pool exhausted", redis.ErrPoolTimeout, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := IsRedisError(c.err); got != c.want {
				t.Fatalf("IsRedisError(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}
