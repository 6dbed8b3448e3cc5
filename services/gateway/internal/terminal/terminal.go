// Package terminal bridges a browser WebSocket to the agent service's
// Terminal stream: binary frames carry terminal bytes both ways, and a text
// frame {"type":"resize","rows":R,"cols":C} resizes the terminal.
package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

// Defaults of a terminal session.
const (
	DefaultRows      = 24
	DefaultCols      = 80
	DefaultReadLimit = 64 << 10
	// maxCloseReason is what fits in a close frame (125 bytes less the code).
	maxCloseReason = 120
)

// Control is a text frame from the client, or the exit notice sent to it.
type Control struct {
	// Type is "resize" or "input" from the client, "exit" from the server.
	Type string `json:"type"`
	// Rows and Cols are the new size of a resize.
	Rows uint32 `json:"rows,omitempty"`
	Cols uint32 `json:"cols,omitempty"`
	// Data is the text of an "input" frame (xterm.js sends strings).
	Data string `json:"data,omitempty"`
	// Code is the shell's exit code in an "exit" frame.
	Code *int32 `json:"code,omitempty"`
}

// Handler serves the terminal WebSocket of the agent named by the route's
// {agent_id}.
type Handler struct {
	client    agentv1.AgentServiceClient
	origins   []string
	anyOrigin bool
	readLimit int64
	logger    *slog.Logger
}

// New returns the handler. origins are the allowed cross-site origins
// ("https://app.example.com"; "*" allows any); same-origin pages are always
// allowed.
func New(client agentv1.AgentServiceClient, origins []string, readLimit int64, logger *slog.Logger) *Handler {
	h := &Handler{client: client, readLimit: readLimit, logger: logger}
	if h.readLimit <= 0 {
		h.readLimit = DefaultReadLimit
	}
	for _, o := range origins {
		if o == "*" {
			h.anyOrigin = true
		}
		h.origins = append(h.origins, o)
	}
	return h
}

func sizeParam(r *http.Request, name string, def uint32) (uint32, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s must be a number from 1 to 65535", name)
	}
	return uint32(n), nil
}

// ServeHTTP upgrades the request and bridges it until either side ends.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	agentID := r.PathValue("agent_id")
	rows, err := sizeParam(r, "rows", DefaultRows)
	if err == nil {
		var cols uint32
		cols, err = sizeParam(r, "cols", DefaultCols)
		if err == nil {
			h.serve(w, r, agentID, &agentv1.TerminalSize{Rows: rows, Cols: cols})
			return
		}
	}
	httperr.Write(w, http.StatusBadRequest, codes.InvalidArgument, err.Error())
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, agentID string, size *agentv1.TerminalSize) {
	// A plain HTTP error is only possible before the upgrade, so the agent's
	// existence (and the caller's right to it) is checked first.
	if _, err := h.client.GetAgent(r.Context(), &agentv1.GetAgentRequest{AgentId: agentID}); err != nil {
		httperr.WriteStatus(w, r, h.logger, err)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:     h.origins,
		InsecureSkipVerify: h.anyOrigin,
	})
	if err != nil {
		return // Accept has answered the request
	}
	conn.SetReadLimit(h.readLimit)
	// The request's context ends with the handler, not with the hijacked
	// socket, so the bridge keeps its values (user, trace) but not its end.
	base := context.WithoutCancel(r.Context())
	streamCtx, cancelStream := context.WithCancel(base)
	defer cancelStream()

	stream, err := h.client.Terminal(streamCtx)
	if err == nil {
		err = stream.Send(&agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Start{Start: &agentv1.TerminalStart{AgentId: agentID, Size: size}}})
	}
	if err != nil {
		h.closeWith(base, conn, statusErr(stream, err))
		return
	}

	clientDone := make(chan error, 1)
	go func() {
		err := h.fromClient(base, conn, stream)
		// The client is gone or misbehaved: end the session, which ends toClient.
		cancelStream()
		clientDone <- err
	}()

	code, reason, clientEnded := h.toClient(streamCtx, conn, stream)
	if clientEnded {
		code, reason = websocket.StatusNormalClosure, ""
		if err := <-clientDone; err != nil {
			code, reason = h.closeCodeOf(base, err)
		}
		_ = conn.Close(code, truncate(reason))
		return
	}
	// Closing the socket ends the pending Read of fromClient.
	_ = conn.Close(code, truncate(reason))
	cancelStream()
	<-clientDone
}

// toClient copies terminal output to the socket until the session ends and
// says how to close the socket.
func (h *Handler) toClient(ctx context.Context, conn *websocket.Conn, stream agentv1.AgentService_TerminalClient) (_ websocket.StatusCode, reason string, clientEnded bool) {
	for {
		msg, err := stream.Recv()
		if ctx.Err() != nil {
			return 0, "", true
		}
		if errors.Is(err, io.EOF) {
			return websocket.StatusNormalClosure, "terminal closed", false
		}
		if err != nil {
			code, reason := h.closeCodeOf(ctx, err)
			return code, reason, false
		}
		switch m := msg.GetMsg().(type) {
		case *agentv1.TerminalResponse_Output:
			if err := conn.Write(ctx, websocket.MessageBinary, m.Output); err != nil {
				return websocket.StatusNormalClosure, "", ctx.Err() != nil
			}
		case *agentv1.TerminalResponse_ExitCode:
			code := m.ExitCode
			b, _ := json.Marshal(Control{Type: "exit", Code: &code})
			_ = conn.Write(ctx, websocket.MessageText, b)
			return websocket.StatusNormalClosure, fmt.Sprintf("shell exited with code %d", code), false
		}
	}
}

// fromClient copies socket frames to the terminal until the client closes
// the socket, and then ends the session.
func (h *Handler) fromClient(ctx context.Context, conn *websocket.Conn, stream agentv1.AgentService_TerminalClient) error {
	defer stream.CloseSend()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != -1 || ctx.Err() != nil {
				return nil
			}
			return err
		}
		var req *agentv1.TerminalRequest
		switch typ {
		case websocket.MessageBinary:
			req = &agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: data}}
		case websocket.MessageText:
			var c Control
			if err := json.Unmarshal(data, &c); err != nil {
				return fmt.Errorf("%w: text frame is not a JSON control message: %v", errBadFrame, err)
			}
			switch c.Type {
			case "resize":
				if c.Rows == 0 || c.Cols == 0 || c.Rows > 65535 || c.Cols > 65535 {
					return fmt.Errorf("%w: resize needs rows and cols from 1 to 65535", errBadFrame)
				}
				req = &agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Resize{Resize: &agentv1.TerminalSize{Rows: c.Rows, Cols: c.Cols}}}
			case "input":
				req = &agentv1.TerminalRequest{Msg: &agentv1.TerminalRequest_Input{Input: []byte(c.Data)}}
			default:
				return fmt.Errorf("%w: unknown control type %q (want resize or input)", errBadFrame, c.Type)
			}
		}
		if err := stream.Send(req); err != nil {
			return nil // the session ended; toClient reports why
		}
	}
}

var errBadFrame = errors.New("bad frame")

// closeCodeOf maps an error to a close code: 4000 plus the gRPC code for a
// service error (4005 for NotFound), 1008 for a bad frame, 1011 otherwise.
// The reason is what an HTTP error body's message would be: a message not
// written for users is logged and replaced (httperr.ForClient).
func (h *Handler) closeCodeOf(ctx context.Context, err error) (websocket.StatusCode, string) {
	if errors.Is(err, errBadFrame) {
		return websocket.StatusPolicyViolation, err.Error()
	}
	if st, ok := status.FromError(err); ok {
		return websocket.StatusCode(4000 + int(st.Code())), httperr.ForClient(ctx, h.logger, st).Message
	}
	return websocket.StatusInternalError, httperr.ForClient(ctx, h.logger, status.New(codes.Internal, err.Error())).Message
}

// statusErr prefers the status the service ended the stream with over the
// local error of a failed Send.
func statusErr(stream agentv1.AgentService_TerminalClient, err error) error {
	if stream == nil || !errors.Is(err, io.EOF) {
		return err
	}
	if _, rerr := stream.Recv(); rerr != nil && !errors.Is(rerr, io.EOF) {
		return rerr
	}
	return err
}

func (h *Handler) closeWith(ctx context.Context, conn *websocket.Conn, err error) {
	code, reason := h.closeCodeOf(ctx, err)
	_ = conn.Close(code, truncate(reason))
}

func truncate(s string) string {
	if len(s) <= maxCloseReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxCloseReason], "")
}
