package loop

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/llm"
)

// The data of the events every runtime (the loop, ACP, the executor)
// sends; a kind is the field of agentv1.RunEventData the data sets.

// DeltaData is an on_chat_model_stream event's data.
func DeltaData(delta string) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnChatModelStream{OnChatModelStream: &agentv1.DeltaData{Delta: delta}}}
}

// DoneData is a done event's data.
func DoneData(stopReason string) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_Done{Done: &agentv1.DoneData{StopReason: proto.String(stopReason)}}}
}

// ErrorData is an error event's data; code may be empty when the executor
// fills it in from stopReason, and stopReason empty when the loop did not
// end the run.
func ErrorData(message, code, stopReason string) *agentv1.RunEventData {
	e := &agentv1.ErrorData{Message: message, Code: code}
	if stopReason != "" {
		e.StopReason = proto.String(stopReason)
	}
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_Error{Error: e}}
}

// ToolStartData is an on_tool_start event's data.
func ToolStartData(call llm.ToolCall) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolStart{OnToolStart: &agentv1.ToolStartData{
		Args: Args(call.Args), ToolCallId: call.ID,
	}}}
}

// ToolEndData is an on_tool_end event's data; errText is empty on success.
func ToolEndData(toolCallID, output, errText string) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnToolEnd{OnToolEnd: &agentv1.ToolEndData{
		Output: proto.String(output), Error: proto.String(errText), ToolCallId: toolCallID,
	}}}
}

// TodosData is an on_todos event's data: the whole list.
func TodosData(todos []Todo) *agentv1.RunEventData {
	out := make([]*agentv1.Todo, len(todos))
	for i, t := range todos {
		out[i] = &agentv1.Todo{Id: t.ID, Title: t.Title, Status: t.Status}
	}
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnTodos{OnTodos: &agentv1.TodosData{Todos: out}}}
}

// ApprovalData is the data of an on_interrupt event that asks to approve
// calls; always says a decision may be remembered for later calls.
func ApprovalData(calls []llm.ToolCall) *agentv1.RunEventData {
	return &agentv1.RunEventData{Kind: &agentv1.RunEventData_OnInterrupt{OnInterrupt: &agentv1.InterruptData{
		ToolCalls: ToolCalls(calls), Always: proto.Bool(true),
	}}}
}

// ToolCalls converts calls to their API form.
func ToolCalls(calls []llm.ToolCall) []*agentv1.ToolCall {
	out := make([]*agentv1.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = &agentv1.ToolCall{Id: c.ID, Name: c.Name, Args: Args(c.Args)}
	}
	return out
}

// Args converts a call's arguments to a Struct; nil when there are none.
func Args(args map[string]any) *structpb.Struct {
	if args == nil {
		return nil
	}
	s, err := structpb.NewStruct(args)
	if err != nil {
		// Typed values (slices of strings, structs) take a JSON round trip.
		m, _ := JSONValue(args).(map[string]any)
		if s, err = structpb.NewStruct(m); err != nil {
			return &structpb.Struct{}
		}
	}
	return s
}
