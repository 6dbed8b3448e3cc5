// Package rpcstatus gives errors the messages their gRPC statuses carry to
// clients. An error that wraps a status error prints it as "rpc error: code
// = NotFound desc = …"; a service that puts that text into its own status
// hands its client a nested, Go-specific rendering whose code contradicts
// nothing but says nothing either. The code travels in the status; the
// message keeps only the words.
package rpcstatus

import (
	"errors"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// statusPrefix is how grpc-go prints a status error before its message.
var statusPrefix = regexp.MustCompile(`rpc error: code = [A-Za-z]+ desc = `)

// Clean returns msg without the "rpc error: code = … desc = " of every
// status error printed into it, at any depth.
func Clean(msg string) string {
	if !strings.Contains(msg, "rpc error: ") {
		return msg
	}
	return statusPrefix.ReplaceAllLiteralString(msg, "")
}

// Message is err's text for a status message: Clean(err.Error()).
func Message(err error) string { return Clean(err.Error()) }

// Error returns a status error with code c and err's text as its message
// (Message).
func Error(c codes.Code, err error) error { return status.Error(c, Message(err)) }

// Plain returns err, a status error, with its message cleaned and its code
// and details kept; anything else is returned as is.
func Plain(err error) error {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return err
	}
	p := status.Convert(err).Proto()
	p.Message = Clean(p.GetMessage())
	return status.ErrorProto(p)
}
