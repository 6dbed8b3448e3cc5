package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-agent/wick/platform/runevent"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/platform/identity"
)

// fakeAgent is an AgentService that keeps agents and files per user in
// memory and scripts runs from the message text:
//
//	"tokens N"   streams N deltas and done
//	"block"      sends on_run_start, then waits until released or cancelled
//	"fail"       sends one event, then fails with Internal
type fakeAgent struct {
	agentv1.UnimplementedAgentServiceServer

	mu        sync.Mutex
	agents    map[string]map[string]*agentv1.Agent // user → id → agent
	files     map[string][]byte                    // user:agent:path → bytes
	runs      map[string][]*agentv1.StreamEvent    // run id → events
	runOwner  map[string]string
	nextRun   int
	cancelled chan string // run ids whose stream ended by cancellation
	release   chan struct{}
	resizes   chan *agentv1.TerminalSize
}

func newFakeAgent() *fakeAgent {
	return &fakeAgent{
		agents:    map[string]map[string]*agentv1.Agent{},
		files:     map[string][]byte{},
		runs:      map[string][]*agentv1.StreamEvent{},
		runOwner:  map[string]string{},
		cancelled: make(chan string, 16),
		release:   make(chan struct{}),
		resizes:   make(chan *agentv1.TerminalSize, 16),
	}
}

func (f *fakeAgent) agent(ctx context.Context, id string) (string, *agentv1.Agent, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return "", nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.agents[user][id]
	if !ok {
		return user, nil, status.Errorf(codes.NotFound, "agent %q not found", id)
	}
	return user, a, nil
}

func (f *fakeAgent) ListAgents(ctx context.Context, _ *agentv1.ListAgentsRequest) (*agentv1.ListAgentsResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &agentv1.ListAgentsResponse{}
	for _, a := range f.agents[user] {
		resp.Agents = append(resp.Agents, a)
	}
	return resp, nil
}

func (f *fakeAgent) CreateAgent(ctx context.Context, req *agentv1.CreateAgentRequest) (*agentv1.CreateAgentResponse, error) {
	user, err := identity.Require(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetAgent().GetAgentId() == "" {
		return nil, status.Error(codes.InvalidArgument, "agent.agent_id is required")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.agents[user] == nil {
		f.agents[user] = map[string]*agentv1.Agent{}
	}
	f.agents[user][req.GetAgent().GetAgentId()] = req.GetAgent()
	return &agentv1.CreateAgentResponse{Agent: req.GetAgent()}, nil
}

func (f *fakeAgent) GetAgent(ctx context.Context, req *agentv1.GetAgentRequest) (*agentv1.GetAgentResponse, error) {
	_, a, err := f.agent(ctx, req.GetAgentId())
	if err != nil {
		return nil, err
	}
	return &agentv1.GetAgentResponse{Agent: a}, nil
}

func (f *fakeAgent) Invoke(ctx context.Context, req *agentv1.InvokeRequest) (*agentv1.InvokeResponse, error) {
	if _, _, err := f.agent(ctx, req.GetAgentId()); err != nil {
		return nil, err
	}
	text := ""
	if len(req.GetMessages()) > 0 {
		text = req.GetMessages()[0].GetContent()
	}
	// "status N MESSAGE" fails with gRPC code N and MESSAGE.
	if rest, ok := strings.CutPrefix(text, "status "); ok {
		n, msg, _ := strings.Cut(rest, " ")
		c, _ := strconv.Atoi(n)
		return nil, status.Error(codes.Code(c), msg)
	}
	return &agentv1.InvokeResponse{
		ThreadId: "th_1", RunId: "run_1", Status: "done", Content: "echo: " + text,
		Messages: []*agentv1.Message{{Role: "assistant", Content: "echo: " + text, ToolCalls: []*agentv1.ToolCall{{Id: "call_1", Name: "ls"}}}},
	}, nil
}

// event is one event of a fake run. A send time in data's sent_ns goes in
// the event's name, as a kind's data has no room for it.
func event(run, kind string, seq int, data map[string]any) *agentv1.StreamEvent {
	ev := &agentv1.StreamEvent{Event: kind, RunId: run, ThreadId: "th_" + run, Id: strconv.Itoa(seq)}
	if ns, ok := data["sent_ns"].(string); ok {
		ev.Name = ns
		delete(data, "sent_ns")
	}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		if ev.Payload, err = runevent.UnmarshalData(kind, raw); err != nil {
			panic(err)
		}
	}
	return ev
}

func (f *fakeAgent) Stream(req *agentv1.StreamRequest, ss agentv1.AgentService_StreamServer) error {
	user, _, err := f.agent(ss.Context(), req.GetAgentId())
	if err != nil {
		return err
	}
	text := ""
	if len(req.GetMessages()) > 0 {
		text = req.GetMessages()[0].GetContent()
	}
	f.mu.Lock()
	f.nextRun++
	run := fmt.Sprintf("run%d", f.nextRun)
	f.runOwner[run] = user
	f.mu.Unlock()

	seq := 0
	send := func(kind string, data map[string]any) error {
		seq++
		ev := event(run, kind, seq, data)
		f.mu.Lock()
		f.runs[run] = append(f.runs[run], ev)
		f.mu.Unlock()
		return ss.Send(&agentv1.StreamResponse{Event: ev})
	}
	if err := send("on_run_start", map[string]any{"agent_id": req.GetAgentId()}); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(text, "tokens "):
		n, _ := strconv.Atoi(strings.TrimPrefix(text, "tokens "))
		for i := range n {
			if err := send("on_chat_model_stream", map[string]any{"delta": fmt.Sprintf("t%d ", i)}); err != nil {
				return err
			}
		}
	case strings.HasPrefix(text, "paced "):
		// "paced N D": N deltas D apart, each stamped with its send time.
		var n int
		var d time.Duration
		if _, err := fmt.Sscanf(text, "paced %d %s", &n, new(string)); err != nil {
			return status.Errorf(codes.InvalidArgument, "paced: %v", err)
		}
		d, _ = time.ParseDuration(strings.Fields(text)[2])
		t := time.NewTicker(d)
		defer t.Stop()
		for range n {
			select {
			case <-ss.Context().Done():
				return ss.Context().Err()
			case <-t.C:
			}
			if err := send("on_chat_model_stream", map[string]any{"delta": "tok ", "sent_ns": strconv.FormatInt(time.Now().UnixNano(), 10)}); err != nil {
				return err
			}
		}
	case text == "block":
		select {
		case <-ss.Context().Done():
			f.cancelled <- run
			return ss.Context().Err()
		case <-f.release:
		}
	case text == "fail":
		return status.Error(codes.Internal, "model exploded at 10.0.0.7:7003")
	}
	return send("done", map[string]any{"content": "ok"})
}

func (f *fakeAgent) JoinRun(req *agentv1.JoinRunRequest, ss agentv1.AgentService_JoinRunServer) error {
	user, err := identity.Require(ss.Context())
	if err != nil {
		return err
	}
	f.mu.Lock()
	events, owner := f.runs[req.GetRunId()], f.runOwner[req.GetRunId()]
	f.mu.Unlock()
	if owner != user {
		return status.Errorf(codes.NotFound, "run %q not found", req.GetRunId())
	}
	after, _ := strconv.Atoi(req.GetAfterEventId())
	for _, ev := range events {
		if n, _ := strconv.Atoi(ev.GetId()); n > after {
			if err := ss.Send(&agentv1.JoinRunResponse{Event: ev}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fakeAgent) WatchEvents(_ *agentv1.WatchEventsRequest, ss agentv1.AgentService_WatchEventsServer) error {
	if _, err := identity.Require(ss.Context()); err != nil {
		return err
	}
	if err := ss.Send(&agentv1.WatchEventsResponse{Event: &agentv1.ConfigEvent{Event: "agent_created", AgentId: "a1", Id: "1"}}); err != nil {
		return err
	}
	<-ss.Context().Done()
	return nil
}

func fileKey(user, agent, path string) string { return user + ":" + agent + ":" + path }

func (f *fakeAgent) DownloadFile(req *agentv1.DownloadFileRequest, ss agentv1.AgentService_DownloadFileServer) error {
	user, _, err := f.agent(ss.Context(), req.GetAgentId())
	if err != nil {
		return err
	}
	f.mu.Lock()
	data, ok := f.files[fileKey(user, req.GetAgentId(), req.GetPath())]
	f.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "file %s not found", req.GetPath())
	}
	const chunk = 64 << 10
	first := true
	for len(data) > 0 || first {
		n := min(chunk, len(data))
		msg := &agentv1.DownloadFileResponse{Data: data[:n]}
		if first {
			msg.Size = int64(len(data))
		}
		if err := ss.Send(msg); err != nil {
			return err
		}
		data, first = data[n:], false
	}
	return nil
}

// UploadFile commits only a complete upload, as the real service does.
func (f *fakeAgent) UploadFile(ss agentv1.AgentService_UploadFileServer) error {
	first, err := ss.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "header must come first")
	}
	user, _, err := f.agent(ss.Context(), h.GetAgentId())
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for {
		msg, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		buf.Write(msg.GetData())
	}
	f.mu.Lock()
	f.files[fileKey(user, h.GetAgentId(), h.GetPath())] = buf.Bytes()
	f.mu.Unlock()
	return ss.SendAndClose(&agentv1.UploadFileResponse{Path: h.GetPath(), BytesWritten: int64(buf.Len())})
}

func (f *fakeAgent) hasFile(user, agent, path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[fileKey(user, agent, path)]
	return ok
}

// Terminal echoes input; "exit" ends the shell with code 3.
func (f *fakeAgent) Terminal(ss agentv1.AgentService_TerminalServer) error {
	first, err := ss.Recv()
	if err != nil {
		return err
	}
	if first.GetStart() == nil {
		return status.Error(codes.InvalidArgument, "start must come first")
	}
	if _, _, err := f.agent(ss.Context(), first.GetStart().GetAgentId()); err != nil {
		return err
	}
	f.resizes <- first.GetStart().GetSize()
	for {
		msg, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch m := msg.GetMsg().(type) {
		case *agentv1.TerminalRequest_Input:
			if strings.TrimSpace(string(m.Input)) == "exit" {
				return ss.Send(&agentv1.TerminalResponse{Msg: &agentv1.TerminalResponse_ExitCode{ExitCode: 3}})
			}
			if err := ss.Send(&agentv1.TerminalResponse{Msg: &agentv1.TerminalResponse_Output{Output: append([]byte("echo:"), m.Input...)}}); err != nil {
				return err
			}
		case *agentv1.TerminalRequest_Resize:
			f.resizes <- m.Resize
		}
	}
}
