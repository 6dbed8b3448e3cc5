package openapigen

// The AI SDK's chat protocol (services/gateway/internal/aisdk): the body of
// its DefaultChatTransport in, its UI message stream out.

const (
	aiSDKTag     = "AISDK"
	aiSDKRequest = "AISDKChatRequest"
	aiSDKChunk   = "AISDKChunk"
)

func aiSDKChatOp() object {
	return object{
		"tags":        []any{aiSDKTag},
		"operationId": "AISDK_Chat",
		"summary":     "Runs the agent on a chat, in the Vercel AI SDK's UI message stream protocol (useChat).",
		"description": "The body is what the AI SDK's DefaultChatTransport sends: the chat id is the Wick thread " +
			"(created on first use, the caller's own), the last user message's text parts are the input and its " +
			"file parts (data URLs) are written to /workspace/uploads/<chat id>/ in the agent's workspace. An " +
			"assistant message with tool approval responses as the last message resumes the run named by its " +
			"metadata.runId. The answer is Server-Sent Events with the header x-vercel-ai-ui-message-stream: v1, " +
			"one `data: <chunk>` frame per chunk, then `data: [DONE]`; a failure after the first frame is an error " +
			"chunk. The gateway's body limit applies (413). See docs/protocols.md.",
		"parameters": []any{
			object{"name": "agent_id", "in": "path", "required": true, "description": "The agent.", "schema": object{"type": "string"}},
		},
		"requestBody": object{"required": true, "content": jsonContent(schemaRef(aiSDKRequest))},
		"responses": object{
			"200": object{
				"description": "The UI message stream.",
				"headers": object{"x-vercel-ai-ui-message-stream": object{
					"description": "The protocol's version: v1.", "schema": object{"type": "string"},
				}},
				"content": object{"text/event-stream": object{"schema": schemaRef(aiSDKChunk)}},
			},
			"default": responseRef(errorResponse),
		},
	}
}

func aiSDKSchemas() map[string]object {
	anyObject := object{"type": "object", "additionalProperties": true}
	message := obj("A UIMessage: id, role, metadata and parts (text, file with a data URL, tool parts).", object{
		"id":       str("The message's id."),
		"role":     enum("Who wrote it.", "system", "user", "assistant"),
		"metadata": anyObject,
		"parts":    array("The message's parts.", anyObject),
	}, "role", "parts")
	return map[string]object{
		aiSDKRequest: obj("The AI SDK's chat request.", object{
			"id":        str("The chat's id: the Wick thread."),
			"messages":  array("The chat's messages; the last one is the new input.", message),
			"trigger":   enum("Why the request is sent; regenerate-message is refused.", "submit-message", "regenerate-message"),
			"messageId": str("The message to regenerate (unused)."),
		}, "id", "messages"),
		aiSDKChunk: obj("One chunk of the UI message stream (the AI SDK's uiMessageChunkSchema): start, start-step, "+
			"text-*, reasoning-*, tool-input-*, tool-approval-request, tool-output-*, data-todos, finish-step, "+
			"finish, abort or error.", object{
			"type": str("The chunk's type."),
		}, "type"),
	}
}
