package errcode_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

func TestOf(t *testing.T) {
	t.Parallel()
	errBusy := errcode.New(codes.FailedPrecondition, "thread is busy")
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		ok   bool
	}{
		{"sentinel", errBusy, codes.FailedPrecondition, true},
		{"wrapped", fmt.Errorf("run: %w", fmt.Errorf("lock: %w", errBusy)), codes.FailedPrecondition, true},
		{"joined", errors.Join(errors.New("first"), errBusy), codes.FailedPrecondition, true},
		{"Wrap", errcode.Wrap(codes.Aborted, errors.New("lease lost")), codes.Aborted, true},
		{"Wrap over a code", errcode.Wrap(codes.Internal, errBusy), codes.Internal, true},
		{"none", fmt.Errorf("run: %w", errors.New("boom")), codes.Unknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := errcode.Of(tc.err); c != tc.code || ok != tc.ok {
				t.Fatalf("Of = %v, %v; want %v, %v", c, ok, tc.code, tc.ok)
			}
		})
	}
	if errcode.Wrap(codes.Internal, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if err := errcode.Wrap(codes.Internal, errBusy); !errors.Is(err, errBusy) || err.Error() != "thread is busy" {
		t.Errorf("Wrap = %q, lost the wrapped error", err)
	}
}
