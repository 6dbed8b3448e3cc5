package agent

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	sandboxv1 "github.com/wick-agent/wick/gen/wick/sandbox/v1"
	"github.com/wick-agent/wick/platform/backend"
	"github.com/wick-agent/wick/services/agent/internal/registry"
	"github.com/wick-agent/wick/services/agent/internal/sandboxfs"
)

// fsFor returns the caller's agent's sandbox file system, the sandbox
// created if need be.
func (s *Service) fsFor(ctx context.Context, agentID string) (*sandboxfs.FS, *registry.Entry, error) {
	return s.fsForReads(ctx, agentID, s.cfg.maxTextFile)
}

// fsForReads is fsFor with reads bounded by maxRead bytes.
func (s *Service) fsForReads(ctx context.Context, agentID string, maxRead int64) (*sandboxfs.FS, *registry.Entry, error) {
	_, e, err := s.agentFor(ctx, agentID)
	if err != nil {
		return nil, nil, err
	}
	if e.Config.Backend == nil {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "agent %s has no backend, so no files", e.ID)
	}
	fs := sandboxfs.New(s.sandbox, e.ID, sandboxfs.Spec(e.Config.SandboxBackend()), sandboxfs.WithMaxReadBytes(maxRead))
	if err := fs.Ensure(ctx); err != nil {
		return nil, nil, rpcErr(ctx, err)
	}
	return fs, e, nil
}

func requirePath(p string) error {
	if p == "" {
		return invalid("path", "required")
	}
	if len(p) > 4096 {
		return invalid("path", "longer than 4096 bytes")
	}
	return nil
}

// ListFiles implements agentv1.AgentServiceServer.
func (s *Service) ListFiles(ctx context.Context, req *agentv1.ListFilesRequest) (*agentv1.ListFilesResponse, error) {
	fs, e, err := s.fsFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	path := req.GetPath()
	if path == "" {
		path = workdir(e)
	}
	entries, err := fs.Ls(ctx, path)
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	out := &agentv1.ListFilesResponse{}
	for _, en := range entries {
		out.Entries = append(out.Entries, &agentv1.FileEntry{Name: en.Name, Type: en.Type, Size: en.Size})
	}
	return out, nil
}

func workdir(e *registry.Entry) string {
	if w := e.Config.Backend.Workdir; w != "" && e.Config.Backend.Type == backend.Docker {
		return w
	}
	return sandboxfs.DefaultWorkdir
}

// ReadFile implements agentv1.AgentServiceServer.
func (s *Service) ReadFile(ctx context.Context, req *agentv1.ReadFileRequest) (*agentv1.ReadFileResponse, error) {
	if err := requirePath(req.GetPath()); err != nil {
		return nil, err
	}
	fs, _, err := s.fsFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	content, err := fs.ReadFile(ctx, req.GetPath())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.ReadFileResponse{Path: req.GetPath(), Content: content}, nil
}

// WriteFile implements agentv1.AgentServiceServer.
func (s *Service) WriteFile(ctx context.Context, req *agentv1.WriteFileRequest) (*agentv1.WriteFileResponse, error) {
	if err := requirePath(req.GetPath()); err != nil {
		return nil, err
	}
	if int64(len(req.GetContent())) > s.cfg.maxTextFile {
		return nil, status.Errorf(codes.ResourceExhausted, "content is larger than %d bytes; use UploadFile", s.cfg.maxTextFile)
	}
	fs, _, err := s.fsFor(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	res, err := fs.WriteFile(ctx, req.GetPath(), req.GetContent())
	if err != nil {
		return nil, rpcErr(ctx, err)
	}
	return &agentv1.WriteFileResponse{Path: req.GetPath(), BytesWritten: int64(res.BytesWritten)}, nil
}

// DownloadFile implements agentv1.AgentServiceServer.
func (s *Service) DownloadFile(req *agentv1.DownloadFileRequest, stream agentv1.AgentService_DownloadFileServer) error {
	ctx := stream.Context()
	if err := requirePath(req.GetPath()); err != nil {
		return err
	}
	_, e, err := s.fsFor(ctx, req.GetAgentId())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, err := s.sandbox.ReadFile(ctx, &sandboxv1.ReadFileRequest{AgentId: e.ID, Path: req.GetPath()})
	if err != nil {
		return rpcErr(ctx, fmt.Errorf("read %s: %w", req.GetPath(), err))
	}
	var sent int64
	first := true
	for {
		msg, err := src.Recv()
		if errors.Is(err, io.EOF) {
			if first { // an empty file still answers once, with its size
				return stream.Send(&agentv1.DownloadFileResponse{})
			}
			return nil
		}
		if err != nil {
			return rpcErr(ctx, fmt.Errorf("read %s: %w", req.GetPath(), err))
		}
		if first && msg.GetSize() > s.cfg.maxTransfer {
			return status.Errorf(codes.ResourceExhausted, "%s is %d bytes, more than the download limit of %d", req.GetPath(), msg.GetSize(), s.cfg.maxTransfer)
		}
		sent += int64(len(msg.GetData()))
		if sent > s.cfg.maxTransfer {
			return status.Errorf(codes.ResourceExhausted, "%s is larger than the download limit of %d bytes", req.GetPath(), s.cfg.maxTransfer)
		}
		out := &agentv1.DownloadFileResponse{Data: msg.GetData()}
		if first {
			out.Size = msg.GetSize()
			first = false
		}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

// uploadReader reads an upload's data messages.
type uploadReader struct {
	stream agentv1.AgentService_UploadFileServer
	buf    []byte
}

func (u *uploadReader) Read(p []byte) (int, error) {
	for len(u.buf) == 0 {
		msg, err := u.stream.Recv()
		if err != nil {
			return 0, err // io.EOF ends the upload
		}
		d, ok := msg.GetMsg().(*agentv1.UploadFileRequest_Data)
		if !ok {
			return 0, invalid("msg", "only data may follow the header")
		}
		u.buf = d.Data
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}

// UploadFile implements agentv1.AgentServiceServer.
func (s *Service) UploadFile(stream agentv1.AgentService_UploadFileServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return invalid("header", "an upload starts with a header")
		}
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return invalid("header", "an upload starts with a header")
	}
	if err := requirePath(h.GetPath()); err != nil {
		return err
	}
	fs, _, err := s.fsFor(ctx, h.GetAgentId())
	if err != nil {
		return err
	}
	n, err := fs.Write(ctx, h.GetPath(), &uploadReader{stream: stream}, s.cfg.maxTransfer)
	if err != nil {
		return rpcErr(ctx, err)
	}
	return stream.SendAndClose(&agentv1.UploadFileResponse{Path: h.GetPath(), BytesWritten: n})
}

// Terminal implements agentv1.AgentServiceServer: a bridge to the sandbox's
// terminal that ends when either side does.
func (s *Service) Terminal(stream agentv1.AgentService_TerminalServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return invalid("start", "a terminal session starts with start")
		}
		return err
	}
	start := first.GetStart()
	if start == nil {
		return invalid("start", "a terminal session starts with start")
	}
	_, e, err := s.fsFor(ctx, start.GetAgentId())
	if err != nil {
		return err
	}
	up, err := s.sandbox.Terminal(ctx)
	if err != nil {
		return rpcErr(ctx, fmt.Errorf("open terminal: %w", err))
	}
	if err := up.Send(&sandboxv1.TerminalRequest{Msg: &sandboxv1.TerminalRequest_Start{Start: &sandboxv1.TerminalStart{
		AgentId: e.ID, Size: termSize(start.GetSize()),
	}}}); err != nil {
		return rpcErr(ctx, fmt.Errorf("open terminal: %w", err))
	}
	go func() {
		defer func() { _ = up.CloseSend() }()
		for {
			msg, err := stream.Recv()
			if err != nil {
				return // client closed or went away; closing our side ends the shell
			}
			var out *sandboxv1.TerminalRequest
			switch m := msg.GetMsg().(type) {
			case *agentv1.TerminalRequest_Input:
				out = &sandboxv1.TerminalRequest{Msg: &sandboxv1.TerminalRequest_Input{Input: m.Input}}
			case *agentv1.TerminalRequest_Resize:
				out = &sandboxv1.TerminalRequest{Msg: &sandboxv1.TerminalRequest_Resize{Resize: termSize(m.Resize)}}
			default:
				continue
			}
			if err := up.Send(out); err != nil {
				return
			}
		}
	}()
	for {
		msg, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return rpcErr(ctx, fmt.Errorf("terminal: %w", err))
		}
		switch m := msg.GetMsg().(type) {
		case *sandboxv1.TerminalResponse_Output:
			err = stream.Send(&agentv1.TerminalResponse{Msg: &agentv1.TerminalResponse_Output{Output: m.Output}})
		case *sandboxv1.TerminalResponse_Exit:
			return stream.Send(&agentv1.TerminalResponse{Msg: &agentv1.TerminalResponse_ExitCode{ExitCode: m.Exit.GetExitCode()}})
		}
		if err != nil {
			return err
		}
	}
}

func termSize(t *agentv1.TerminalSize) *sandboxv1.TerminalSize {
	if t == nil {
		return nil
	}
	return &sandboxv1.TerminalSize{Rows: t.GetRows(), Cols: t.GetCols()}
}
