// Package errcode gives an error the gRPC code a client sees for it, declared
// where the error is rather than in a table at the RPC edge. It follows
// connect-go's *connect.Error: a sentinel is declared with its code,
// errors.Is keeps matching it, and wrapping it with %w keeps the code.
//
//	var ErrNotFound = errcode.New(codes.NotFound, "thread not found")
//	…
//	return fmt.Errorf("load thread %s: %w", id, ErrNotFound) // still NotFound
//
// The package imports nothing but the code type, so the lowest layers
// (wickfs, the daemon's process table) declare their sentinels with it too.
package errcode

import (
	"errors"

	"google.golang.org/grpc/codes"
)

// Error is an error with the code a client sees for it.
type Error struct {
	code codes.Code
	err  error
}

// New returns an error with code c and text msg: the way to declare a
// package-level sentinel.
func New(c codes.Code, msg string) error { return &Error{code: c, err: errors.New(msg)} }

// Wrap returns err with code c (and err's text), or nil when err is nil. The
// outer code wins over any code err already carries.
func Wrap(c codes.Code, err error) error {
	if err == nil {
		return nil
	}
	return &Error{code: c, err: err}
}

func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the error Wrap was given (for New, an error with the text).
func (e *Error) Unwrap() error { return e.err }

// Code is the code a client sees for the error.
func (e *Error) Code() codes.Code { return e.code }

// Coder is an error that knows its code. *Error is one; a domain error type
// that carries more (a provider failure and its kind) may be another.
type Coder interface {
	error
	Code() codes.Code
}

// Of returns the code of the first error in err's tree that has one, in the
// order errors.As searches it (an error before what it wraps, the operands
// of fmt.Errorf("%w: %w") left to right); ok is false when none has.
func Of(err error) (c codes.Code, ok bool) {
	var coder Coder
	if errors.As(err, &coder) {
		return coder.Code(), true
	}
	return codes.Unknown, false
}
