package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

func init() {
	// task-remote: call the async tool, answer; the follow-up run answers
	// the task's note.
	scripts["task-remote"] = `{"turns":[
		{"tool_calls":[{"id":"r1","name":"remote","arguments":{}}]},
		{"text":"Started it."},
		{"text":"Saw the result."}
	]}`
}

// TestTaskSurvivesSIGKILL: a background task polled by one wick-agent
// process is finished by another after the first is killed with SIGKILL:
// the second takes it over once its lease ends, polls its status URL, and
// runs the follow-up on the idle thread.
func TestTaskSurvivesSIGKILL(t *testing.T) {
	var done atomic.Bool
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			_ = json.NewEncoder(w).Encode(map[string]string{"status_url": srv.URL + "/status"})
		case done.Load():
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "done", "output": "remote result"})
		default:
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "running"})
		}
	}))
	t.Cleanup(srv.Close)
	s := startProcs(t, procConfig{agentArgs: []string{"-tool-allow-nets", "127.0.0.0/8", "-task-lease", "2s", "-run-lease", "2s"}})
	clientB := s.replica(t)

	ctx, cancel := context.WithTimeout(as(t.Context(), faultUser), faultDeadline)
	defer cancel()
	params, _ := structpb.NewStruct(map[string]any{"type": "object"})
	if _, err := s.client.RegisterTool(ctx, &agentv1.RegisterToolRequest{Tool: &agentv1.ToolDefinition{
		Name: "remote", Url: srv.URL + "/call", Async: true, Parameters: params,
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CreateAgent(ctx, &agentv1.CreateAgentRequest{Agent: &agentv1.Agent{
		AgentId: "tasker", Model: structpb.NewStringValue("script:task-remote"), Tools: []string{"remote"}, TaskFollowUp: true,
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.client.Invoke(ctx, &agentv1.InvokeRequest{AgentId: "tasker", Messages: []*agentv1.Message{{Role: "user", Content: "go"}}})
	if err != nil || res.GetStatus() != "done" {
		t.Fatalf("first turn = %v, %v", res, err)
	}
	list, err := clientB.ListThreadTasks(ctx, &agentv1.ListThreadTasksRequest{ThreadId: res.GetThreadId()})
	if err != nil || len(list.GetTasks()) != 1 || list.GetTasks()[0].GetStatus() != "running" {
		t.Fatalf("tasks seen from B = %v, %v", list, err)
	}
	taskID := list.GetTasks()[0].GetTaskId()

	s.agent.Kill() // SIGKILL: no lease is given back
	done.Store(true)

	var task *agentv1.Task
	for task.GetStatus() != "done" {
		select {
		case <-ctx.Done():
			t.Fatalf("B never finished the task: %v", task)
		case <-time.After(100 * time.Millisecond):
		}
		got, err := clientB.GetTask(ctx, &agentv1.GetTaskRequest{TaskId: taskID})
		if err != nil {
			t.Fatal(err)
		}
		task = got.GetTask()
	}
	if task.GetAttempts() != 2 || task.GetResult() != "remote result" {
		t.Fatalf("task after the take-over: %v", task)
	}
	for {
		th, err := clientB.GetThread(ctx, &agentv1.GetThreadRequest{ThreadId: res.GetThreadId()})
		if err != nil {
			t.Fatal(err)
		}
		msgs := th.GetThread().GetMessages()
		if last := msgs[len(msgs)-1]; last.GetContent() == "Saw the result." {
			if note := msgs[len(msgs)-2].GetContent(); !strings.HasSuffix(note, "done]\nremote result") {
				t.Fatalf("the follow-up's input = %q", note)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no follow-up run on B: last message %q", msgs[len(msgs)-1].GetContent())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
