package openapigen

// The LLM gateway's Responses API (services/llmgw/responses.go): OpenAI's
// /v1/responses, stateless. services/llmgw's tests compare these schemas'
// properties with its wire types.

const (
	rsRequest        = "openai.ResponsesRequest"
	rsTool           = "openai.ResponsesTool"
	rsInputItem      = "openai.ResponsesInputItem"
	rsResponse       = "openai.Response"
	rsMessage        = "openai.ResponsesMessage"
	rsFunctionCall   = "openai.ResponsesFunctionCall"
	rsCustomToolCall = "openai.ResponsesCustomToolCall"
	rsUsage          = "openai.ResponsesUsage"
	rsEvent          = "openai.ResponsesStreamEvent"
	rsFrame          = "openai.ResponsesFrame"
	rsError          = "openai.ResponsesError"
)

func responsesOp() object {
	return object{
		"tags":        []any{openAITag},
		"operationId": "OpenAI_CreateResponse",
		"summary":     "Creates a model response, streamed or not, with tools (OpenAI's Responses API, as Codex speaks it).",
		"description": "The model is a Wick model spec, as for chat completions; a name that is neither configured nor " +
			"provider:model is a 404 with code model_not_found. The gateway stores nothing: every request carries the " +
			"whole conversation in input (store is answered false), and previous_response_id, conversation and " +
			"item_reference are refused (400). Function tools are offered as they are; a custom tool as a function " +
			"with one string parameter input, its calls answered as custom_tool_call items; a namespace's functions " +
			"under their own names; hosted tools (web_search, local_shell, file_search, …) are dropped. Reasoning " +
			"input items are dropped; images and files are refused. With stream true the answer is Server-Sent " +
			"Events, `event: <type>` and `data: <ResponsesStreamEvent>`: response.created, response.in_progress, " +
			"then per output item output_item.added, its deltas (content_part.added, output_text.delta…, " +
			"output_text.done, content_part.done; or function_call_arguments.delta…, function_call_arguments.done) " +
			"and output_item.done, then response.completed, or response.incomplete (max_output_tokens, " +
			"content_filter) or response.failed. Nothing is sent before the model's first output, so an early " +
			"failure is an HTTP error.",
		"requestBody": object{"required": true, "content": jsonContent(schemaRef(rsRequest))},
		"responses": object{
			"200": object{
				"description": "The response, or its stream when stream is true.",
				"headers":     accountingHeaders(),
				"content": object{
					"application/json":  object{"schema": schemaRef(rsResponse)},
					"text/event-stream": object{"schema": schemaRef(rsFrame)},
				},
			},
			"413":     responseRef(errorResponse),
			"default": object{"description": "The LLM gateway refused or failed the call, in OpenAI's error shape.", "content": jsonContent(schemaRef(rsError))},
		},
	}
}

func responsesSchemas() map[string]object {
	nonNegative := func(desc string) object {
		o := integer(desc)
		o["minimum"] = 0
		return o
	}
	anyJSON := func(desc string) object { return object{"description": desc} }
	textPart := obj("An output_text part.", object{
		"type":        object{"const": "output_text"},
		"text":        str("The text."),
		"annotations": array("Always empty.", object{}),
	}, "type", "text", "annotations")
	status := enum("in_progress while streamed, then completed.", "in_progress", "completed")
	return map[string]object{
		rsRequest: obj("A Responses request. Unknown fields (include, prompt_cache_key, text, metadata, reasoning, "+
			"truncation, store, …) are ignored.", object{
			"model":                str("A Wick model spec; empty uses the LLM gateway's default model."),
			"input":                object{"description": "A user message as a string, or the conversation's items.", "oneOf": []any{object{"type": "string"}, array("", schemaRef(rsInputItem))}},
			"instructions":         str("The system prompt."),
			"tools":                array("Tools the model may call.", schemaRef(rsTool)),
			"tool_choice":          anyJSON("Echoed; not honoured (the model chooses)."),
			"parallel_tool_calls":  boolean("Echoed; not honoured."),
			"max_output_tokens":    nonNegative("Bound on the reply's tokens; a reply cut by it is incomplete."),
			"temperature":          object{"type": "number", "minimum": 0, "maximum": 2, "description": "Sampling temperature."},
			"top_p":                object{"type": "number", "description": "Echoed; not honoured."},
			"stream":               boolean("Stream the answer as Server-Sent Events."),
			"previous_response_id": str("Refused: the gateway stores no responses."),
			"conversation":         anyJSON("Refused: the gateway stores no conversations."),
		}, "input"),
		rsTool: obj("A tool: function, custom (offered as a function with one string parameter input), namespace "+
			"(its functions offered under their own names); other types are dropped.", object{
			"type":        str("function, custom, namespace, or a hosted tool's type (dropped)."),
			"name":        str("The tool's name; required for function and custom tools."),
			"description": str("What the tool does."),
			"parameters":  object{"type": "object", "description": "The JSON Schema of a function's arguments.", "additionalProperties": true},
			"strict":      boolean("Ignored."),
			"tools":       array("A namespace's tools.", schemaRef(rsTool)),
		}),
		rsInputItem: obj("An input item: a message (type may be omitted), function_call, function_call_output, "+
			"custom_tool_call, custom_tool_call_output, local_shell_call; reasoning and hosted-tool items are dropped.", object{
			"type":      str("The item's type; message when omitted."),
			"role":      enum("A message's role; developer is taken as system.", "user", "assistant", "system", "developer"),
			"content":   anyJSON("A message's text: a string or parts input_text, output_text, refusal (images and files are refused)."),
			"call_id":   str("The call a tool call or its output belongs to."),
			"name":      str("A tool call's tool."),
			"arguments": str("A function call's arguments as JSON text."),
			"output":    anyJSON("A tool call's output: a string or input_text parts."),
			"input":     str("A custom tool call's input."),
			"action":    anyJSON("A local shell call's action, passed to the model as the arguments of a call of local_shell."),
		}),
		rsMessage: obj("The assistant's text.", object{
			"type":    object{"const": "message"},
			"id":      str("msg_…"),
			"status":  status,
			"role":    object{"const": "assistant"},
			"content": array("One output_text part (none while it opens).", textPart),
		}, "type", "id", "status", "role", "content"),
		rsFunctionCall: obj("A call of a function tool.", object{
			"type":      object{"const": "function_call"},
			"id":        str("fc_…"),
			"status":    status,
			"call_id":   str("The id a function_call_output answers."),
			"name":      str("The function."),
			"arguments": str("The arguments as JSON text (empty while it opens)."),
			"namespace": str("The namespace tool the function came from, if any."),
		}, "type", "id", "status", "call_id", "name", "arguments"),
		rsCustomToolCall: obj("A call of a custom tool.", object{
			"type":    object{"const": "custom_tool_call"},
			"id":      str("fc_…"),
			"status":  status,
			"call_id": str("The id a custom_tool_call_output answers."),
			"name":    str("The tool."),
			"input":   str("The tool's input (empty while it opens)."),
		}, "type", "id", "status", "call_id", "name", "input"),
		rsUsage: obj("Tokens the call used.", object{
			"input_tokens":          integer("Prompt tokens."),
			"input_tokens_details":  obj("", object{"cached_tokens": integer("Always 0.")}, "cached_tokens"),
			"output_tokens":         integer("Reply tokens."),
			"output_tokens_details": obj("", object{"reasoning_tokens": integer("Always 0.")}, "reasoning_tokens"),
			"total_tokens":          integer("Their sum."),
		}, "input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens"),
		rsResponse: obj("A response: the answer, or the response of a stream's lifecycle events.", object{
			"id":                   str("resp_…"),
			"object":               object{"const": "response"},
			"created_at":           integer("Unix seconds."),
			"status":               enum("What became of it.", "in_progress", "completed", "incomplete", "failed"),
			"model":                str("The model spec requested."),
			"output":               array("The output items, in order.", object{"oneOf": []any{schemaRef(rsMessage), schemaRef(rsFunctionCall), schemaRef(rsCustomToolCall)}}),
			"usage":                object{"description": "Set once finished.", "oneOf": []any{schemaRef(rsUsage), object{"type": "null"}}},
			"error":                object{"description": "Set when failed: code (rate_limit_exceeded, invalid_request, server_error) and message.", "oneOf": []any{obj("", object{"code": str(""), "message": str("")}, "code", "message"), object{"type": "null"}}},
			"incomplete_details":   object{"description": "Set when incomplete: reason max_output_tokens or content_filter.", "oneOf": []any{obj("", object{"reason": enum("", "max_output_tokens", "content_filter")}, "reason"), object{"type": "null"}}},
			"instructions":         object{"type": []any{"string", "null"}, "description": "The request's instructions."},
			"max_output_tokens":    object{"type": []any{"integer", "null"}, "description": "The request's bound."},
			"parallel_tool_calls":  boolean("The request's, true when not given."),
			"previous_response_id": object{"type": "null", "description": "Always null."},
			"store":                object{"const": false, "description": "Always false: the gateway stores nothing."},
			"temperature":          object{"type": []any{"number", "null"}, "description": "The request's."},
			"top_p":                object{"type": []any{"number", "null"}, "description": "The request's."},
			"tool_choice":          anyJSON("The request's; auto when not given."),
			"tools":                array("The request's tools.", schemaRef(rsTool)),
			"metadata":             object{"type": "object", "description": "Always empty.", "additionalProperties": object{"type": "string"}},
		}, "id", "object", "created_at", "status", "model", "output"),
		rsEvent: obj("One event of a streamed response; which fields are set depends on type.", object{
			"type":            str("response.created, response.in_progress, response.output_item.added, …"),
			"sequence_number": integer("0, 1, 2, … in the order sent."),
			"response":        schemaRef(rsResponse),
			"output_index":    integer("The output item the event is about."),
			"content_index":   integer("The content part the event is about (0)."),
			"item_id":         str("The id of the output item the event is about."),
			"item":            object{"oneOf": []any{schemaRef(rsMessage), schemaRef(rsFunctionCall), schemaRef(rsCustomToolCall)}, "description": "The item of output_item.added and .done."},
			"part":            textPart,
			"delta":           str("Text or arguments to append."),
			"text":            str("The whole text, in output_text.done."),
			"arguments":       str("The whole arguments, in function_call_arguments.done."),
		}, "type", "sequence_number"),
		rsFrame: obj("One Server-Sent Event of a streamed response.", object{
			"event": str("The event's type."),
			"data": object{
				"type":             "string",
				"description":      "The event as JSON.",
				"contentMediaType": "application/json",
				"contentSchema":    schemaRef(rsEvent),
			},
		}, "event", "data"),
		rsError: obj("An error in OpenAI's shape.", object{
			"error": obj("", object{
				"message": str("What went wrong."),
				"type":    enum("The kind of error.", "invalid_request_error", "permission_error", "rate_limit_error", "server_error", "invalid_api_key"),
				"code":    object{"type": []any{"string", "null"}, "description": "model_not_found (404), rate_limit_exceeded (429), else null."},
				"param":   object{"type": []any{"string", "null"}, "description": "The request field at fault, when one is."},
			}, "message", "type", "code", "param"),
		}, "error"),
	}
}
