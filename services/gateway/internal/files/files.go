// Package files serves a workspace file's raw bytes over HTTP, streamed both
// ways through the agent service's DownloadFile and UploadFile streams.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// Defaults of the file endpoints.
const (
	DefaultMaxUploadBytes = 100 << 20
	// DefaultChunkBytes keeps each upload message far below the 16 MiB gRPC limit.
	DefaultChunkBytes = 256 << 10
)

// Handler serves GET and PUT on a file path; the agent id and the path come
// from the route's {agent_id} and {path...} wildcards.
type Handler struct {
	client     agentv1.AgentServiceClient
	log        *slog.Logger
	maxUpload  int64
	chunkBytes int
}

// New returns the handler. maxUpload bounds an upload's size; chunkBytes is
// the size of each upload message; log gets the full text of errors whose
// messages clients do not see (httperr.ForClient).
func New(client agentv1.AgentServiceClient, maxUpload int64, chunkBytes int, log *slog.Logger) *Handler {
	if maxUpload <= 0 {
		maxUpload = DefaultMaxUploadBytes
	}
	if chunkBytes <= 0 {
		chunkBytes = DefaultChunkBytes
	}
	return &Handler{client: client, log: log, maxUpload: maxUpload, chunkBytes: chunkBytes}
}

// filePath returns the agent-facing path: the URL path after files/raw/
// made absolute.
func filePath(r *http.Request) (string, error) {
	p := r.PathValue("path")
	if p == "" {
		return "", errors.New("file path is empty")
	}
	return "/" + strings.TrimPrefix(p, "/"), nil
}

// ServeHTTP dispatches on the method.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.download(w, r)
	case http.MethodPut:
		h.upload(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		httperr.Write(w, http.StatusMethodNotAllowed, codes.Unimplemented, r.Method+" is not supported on raw files; use GET or PUT")
	}
}

func (h *Handler) download(w http.ResponseWriter, r *http.Request) {
	p, err := filePath(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream, err := h.client.DownloadFile(ctx, &agentv1.DownloadFileRequest{AgentId: r.PathValue("agent_id"), Path: p})
	if err != nil {
		httperr.WriteStatus(w, r, h.log, err)
		return
	}
	// The first message says whether the file exists; only then do headers go out.
	first, err := stream.Recv()
	if err != nil && !errors.Is(err, io.EOF) {
		httperr.WriteStatus(w, r, h.log, err)
		return
	}
	hdr := w.Header()
	// User content is never rendered by the browser on the API's origin.
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", path.Base(p)))
	if first != nil && first.GetSize() > 0 {
		hdr.Set("Content-Length", strconv.FormatInt(first.GetSize(), 10))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead || first == nil {
		return
	}
	if _, err := w.Write(first.GetData()); err != nil {
		return
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if r.Context().Err() != nil {
				return // the client went away: nobody to tell
			}
			// Headers are gone; cutting the connection short of Content-Length
			// is how the client learns the download failed.
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(msg.GetData()); err != nil {
			return
		}
	}
}

func (h *Handler) upload(w http.ResponseWriter, r *http.Request) {
	p, err := filePath(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}
	if r.ContentLength > h.maxUpload {
		tooLarge(w, h.maxUpload)
		return
	}
	body := http.MaxBytesReader(w, r.Body, h.maxUpload)
	// Cancelling the stream before CloseSend makes the service drop what it
	// received: the file is written only when an upload completes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stream, err := h.client.UploadFile(ctx)
	if err != nil {
		httperr.WriteStatus(w, r, h.log, err)
		return
	}
	header := &agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: r.PathValue("agent_id"), Path: p}}}
	if err := stream.Send(header); err != nil {
		h.finish(w, r, stream, cancel)
		return
	}
	buf := make([]byte, h.chunkBytes)
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			chunk := &agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: append([]byte(nil), buf[:n]...)}}
			if err := stream.Send(chunk); err != nil {
				// The service ended the stream; its status says why.
				h.finish(w, r, stream, cancel)
				return
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			cancel()
			var mbe *http.MaxBytesError
			if errors.As(rerr, &mbe) {
				tooLarge(w, h.maxUpload)
				return
			}
			httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "read request body: "+rerr.Error())
			return
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		httperr.WriteStatus(w, r, h.log, err)
		return
	}
	// The same JSON as every other REST answer (proto names; int64 as a string).
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
	if err != nil {
		httperr.WriteStatus(w, r, h.log, status.Error(codes.Internal, "encode upload answer: "+err.Error()))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

// finish reports the status the service ended an upload with.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, stream agentv1.AgentService_UploadFileClient, cancel context.CancelFunc) {
	_, err := stream.CloseAndRecv()
	cancel()
	if err == nil {
		err = errors.New("upload ended early")
	}
	httperr.WriteStatus(w, r, h.log, err)
}

func tooLarge(w http.ResponseWriter, limit int64) {
	httperr.Write(w, http.StatusRequestEntityTooLarge, codes.ResourceExhausted,
		fmt.Sprintf("upload is larger than the limit of %d bytes", limit))
}
