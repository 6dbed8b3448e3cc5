package openapigen

// The LLM gateway's Anthropic Messages API (services/llmgw/messages.go) as
// the gateway proxies it at /v1. services/llmgw's tests compare these
// schemas' properties with its wire types and its routes with this document.

const (
	anRequest     = "anthropic.MessagesRequest"
	anMessage     = "anthropic.Message"
	anUsage       = "anthropic.Usage"
	anBlock       = "anthropic.ContentBlock"
	anTool        = "anthropic.Tool"
	anFrame       = "anthropic.MessageStreamFrame"
	anError       = "anthropic.Error"
	anTokenCount  = "anthropic.TokenCount"
	anthropicDesc = "The model is a Wick model spec or a configured model's id (an operator can name models after " +
		"Anthropic's, e.g. claude-sonnet-4-5 → script:… in tests); an empty model uses the LLM gateway's default. " +
		"anthropic-version, anthropic-beta and ?beta=true are accepted; fields the gateway cannot honour on every " +
		"provider (tool_choice, stop_sequences, top_p, top_k, metadata, thinking, cache_control, server tools) are " +
		"accepted and ignored. Image and document blocks are refused (400): the gateway's models take text."
)

func messagesOp() object {
	return object{
		"tags":        []any{anthropicTag},
		"operationId": "Anthropic_CreateMessage",
		"summary":     "Creates a message, streamed or not, with tools and thinking (Anthropic's Messages API).",
		"description": anthropicDesc + " With stream true the answer is Server-Sent Events in Anthropic's order: " +
			"message_start, ping, then per content block content_block_start, content_block_delta (text_delta, " +
			"thinking_delta then signature_delta, input_json_delta) and content_block_stop, then message_delta " +
			"(stop_reason, usage) and message_stop; a failure after message_start is an `event: error`. " +
			"message_start's input_tokens is the count_tokens estimate; message_delta's usage is the provider's count.",
		"parameters": []any{object{
			"name": "anthropic-version", "in": "header", "required": false,
			"description": "Accepted and not checked (2023-06-01).", "schema": object{"type": "string"},
		}},
		"requestBody": object{"required": true, "content": jsonContent(schemaRef(anRequest))},
		"responses": object{
			"200": object{
				"description": "The message, or its stream when stream is true.",
				"headers":     accountingHeaders(),
				"content": object{
					"application/json":  object{"schema": schemaRef(anMessage)},
					"text/event-stream": object{"schema": schemaRef(anFrame)},
				},
			},
			"default": object{"description": "The LLM gateway refused or failed the call, in Anthropic's error shape: " +
				"400 invalid_request_error, 401 authentication_error, 403 permission_error, 404 not_found_error (a model " +
				"that is neither configured nor a spec), 413 request_too_large, 429 rate_limit_error, 529 " +
				"overloaded_error (a provider unavailable), 5xx api_error.", "content": jsonContent(schemaRef(anError))},
		},
	}
}

func countTokensOp() object {
	return object{
		"tags":        []any{anthropicTag},
		"operationId": "Anthropic_CountTokens",
		"summary":     "Estimates the input tokens of a Messages request without calling a model.",
		"description": "The estimate the gateway makes for providers that count no tokens: about four bytes a token " +
			"over the system prompt, the messages' text, tool calls and tool definitions. max_tokens is not needed.",
		"requestBody": object{"required": true, "content": jsonContent(schemaRef(anRequest))},
		"responses": object{
			"200":     object{"description": "The estimate.", "content": jsonContent(schemaRef(anTokenCount))},
			"default": object{"description": "The request was refused, in Anthropic's error shape.", "content": jsonContent(schemaRef(anError))},
		},
	}
}

func anthropicSchemas() map[string]object {
	text := func(desc string) object {
		return object{"description": desc, "oneOf": []any{
			object{"type": "string"},
			object{"type": "array", "items": obj("", object{"type": object{"const": "text"}, "text": object{"type": "string"}}, "type", "text")},
		}}
	}
	ignored := func(desc string) object { return object{"description": desc + " Accepted and ignored."} }
	usage := obj("Tokens the call used.", object{
		"input_tokens":                integer("Input tokens."),
		"output_tokens":               integer("Output tokens."),
		"cache_creation_input_tokens": integer("Always 0."),
		"cache_read_input_tokens":     integer("Always 0."),
	}, "input_tokens", "output_tokens")
	return map[string]object{
		anRequest: obj("A Messages request. Unknown fields are ignored.", object{
			"model":          str("A Wick model spec or configured model; empty uses the LLM gateway's default."),
			"max_tokens":     object{"type": "integer", "minimum": 1, "description": "Bound on the answer's tokens; required (not for count_tokens)."},
			"system":         text("The system prompt: a string or text blocks (joined as paragraphs)."),
			"messages":       object{"type": "array", "minItems": 1, "description": "The conversation: user and assistant turns.", "items": obj("", object{"role": enum("", "user", "assistant"), "content": object{"description": "A string or an array of blocks.", "oneOf": []any{object{"type": "string"}, object{"type": "array", "items": schemaRef(anBlock)}}}}, "role", "content")},
			"tools":          array("Tools the model may call; server tools (with a type other than custom) are left out.", schemaRef(anTool)),
			"tool_choice":    ignored("auto, any, tool (with name) or none."),
			"stop_sequences": ignored("Stop sequences."),
			"temperature":    object{"type": "number", "minimum": 0, "maximum": 1, "description": "Sampling temperature."},
			"top_p":          ignored("Nucleus sampling."),
			"top_k":          ignored("Top-k sampling."),
			"metadata":       ignored("Request metadata."),
			"thinking":       ignored("{type: enabled, budget_tokens}: the model thinks when it does, whatever this says."),
			"stream":         boolean("Stream the answer as Server-Sent Events."),
		}, "messages"),
		anBlock: obj("A content block of a request. Thinking blocks sent back are accepted and dropped.", object{
			"type":        enum("image and document are refused.", "text", "tool_use", "tool_result", "thinking", "redacted_thinking"),
			"text":        str("A text block's text."),
			"id":          str("A tool_use block's id."),
			"name":        str("A tool_use block's tool."),
			"input":       object{"type": "object", "description": "A tool_use block's arguments.", "additionalProperties": true},
			"tool_use_id": str("The tool_use a tool_result answers."),
			"content":     text("A tool_result's output."),
			"is_error":    boolean("The tool failed; the output reaches the model prefixed with \"Error: \"."),
		}, "type"),
		anTool: obj("A tool the model may call.", object{
			"type":         str("Empty or custom; other types are Anthropic's server tools, left out."),
			"name":         str("The tool's name."),
			"description":  str("What the tool does."),
			"input_schema": object{"type": "object", "description": "The JSON Schema of the input.", "additionalProperties": true},
		}, "name"),
		anMessage: obj("A whole answer, and the message of a stream's message_start (content empty there).", object{
			"id":            str("msg_…"),
			"type":          object{"const": "message"},
			"role":          object{"const": "assistant"},
			"model":         str("The model requested."),
			"content":       array("thinking (with an opaque signature), text and tool_use blocks, in that order.", object{"type": "object", "additionalProperties": true}),
			"stop_reason":   object{"type": []any{"string", "null"}, "enum": []any{"end_turn", "max_tokens", "tool_use", "refusal", nil}, "description": "Why the model stopped; null in message_start."},
			"stop_sequence": object{"type": "null", "description": "Always null."},
			"usage":         schemaRef(anUsage),
		}, "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"),
		anUsage: usage,
		anFrame: obj("One Server-Sent Event of a streamed message: `event: <type>` and `data: <JSON with the same type>`.", object{
			"event": enum("The event's type.", "message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "error"),
			"data":  object{"type": "string", "contentMediaType": "application/json", "description": "The event as JSON; an Error for event error."},
		}, "event", "data"),
		anError: obj("An error in Anthropic's shape.", object{
			"type": object{"const": "error"},
			"error": obj("", object{
				"type":    enum("The kind of error.", "invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large", "rate_limit_error", "api_error", "overloaded_error"),
				"message": str("What went wrong."),
			}, "type", "message"),
		}, "type", "error"),
		anTokenCount: obj("The estimate of a request's input tokens.", object{
			"input_tokens": integer("Input tokens."),
		}, "input_tokens"),
	}
}
