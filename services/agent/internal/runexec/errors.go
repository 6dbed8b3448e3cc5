package runexec

import (
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
	"github.com/wick-agent/wick/services/agent/internal/ids"
)

// Errors, each with the status code a client sees for it. A busy thread is threads.ErrBusy
// (wrapped with the thread's id); a lost lease is threads.ErrLeaseLost.
var (
	// ErrInvalid marks input the caller must change; the message names the field.
	ErrInvalid = errcode.New(codes.InvalidArgument, "invalid argument")
	// ErrNotFound marks a run or an agent the caller cannot see.
	ErrNotFound = errcode.New(codes.NotFound, "not found")
	// ErrNotWaiting means decisions came for a run that is not waiting for approval.
	ErrNotWaiting = errcode.New(codes.FailedPrecondition, "not waiting for approval")
	// ErrNotRunning means a graceful stop came for a run that is not running.
	ErrNotRunning = errcode.New(codes.FailedPrecondition, "the run is not running")
	// ErrNotStopped means a continue came for a run that is not stopped, or
	// whose thread moved on since it stopped.
	ErrNotStopped = errcode.New(codes.FailedPrecondition, "the run cannot be continued")
	// ErrShutdown means the executor is closing: try another replica.
	ErrShutdown = errcode.New(codes.Unavailable, "the agent service is shutting down")
	// ErrStoreUnavailable means the run's event log (Redis, when shared)
	// could not be reached, so the run was stopped: a run nobody can follow
	// must not go on. The thread keeps what was saved before.
	ErrStoreUnavailable = errcode.New(codes.Unavailable, "the run store is unreachable")
)

// unloggedMessage is the data.message of the error event, and the error of
// the record, of a run stopped because its events could not be logged. The
// store's own error (its address, among others) goes to the service's log
// only.
var unloggedMessage = ErrStoreUnavailable.Error() + ": the run was stopped, as its events could not be logged"

// CodeLimit is the data.code of a run's error event when the run failed on
// a per-user or per-thread limit (quota.ErrExceeded).
const CodeLimit = "resource_exhausted"

// lostMessage and codeLost are the data of the error event of a run whose
// replica stopped while it ran.
const (
	lostMessage = "the replica running this run stopped; every completed tool round is saved in the thread"
	codeLost    = "lost"
)

// CodeUnavailable is the data.code of a run's error event when a dependency
// the run needed (the LLM gateway, the model's provider) did not answer.
const CodeUnavailable = "unavailable"

// Causes of a run's cancellation besides ErrShutdown.
var (
	errCancelRequested = errors.New("run was cancelled")
	errClientGone      = errors.New("the client went away")
	errApprovalTimeout = errors.New("no approval decision came in time")
)

// inputError is an ErrInvalid whose message is only what the caller must
// fix, naming the field.
type inputError struct{ msg string }

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == ErrInvalid }

// Code is ErrInvalid's code, since the error matches it without wrapping it.
func (e *inputError) Code() codes.Code { return codes.InvalidArgument }

func invalid(field, why string) error { return &inputError{msg: field + ": " + why} }

// checkID validates a client-chosen id, naming the field.
func checkID(field, v string) error {
	if err := ids.Check(field, v); err != nil {
		return &inputError{msg: err.Error()}
	}
	return nil
}
