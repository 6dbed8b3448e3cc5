package wickfs

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/platform/errcode"
)

// Sentinel errors. Every error an implementation returns wraps at most one of
// them, so callers can classify it with errors.Is while the message still
// names the path and the problem; each carries the status code a client sees
// for it (errcode).
var (
	// ErrNotFound: the file or directory does not exist.
	ErrNotFound = errcode.New(codes.NotFound, "no such file or directory")
	// ErrOutsideWorkspace: the path, or a symlink on it, leads out of the workspace root.
	ErrOutsideWorkspace = errcode.New(codes.PermissionDenied, "path is outside the workspace")
	// ErrPermission: the operating system refused the operation.
	ErrPermission = errcode.New(codes.PermissionDenied, "permission denied")
	// ErrInvalidArgument: the request itself is wrong (bad pattern, empty
	// old_text, a directory given as a file, text not found, ...).
	ErrInvalidArgument = errcode.New(codes.InvalidArgument, "invalid argument")
	// ErrTooLarge: a size limit was exceeded, or the workspace is full;
	// nothing was written.
	ErrTooLarge = errcode.New(codes.ResourceExhausted, "size limit exceeded")
)

// errNoSpace is a write that found the workspace's file system full. It is
// an ErrTooLarge, as the file would not fit; an atomic write leaves the old
// file as it was.
var errNoSpace = &detailError{msg: "no space left on device: the workspace is full; the file was not changed", kind: ErrTooLarge}

// errNameTooLong is a path the file system refused as too long, one that
// passed checkLength (a file system with shorter names than MaxNameBytes).
var errNameTooLong = &detailError{msg: "file name too long for the workspace's file system", kind: ErrInvalidArgument}

// errReadOnly is a write into a read-only mount of the workspace (the
// skills library): the operating system's permission refusal, said plainly.
var errReadOnly = &detailError{msg: "read-only file system: files here cannot be changed; write elsewhere in the workspace", kind: ErrPermission}

// classify maps an error from the os package onto the sentinels; anything it
// does not recognise is returned as is.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotFound
	case isEscape(err):
		return ErrOutsideWorkspace
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	case errors.Is(err, syscall.EROFS):
		return errReadOnly
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return errNoSpace
	case errors.Is(err, syscall.ENAMETOOLONG):
		return errNameTooLong
	}
	return nil
}

// isEscape recognises os.Root's refusal of a path that leaves the root. The
// os package does not export that error, so its message is the only handle.
func isEscape(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return strings.Contains(err.Error(), "path escapes from parent")
}

// opError builds the error of operation op on agent-facing path p: the sentinel
// the cause maps to (so errors.Is works) and the cause's own text only when it
// says more than the sentinel.
func opError(op, p string, err error) error {
	if s := classify(err); s != nil {
		return &PathError{Op: op, Path: p, Err: s}
	}
	return &PathError{Op: op, Path: p, Err: err}
}

// PathError is an operation's failure on an agent-facing path. Its message
// never shows the host path the workspace maps onto.
type PathError struct {
	Op   string
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }

func (e *PathError) Unwrap() error { return e.Err }

// invalid returns an ErrInvalidArgument with msg.
func invalid(msg string) error { return &detailError{msg: msg, kind: ErrInvalidArgument} }

// tooLarge returns an ErrTooLarge with msg.
func tooLarge(msg string) error { return &detailError{msg: msg, kind: ErrTooLarge} }

// detailError carries a precise message and a sentinel kind.
type detailError struct {
	msg  string
	kind error
}

func (e *detailError) Error() string { return e.msg }

func (e *detailError) Unwrap() error { return e.kind }

// NewError returns an error with message msg that matches kind under
// errors.Is; clients of remote implementations use it to rebuild errors.
func NewError(kind error, msg string) error { return &detailError{msg: msg, kind: kind} }
