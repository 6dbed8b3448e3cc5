package grpcedge

import (
	"strings"

	"google.golang.org/grpc/metadata"
)

// forwardable reports whether a metadata key crosses the edge. Dropped:
// HTTP/2 pseudo-headers and gRPC's reserved headers (the transports set
// their own), the client's credentials (they are for the edge, not the
// services), and every x-wick-* key: those carry the signed identity
// (platform/identity) and are set only by the suite's own processes.
func forwardable(key string) bool {
	switch {
	case key == "" || key[0] == ':':
		return false
	case strings.HasPrefix(key, "grpc-"), strings.HasPrefix(key, "x-wick-"):
		return false
	}
	switch key {
	case "authorization", "content-type", "user-agent", "te", "connection", "host", "cookie":
		return false
	}
	return true
}

// filter returns the forwardable part of md, or nil when nothing is left.
// Keys are lower case in metadata.MD already.
func filter(md metadata.MD) metadata.MD {
	var out metadata.MD
	for k, v := range md {
		if !forwardable(k) {
			continue
		}
		if out == nil {
			out = make(metadata.MD, len(md))
		}
		out[k] = v
	}
	return out
}
