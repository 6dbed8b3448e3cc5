// Package aisdk serves the Vercel AI SDK's chat protocol: the request body
// of its DefaultChatTransport (a chat id and the UIMessage list) in, the UI
// message stream (Server-Sent Events of uiMessageChunkSchema chunks) out, so
// that `useChat` pointed at an agent drives it. The chat id is the Wick
// thread; runs, approvals and questions are the agent service's.
package aisdk

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// Defaults of the handler.
const (
	// DefaultUploadDir is the workspace directory file parts are written to,
	// one subdirectory per chat.
	DefaultUploadDir = "/workspace/uploads"
	// uploadChunk keeps each upload message far below gRPC's message limit.
	uploadChunk = 256 << 10
	// cancelTimeout bounds the cancel of a run whose client went away.
	cancelTimeout = 10 * time.Second
)

// StreamHeader is the response header by which the AI SDK recognises a UI
// message stream, and its version.
const (
	StreamHeader        = "x-vercel-ai-ui-message-stream"
	StreamHeaderVersion = "v1"
)

// Handler serves POST /ai-sdk/agents/{agent_id}/chat.
type Handler struct {
	client agentv1.AgentServiceClient
	log    *slog.Logger
}

// New returns the handler. client must carry the request's user (the
// gateway's authenticated agent client); log gets the full text of errors
// whose messages clients do not see.
func New(client agentv1.AgentServiceClient, log *slog.Logger) *Handler {
	return &Handler{client: client, log: log}
}

// chatRequest is DefaultChatTransport's body.
type chatRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
}

type uiMessage struct {
	ID       string    `json:"id"`
	Role     string    `json:"role"`
	Metadata *Metadata `json:"metadata"`
	Parts    []uiPart  `json:"parts"`
}

type uiPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	MediaType  string      `json:"mediaType"`
	Filename   string      `json:"filename"`
	URL        string      `json:"url"`
	ToolCallID string      `json:"toolCallId"`
	ToolName   string      `json:"toolName"`
	State      string      `json:"state"`
	Approval   *uiApproval `json:"approval"`
}

type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// ServeHTTP answers one chat request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httperr.Write(w, http.StatusMethodNotAllowed, codes.Unimplemented, r.Method+" is not supported; POST the chat's messages")
		return
	}
	agentID := r.PathValue("agent_id")
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			httperr.Write(w, http.StatusRequestEntityTooLarge, codes.ResourceExhausted, fmt.Sprintf("the body is larger than %d bytes", mbe.Limit))
			return
		}
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "the body is not a chat request: "+jsonProblem(err))
		return
	}
	if req.ID == "" {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "id (the chat id) is required")
		return
	}
	if req.Trigger == "regenerate-message" {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "regenerating a message is not supported: a Wick thread keeps every reply; send a new message instead")
		return
	}
	if len(req.Messages) == 0 {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "messages is empty")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "assistant":
		h.resumeApprovals(ctx, w, r, last)
	case "user":
		h.send(ctx, w, r, agentID, req)
	default:
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, fmt.Sprintf("the last message's role is %q; send a user message, or an assistant message with tool approval responses", last.Role))
	}
}

// send starts a run with the last user message, or answers the question the
// chat's run waits on with it.
func (h *Handler) send(ctx context.Context, w http.ResponseWriter, r *http.Request, agentID string, req chatRequest) {
	last := req.Messages[len(req.Messages)-1]
	text, err := h.userText(ctx, agentID, req.ID, last)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if strings.TrimSpace(text) == "" {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "the last user message has no text or file parts")
		return
	}
	if runID, callID := pendingQuestion(req.Messages); runID != "" {
		d := &agentv1.ApprovalDecision{ToolCallId: callID, Action: "answer", Message: text}
		h.resume(ctx, w, r, runID, []*agentv1.ApprovalDecision{d}, NewEncoder())
		return
	}
	stream, err := h.client.Stream(ctx, &agentv1.StreamRequest{
		AgentId:  agentID,
		ThreadId: req.ID,
		Messages: []*agentv1.Message{{Role: "user", Content: text}},
		// The response ends when the run waits for the user; the run must
		// not end with it. A client that goes away cancels it (serve).
		Background: true,
	})
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	h.serve(ctx, w, r, func() (*agentv1.StreamEvent, error) {
		m, err := stream.Recv()
		return m.GetEvent(), err
	}, NewEncoder(), "")
}

// resumeApprovals sends the approval responses of the assistant message's
// tool parts to its run and streams the rest of the run.
func (h *Handler) resumeApprovals(ctx context.Context, w http.ResponseWriter, r *http.Request, m uiMessage) {
	runID := m.Metadata.runID()
	var decisions []*agentv1.ApprovalDecision
	var calls, denied []string
	for _, p := range m.Parts {
		if p.State != "approval-responded" || p.Approval == nil || p.Approval.Approved == nil {
			continue
		}
		calls = append(calls, p.ToolCallID)
		d := &agentv1.ApprovalDecision{ToolCallId: p.ToolCallID, Action: "approve"}
		if !*p.Approval.Approved {
			d.Action, d.Message = "reject", p.Approval.Reason
			denied = append(denied, p.ToolCallID)
		}
		decisions = append(decisions, d)
	}
	if runID == "" || len(decisions) == 0 {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, "the last message is an assistant message without tool approval responses of a Wick run (metadata.runId)")
		return
	}
	enc := NewEncoder()
	enc.Continue(calls, denied)
	h.resume(ctx, w, r, runID, decisions, enc)
}

// resume decides what run waits on and streams the run from there.
func (h *Handler) resume(ctx context.Context, w http.ResponseWriter, r *http.Request, runID string, decisions []*agentv1.ApprovalDecision, enc *Encoder) {
	// The run waits: its last event is the interrupt, after which the
	// rest of the run follows.
	got, err := h.client.GetRun(ctx, &agentv1.GetRunRequest{RunId: runID})
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	run := got.GetRun()
	if _, err := h.client.ResumeRun(ctx, &agentv1.ResumeRunRequest{RunId: runID, Decisions: decisions}); err != nil {
		h.writeErr(w, r, err)
		return
	}
	stream, err := h.client.JoinRun(ctx, &agentv1.JoinRunRequest{RunId: runID, AfterEventId: run.GetLastEventId()})
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	h.serve(ctx, w, r, func() (*agentv1.StreamEvent, error) {
		m, err := stream.Recv()
		return m.GetEvent(), err
	}, enc, run.GetThreadId())
}

// serve writes the run's events as the UI message stream. The first event
// decides between a stream and an error answer (an unknown agent is a 404).
// threadID, for a re-joined run, opens the message at once: its
// on_run_start went out in an earlier response.
func (h *Handler) serve(ctx context.Context, w http.ResponseWriter, r *http.Request, recv func() (*agentv1.StreamEvent, error), enc *Encoder, threadID string) {
	ev, err := recv()
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set(StreamHeader, StreamHeaderVersion)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	runID := ev.GetRunId()
	var buf []byte
	write := func(chunks []Chunk) bool {
		buf = buf[:0]
		for _, c := range chunks {
			if buf, err = AppendFrame(buf, c); err != nil {
				h.log.ErrorContext(ctx, "encode UI message chunk", "type", c.Type, "error", err)
				return false
			}
		}
		if len(buf) == 0 {
			return true
		}
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if threadID != "" && !write(enc.Begin(runID, threadID)) {
		h.cancelRun(r, runID)
		return
	}
	for {
		chunks, last := enc.Event(ev)
		if !write(chunks) {
			h.cancelRun(r, runID)
			return
		}
		if last {
			_, _ = io.WriteString(w, doneFrame)
			_ = rc.Flush()
			return
		}
		ev, err = recv()
		if err != nil {
			if ctx.Err() != nil {
				h.cancelRun(r, runID)
				return
			}
			// Headers are gone: the error goes out as the protocol's error chunk.
			b := httperr.ForClient(ctx, h.log, status.Convert(err))
			write([]Chunk{{Type: "error", ErrorText: b.Message}})
			_, _ = io.WriteString(w, doneFrame)
			_ = rc.Flush()
			return
		}
	}
}

// cancelRun cancels the run of a client that went away: the run was
// started in the background only so that it can wait for the user between
// two requests.
func (h *Handler) cancelRun(r *http.Request, runID string) {
	if runID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), cancelTimeout)
	defer cancel()
	if _, err := h.client.CancelRun(ctx, &agentv1.CancelRunRequest{RunId: runID}); err != nil {
		h.log.WarnContext(ctx, "cancel the run of a chat client that went away", "run_id", runID, "error", err)
	}
}

func (h *Handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var ie inputError
	if errors.As(err, &ie) {
		httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, ie.msg)
		return
	}
	httperr.WriteStatus(w, r, h.log, err)
}

// inputError is a problem with the request's messages, said to the client.
type inputError struct{ msg string }

func (e inputError) Error() string { return e.msg }

// pendingQuestion returns the run and the ask_user call that the assistant
// message before the last user message waits on, if it does.
func pendingQuestion(msgs []uiMessage) (runID, callID string) {
	if len(msgs) < 2 {
		return "", ""
	}
	prev := msgs[len(msgs)-2]
	if prev.Role != "assistant" || prev.Metadata.runID() == "" {
		return "", ""
	}
	for _, p := range prev.Parts {
		if p.Type == "dynamic-tool" && p.ToolName == "ask_user" && p.State == "input-available" {
			return prev.Metadata.runID(), p.ToolCallID
		}
	}
	return "", ""
}

func (m *Metadata) runID() string {
	if m == nil {
		return ""
	}
	return m.RunID
}

// userText is the text a user message gives the agent: its text parts, and
// the workspace paths its file parts were written to.
func (h *Handler) userText(ctx context.Context, agentID, chatID string, m uiMessage) (string, error) {
	var text []string
	var files []string
	for i, p := range m.Parts {
		switch p.Type {
		case "text":
			text = append(text, p.Text)
		case "file":
			written, err := h.upload(ctx, agentID, chatID, i, p)
			if err != nil {
				return "", err
			}
			files = append(files, written)
		}
	}
	out := strings.Join(text, "\n")
	if len(files) > 0 {
		out += "\n\nAttached files (in the workspace): " + strings.Join(files, ", ")
	}
	return out, nil
}

// upload writes a file part (a data URL) into the agent's workspace and
// returns the path the agent reads it at.
func (h *Handler) upload(ctx context.Context, agentID, chatID string, i int, p uiPart) (string, error) {
	data, err := decodeDataURL(p.URL)
	if err != nil {
		return "", inputError{fmt.Sprintf("file part %d: %v", i, err)}
	}
	name := fileName(p.Filename, p.MediaType, i)
	stream, err := h.client.UploadFile(ctx)
	if err != nil {
		return "", err
	}
	header := &agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{
		AgentId: agentID, Path: path.Join(DefaultUploadDir, chatID, name),
	}}}
	if err := stream.Send(header); err != nil {
		_, err = stream.CloseAndRecv()
		return "", err
	}
	for len(data) > 0 {
		n := min(len(data), uploadChunk)
		if err := stream.Send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: data[:n]}}); err != nil {
			_, err = stream.CloseAndRecv()
			return "", err
		}
		data = data[n:]
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return "", err
	}
	return resp.GetPath(), nil
}

// decodeDataURL returns a data URL's bytes. Other URLs are refused: fetching
// a URL the client names would make the gateway a proxy into its network.
func decodeDataURL(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		if u, err := url.Parse(s); err == nil && u.Scheme != "" {
			return nil, fmt.Errorf("only data URLs are accepted, not %s URLs", u.Scheme)
		}
		return nil, errors.New("the url is not a data URL")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, errors.New("the data URL has no comma")
	}
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			return nil, errors.New("the data URL's base64 is malformed")
		}
		return b, nil
	}
	t, err := url.PathUnescape(payload)
	if err != nil {
		return nil, errors.New("the data URL's text is malformed")
	}
	return []byte(t), nil
}

// fileName is a safe base name for a file part: the client's name with
// anything but letters, digits, '.', '-' and '_' replaced, or one made from
// the part's index and media type.
func fileName(name, mediaType string, i int) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if out != "" {
		return out
	}
	out = fmt.Sprintf("file-%d", i+1)
	mt, _, _ := mime.ParseMediaType(mediaType)
	return out + extensions[mt]
}

// extensions name files of common media types; the system's MIME table
// differs between machines (text/plain may be .asc first).
var extensions = map[string]string{
	"text/plain": ".txt", "text/markdown": ".md", "text/csv": ".csv", "text/html": ".html",
	"application/json": ".json", "application/pdf": ".pdf",
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
}

// jsonProblem says what is wrong with a body without Go's type names.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q has the wrong type", typ.Field)
	case errors.Is(err, io.EOF):
		return "the body is empty"
	}
	return "unreadable JSON"
}
