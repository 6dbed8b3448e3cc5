package openapigen

// a2aPath is an agent's A2A endpoint (services/gateway/internal/a2a).
const a2aPath = "/a2a/agents/{agent_id}"

var a2aAgentParam = object{"name": "agent_id", "in": "path", "required": true, "schema": object{"type": "string"}}

// a2aCardOp is an agent's A2A agent card, whose schema the A2A
// specification defines.
func a2aCardOp() object {
	return object{
		"tags":        []any{gatewayTag},
		"operationId": "Gateway_A2AAgentCard",
		"summary":     "An agent's A2A agent card.",
		"description": "The agent as an Agent2Agent agent: its skills, the JSON-RPC endpoint and the bearer scheme " +
			"(docs/protocols.md, A2A).",
		"parameters": []any{a2aAgentParam},
		"responses": object{
			"200": object{"description": "The agent card.", "content": jsonContent(object{"type": "object", "description": "An A2A AgentCard."})},
			"404": object{"description": "No such agent."},
		},
	}
}

// a2aRPCOp is an agent's A2A JSON-RPC endpoint: message/send,
// message/stream, tasks/get, tasks/cancel, tasks/resubscribe.
func a2aRPCOp() object {
	return object{
		"tags":        []any{gatewayTag},
		"operationId": "Gateway_A2AJSONRPC",
		"summary":     "Calls an agent over A2A's JSON-RPC binding.",
		"description": "A JSON-RPC 2.0 request of the A2A protocol. message/stream and tasks/resubscribe answer an event " +
			"stream of JSON-RPC responses; errors are JSON-RPC error objects (docs/protocols.md, A2A).",
		"parameters": []any{a2aAgentParam},
		"requestBody": object{
			"required": true,
			"content":  jsonContent(object{"type": "object", "description": "A JSON-RPC 2.0 request."}),
		},
		"responses": object{
			"200": object{
				"description": "A JSON-RPC response, or an event stream of them.",
				"content": object{
					"application/json":  object{"schema": object{"type": "object"}},
					"text/event-stream": object{"schema": object{"type": "string"}},
				},
			},
		},
	}
}
