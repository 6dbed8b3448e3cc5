package openapigen

// agUIOp is AG-UI's run endpoint (services/gateway/internal/agui); its
// events are AG-UI's, whose schemas @ag-ui/core publishes.
func agUIOp() object {
	return object{
		"tags":        []any{gatewayTag},
		"operationId": "Gateway_AGUIRun",
		"summary":     "Run an agent over AG-UI.",
		"description": "Takes an AG-UI RunAgentInput and streams the run as AG-UI events, one `data:` frame each " +
			"(docs/protocols.md, AG-UI). threadId is the caller's thread of that id, created by its first run.",
		"parameters": []any{object{"name": "agent_id", "in": "path", "required": true, "schema": object{"type": "string"}}},
		"requestBody": object{
			"required": true,
			"content":  jsonContent(object{"type": "object", "description": "An AG-UI RunAgentInput."}),
		},
		"responses": object{
			"200": object{
				"description": "AG-UI events.",
				"content":     object{"text/event-stream": object{"schema": object{"type": "string"}}},
			},
			"400": object{"description": "The input is malformed; the message names the field."},
			"404": object{"description": "No such agent, or no such run for a resume entry."},
		},
	}
}
