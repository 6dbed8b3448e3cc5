package openapigen

// mcpTag groups the MCP server's endpoint.
const mcpTag = "MCP"

// mcpItem describes /mcp, the Model Context Protocol server
// (services/gateway/internal/mcpserver): the streamable HTTP transport,
// whose JSON-RPC messages the MCP specification defines, not this document.
func mcpItem() object {
	rpc := object{"type": "object", "description": "A JSON-RPC 2.0 message of the Model Context Protocol."}
	sse := object{"type": "string", "description": "Server-Sent Events, each data a JSON-RPC message."}
	op := func(id, summary, desc string, responses object) object {
		responses["401"] = responseRef(unauthResponse)
		return object{
			"tags":        []any{mcpTag},
			"operationId": id,
			"summary":     summary,
			"description": desc,
			"parameters": []any{
				object{"name": "Mcp-Session-Id", "in": "header", "description": "The session, as the answer to initialize " +
					"named it; required after initialize. A session is bound to the user who opened it (403 for another).",
					"schema": object{"type": "string"}},
			},
			"responses": responses,
		}
	}
	return object{
		"post": op("MCP_Post", "Sends a JSON-RPC message to the MCP server.",
			"Model Context Protocol, streamable HTTP transport. Each of the caller's agents is a tool: tools/list lists "+
				"them, tools/call runs one with {message, thread_id?} and answers its final reply, with "+
				"notifications/progress while it runs when the call has a progressToken (docs/protocols.md). "+
				"Send Accept: application/json, text/event-stream.",
			object{
				"200": object{"description": "The response, as an event stream (with the call's notifications) or JSON.",
					"content": object{"text/event-stream": object{"schema": sse}, "application/json": object{"schema": rpc}}},
				"202": object{"description": "A notification or response was accepted."},
				"400": object{"description": "Not a JSON-RPC message, a missing Accept, or an unsupported protocol version."},
				"404": object{"description": "The session does not exist (any more): initialize again."},
			}),
		"get": op("MCP_Listen", "Opens the session's stream of server messages.",
			"The streamable HTTP transport's standalone event stream (Accept: text/event-stream, Mcp-Session-Id).",
			object{
				"200": object{"description": "The stream.", "content": object{"text/event-stream": object{"schema": sse}}},
				"400": object{"description": "No session id, or no text/event-stream in Accept."},
				"404": object{"description": "The session does not exist (any more)."},
			}),
		"delete": op("MCP_EndSession", "Ends an MCP session.", "Closes the session named by Mcp-Session-Id.",
			object{
				"204": object{"description": "The session is closed."},
				"400": object{"description": "No session id."},
			}),
	}
}
