package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	daemonv1 "github.com/wick-agent/wick/gen/wick/daemon/v1"
	"github.com/wick-agent/wick/platform/rpcstatus"
)

// ReadFile streams a file in chunks, or a window of its lines.
func (s *Server) ReadFile(req *daemonv1.ReadFileRequest, stream grpc.ServerStreamingServer[daemonv1.ReadFileResponse]) error {
	if req.GetOffset() < 0 || req.GetLimit() < 0 {
		return invalidf("offset (%d) and limit (%d) must not be negative", req.GetOffset(), req.GetLimit())
	}
	f, st, err := s.fs.OpenRead(req.GetPath())
	if err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	defer f.Close()
	first := &daemonv1.ReadFileResponse{Size: st.Size(), Mode: uint32(st.Mode().Perm())}
	if req.GetOffset() > 0 || req.GetLimit() > 0 {
		return s.readLines(req, stream, first)
	}
	buf := make([]byte, s.cfg.chunkSize)
	msg := first
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 || msg == first {
			msg.Data = buf[:n]
			// Send marshals before it returns, so buf can be reused.
			if err := stream.Send(msg); err != nil {
				return err
			}
			msg = &daemonv1.ReadFileResponse{}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			return nil
		}
		if rerr != nil {
			return rpcstatus.FromError(stream.Context(), fmt.Errorf("read %s: %w", req.GetPath(), rerr))
		}
	}
}

// readLines sends a window of lines, each followed by "\n".
func (s *Server) readLines(req *daemonv1.ReadFileRequest, stream grpc.ServerStreamingServer[daemonv1.ReadFileResponse], first *daemonv1.ReadFileResponse) error {
	limit := req.GetLimit()
	if limit == 0 || limit > math.MaxInt32 {
		limit = math.MaxInt32 // "the rest of the file", bounded by the read limit
	}
	offset := req.GetOffset()
	if offset > math.MaxInt32 {
		offset = math.MaxInt32
	}
	res, err := s.fs.ReadLines(stream.Context(), req.GetPath(), int(offset), int(limit))
	if err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	var chunk []byte
	msg := first
	flush := func(last bool) error {
		msg.Data = chunk
		if last {
			msg.MoreLines = res.MoreLines
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
		msg = &daemonv1.ReadFileResponse{}
		chunk = chunk[:0]
		return nil
	}
	for _, line := range res.Lines {
		chunk = append(chunk, line...)
		chunk = append(chunk, '\n')
		if len(chunk) >= s.cfg.chunkSize {
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	return flush(true)
}

// WriteFile receives a header and chunks and replaces the file atomically
// when the upload is complete; a cancelled or oversized upload leaves the old
// file as it was.
func (s *Server) WriteFile(stream grpc.ClientStreamingServer[daemonv1.WriteFileRequest, daemonv1.WriteFileResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return invalidf("WriteFile needs a header message first")
		}
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return invalidf("the first WriteFile message must be the header")
	}
	if h.GetMode() > 0o777 {
		return invalidf("mode %#o has bits beyond the permission bits", h.GetMode())
	}
	w, err := s.fs.CreateAtomic(h.GetPath(), fs.FileMode(h.GetMode()))
	if err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	committed := false
	defer func() {
		if !committed {
			w.Abort()
		}
	}()
	// Disk writes run beside the receiving, a few chunks behind it, so the
	// upload costs about the slower of the two rather than their sum. Each
	// received message owns its data, so handing it over is safe.
	writes := make(chan []byte, 4)
	written := make(chan error, 1)
	go func() {
		var err error
		for b := range writes {
			if err == nil {
				_, err = w.Write(b)
			}
		}
		written <- err
	}()
	n, err := s.receiveChunks(stream, w.Path(), writes)
	close(writes)
	if werr := <-written; err == nil && werr != nil {
		err = rpcstatus.FromError(stream.Context(), werr)
	}
	if err != nil {
		return err
	}
	if err := stream.Context().Err(); err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	committed = true // Commit cleans up after itself on failure
	if err := w.Commit(); err != nil {
		return rpcstatus.FromError(stream.Context(), err)
	}
	return stream.SendAndClose(&daemonv1.WriteFileResponse{Path: w.Path(), BytesWritten: n})
}

// receiveChunks passes the upload's data messages to writes and returns the
// byte count once the client has sent everything.
func (s *Server) receiveChunks(stream grpc.ClientStreamingServer[daemonv1.WriteFileRequest, daemonv1.WriteFileResponse], path string, writes chan<- []byte) (int64, error) {
	var n int64
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if req.GetHeader() != nil {
			return n, invalidf("WriteFile got a second header")
		}
		data := req.GetData()
		n += int64(len(data))
		if n > s.cfg.maxWriteBytes {
			return n, status.Errorf(codes.ResourceExhausted, "write %s: upload is more than the %d-byte limit; nothing was written", path, s.cfg.maxWriteBytes)
		}
		if len(data) > 0 {
			writes <- data
		}
	}
}
