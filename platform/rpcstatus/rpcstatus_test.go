package rpcstatus_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/wick-agent/wick/platform/rpcstatus"
)

func TestMessageTakesNestedStatusTextOut(t *testing.T) {
	inner := status.Error(codes.NotFound, "open /workspace/x: no such file or directory")
	twice := status.Error(codes.NotFound, fmt.Errorf("read /workspace/x: %w", inner).Error())
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", errors.New("path: not valid UTF-8"), "path: not valid UTF-8"},
		{"status", inner, "open /workspace/x: no such file or directory"},
		{"wrapped", fmt.Errorf("read /workspace/x: %w", inner), "read /workspace/x: open /workspace/x: no such file or directory"},
		{"nested twice", fmt.Errorf("download: %w", twice), "download: read /workspace/x: open /workspace/x: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rpcstatus.Message(tc.err); got != tc.want {
				t.Fatalf("Message = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlainKeepsCodeAndDetails(t *testing.T) {
	st, err := status.New(codes.FailedPrecondition, "ensure: rpc error: code = FailedPrecondition desc = sandbox is stopped").
		WithDetails(durationpb.New(1))
	if err != nil {
		t.Fatal(err)
	}
	got := status.Convert(rpcstatus.Plain(fmt.Errorf("call: %w", st.Err())))
	if got.Code() != codes.FailedPrecondition || got.Message() != "call: ensure: sandbox is stopped" || len(got.Details()) != 1 {
		t.Fatalf("Plain = %v %q %v", got.Code(), got.Message(), got.Details())
	}
	plain := errors.New("no status")
	if rpcstatus.Plain(plain) != plain {
		t.Fatal("Plain changed an error without a status")
	}
}
