package openapigen

// The LLM gateway's OpenAI-compatible API (services/llmgw/httpapi.go) as the
// gateway proxies it at /v1. services/llmgw's tests compare these schemas'
// properties with its wire types and its routes with this document.

const (
	oaRequest   = "openai.ChatCompletionRequest"
	oaMessage   = "openai.ChatMessage"
	oaToolCall  = "openai.ToolCall"
	oaTool      = "openai.Tool"
	oaChoice    = "openai.ChatCompletion"
	oaChunk     = "openai.ChatCompletionChunk"
	oaUsage     = "openai.Usage"
	oaModelList = "openai.ModelList"
	oaError     = "openai.Error"
	oaFrame     = "openai.ChatCompletionFrame"
	oaModel     = "openai.Model"
	oaEmbedReq  = "openai.EmbeddingsRequest"
	oaEmbedList = "openai.Embeddings"
)

// accountingHeaders are what the LLM gateway reports of a call: headers of a
// whole answer, trailers of a stream.
func accountingHeaders() object {
	h := func(desc string) object { return object{"description": desc, "schema": object{"type": "integer"}} }
	return object{
		"x-wick-input-tokens":   h("Prompt tokens the call used (a trailer of a stream)."),
		"x-wick-output-tokens":  h("Completion tokens the call used (a trailer of a stream)."),
		"x-wick-overhead-us":    h("Microseconds the LLM gateway itself added (a trailer of a stream)."),
		"x-wick-cost-micro-usd": h("What the call cost in millionths of a US dollar, when the models file prices the model that answered (a trailer of a stream)."),
	}
}

func chatCompletionsOp() object {
	return object{
		"tags":        []any{openAITag},
		"operationId": "OpenAI_CreateChatCompletion",
		"summary":     "Creates a chat completion, streamed or not, with tools (OpenAI's Chat Completions API).",
		"description": "The model is a Wick model spec (openai:gpt-4o-mini, anthropic:…, ollama:…, script:<name>); " +
			"an empty model uses the LLM gateway's default. With stream true the answer is Server-Sent Events: one " +
			"`data: <ChatCompletionChunk>` frame per delta, a last chunk with the finish_reason (and one with usage " +
			"when stream_options.include_usage), then `data: [DONE]`; a failure after the first chunk is a frame " +
			"`data: {\"error\": …}`. The gateway's body limit applies (413, an Error).",
		"requestBody": object{"required": true, "content": jsonContent(schemaRef(oaRequest))},
		"responses": object{
			"200": object{
				"description": "The completion, or its stream when stream is true.",
				"headers":     accountingHeaders(),
				"content": object{
					"application/json":  object{"schema": schemaRef(oaChoice)},
					"text/event-stream": object{"schema": schemaRef(oaFrame)},
				},
			},
			"413":     responseRef(errorResponse),
			"default": object{"description": "The LLM gateway refused or failed the call, in OpenAI's error shape.", "content": jsonContent(schemaRef(oaError))},
		},
	}
}

func modelsOp() object {
	return object{
		"tags":        []any{openAITag},
		"operationId": "OpenAI_ListModels",
		"summary":     "Lists the models the LLM gateway is configured with.",
		"responses": object{
			"200":     object{"description": "The models.", "content": jsonContent(schemaRef(oaModelList))},
			"default": object{"description": "The LLM gateway failed, in OpenAI's error shape.", "content": jsonContent(schemaRef(oaError))},
		},
	}
}

func modelOp() object {
	return object{
		"tags":        []any{openAITag},
		"operationId": "OpenAI_RetrieveModel",
		"summary":     "Describes one configured model, chat or embedding.",
		"parameters": []any{object{
			"name": "id", "in": "path", "required": true, "schema": object{"type": "string"},
			"description": "The model's id, as GET /v1/models lists it (the offline embedder wick-hash-384 too).",
		}},
		"responses": object{
			"200":     object{"description": "The model.", "content": jsonContent(schemaRef(oaModel))},
			"404":     object{"description": "No such model: code model_not_found.", "content": jsonContent(schemaRef(oaError))},
			"default": object{"description": "The LLM gateway failed, in OpenAI's error shape.", "content": jsonContent(schemaRef(oaError))},
		},
	}
}

func embeddingsOp() object {
	return object{
		"tags":        []any{openAITag},
		"operationId": "OpenAI_CreateEmbeddings",
		"summary":     "Embeds texts with one embedding model (OpenAI's Embeddings API).",
		"description": "One model, never a fallback chain: vectors of two models do not compare. At most 2048 inputs of " +
			"at most 65536 bytes each, within the gateway's body limit. Vectors are normalised to unit length.",
		"requestBody": object{"required": true, "content": jsonContent(schemaRef(oaEmbedReq))},
		"responses": object{
			"200":     object{"description": "The vectors, in input order.", "content": jsonContent(schemaRef(oaEmbedList))},
			"404":     object{"description": "No such model: code model_not_found.", "content": jsonContent(schemaRef(oaError))},
			"413":     responseRef(errorResponse),
			"default": object{"description": "The LLM gateway refused or failed the call, in OpenAI's error shape.", "content": jsonContent(schemaRef(oaError))},
		},
	}
}

func openAISchemas() map[string]object {
	nonNegative := func(desc string) object {
		o := integer(desc)
		o["minimum"] = 0
		return o
	}
	temperature := object{"type": "number", "minimum": 0, "maximum": 2, "description": "Sampling temperature."}
	textPart := obj("", object{"type": object{"const": "text"}, "text": object{"type": "string"}}, "type", "text")
	imagePart := obj("An image, on a user message, for a model that accepts images.", object{
		"type": object{"const": "image_url"},
		"image_url": obj("", object{
			"url":    str("A data: URL (base64) or an http(s) URL, which the gateway fetches through its network guard."),
			"detail": enum("Passed to OpenAI-compatible upstreams.", "auto", "low", "high"),
		}, "url"),
	}, "type", "image_url")
	content := object{
		"description": "The content: a string, null, or an array of text parts and (on user messages) image_url parts; other parts are refused.",
		"oneOf": []any{
			object{"type": "string"},
			object{"type": "null"},
			object{"type": "array", "items": object{"oneOf": []any{textPart, imagePart}}},
		},
	}
	function := obj("", object{
		"name":      str("The tool's name."),
		"arguments": str("The arguments as JSON text."),
	}, "arguments")
	finish := str("Why the model stopped: stop, tool_calls, length or content_filter.")
	usage := obj("Tokens the call used.", object{
		"prompt_tokens":     integer("Prompt tokens."),
		"completion_tokens": integer("Completion tokens."),
		"total_tokens":      integer("Their sum."),
	}, "prompt_tokens", "completion_tokens", "total_tokens")
	answer := obj("The assistant's message.", object{
		"role":       object{"const": "assistant"},
		"content":    object{"type": []any{"string", "null"}, "description": "The text; null when the message only calls tools."},
		"tool_calls": array("The tools the model calls.", schemaRef(oaToolCall)),
	}, "role", "content")
	delta := obj("What the chunk adds to the message.", object{
		"role":       object{"const": "assistant", "description": "Set in the first chunk."},
		"content":    str("Text to append."),
		"tool_calls": array("Pieces of tool calls, by index.", schemaRef(oaToolCall)),
	})
	finishOrNull := object{"type": []any{"string", "null"}, "description": "Set in the last chunk of the choice: stop, tool_calls, length or content_filter."}
	return map[string]object{
		oaRequest: obj("A Chat Completions request. Unknown fields are ignored, as OpenAI-compatible servers do.", object{
			"model":    str("A Wick model spec; empty uses the LLM gateway's default model."),
			"messages": object{"type": "array", "minItems": 1, "description": "The conversation.", "items": schemaRef(oaMessage)},
			"tools":    array("Tools the model may call.", schemaRef(oaTool)),
			"stream":   boolean("Stream the answer as Server-Sent Events."),
			"stream_options": obj("Options of a stream.", object{
				"include_usage": boolean("Send a last chunk with the usage."),
			}),
			"max_tokens":            nonNegative("Bound on the completion's tokens."),
			"max_completion_tokens": nonNegative("Bound on the completion's tokens; wins over max_tokens."),
			"temperature":           temperature,
		}, "messages"),
		oaMessage: obj("A message of the conversation.", object{
			"role":         enum("developer is taken as system.", "system", "developer", "user", "assistant", "tool"),
			"content":      content,
			"tool_calls":   array("The calls of an assistant message; each needs id and function.name.", schemaRef(oaToolCall)),
			"tool_call_id": str("The call a tool message answers; required on tool messages."),
			"name":         str("The tool's name, on a tool message."),
		}, "role"),
		oaToolCall: obj("A tool call, or in a chunk a piece of one.", object{
			"index":    integer("The call's position, in chunks only."),
			"id":       str("The call's id."),
			"type":     object{"const": "function"},
			"function": function,
		}, "function"),
		oaTool: obj("A tool the model may call.", object{
			"type": object{"const": "function", "description": "Only function tools are supported."},
			"function": obj("", object{
				"name":        str("The tool's name."),
				"description": str("What the tool does."),
				"parameters":  object{"type": "object", "description": "The JSON Schema of the arguments.", "additionalProperties": true},
			}, "name"),
		}, "function"),
		oaChoice: obj("A whole completion.", object{
			"id":      str("chatcmpl-…"),
			"object":  object{"const": "chat.completion"},
			"created": integer("Unix seconds."),
			"model":   str("The model spec requested."),
			"choices": array("One choice.", obj("", object{
				"index":         integer("0."),
				"message":       answer,
				"finish_reason": finish,
			}, "index", "message", "finish_reason")),
			"usage": schemaRef(oaUsage),
		}, "id", "object", "created", "model", "choices", "usage"),
		oaChunk: obj("One chunk of a streamed completion.", object{
			"id":      str("chatcmpl-…, the same in every chunk."),
			"object":  object{"const": "chat.completion.chunk"},
			"created": integer("Unix seconds."),
			"model":   str("The model spec requested."),
			"choices": array("One choice; empty in the usage chunk.", obj("", object{
				"index":         integer("0."),
				"delta":         delta,
				"finish_reason": finishOrNull,
			}, "index", "delta", "finish_reason")),
			"usage": schemaRef(oaUsage),
		}, "id", "object", "created", "model", "choices"),
		oaUsage: usage,
		oaFrame: obj("One Server-Sent Event of a streamed completion: `data:` only, no id or event.", object{
			"data": object{
				"type":             "string",
				"description":      "A chunk as JSON; an {\"error\": …} object for a failure mid-stream; [DONE] to end.",
				"contentMediaType": "application/json",
				"contentSchema":    object{"oneOf": []any{schemaRef(oaChunk), schemaRef(oaError)}},
			},
		}, "data"),
		oaModelList: obj("The models.", object{
			"object": object{"const": "list"},
			"data": array("One entry per configured model.", obj("", object{
				"id":       str("The model spec."),
				"object":   object{"const": "model"},
				"created":  integer("0."),
				"owned_by": str("The model's provider."),
			}, "id", "object", "created", "owned_by")),
		}, "object", "data"),
		oaError: obj("An error in OpenAI's shape.", object{
			"error": obj("", object{
				"message": str("What went wrong."),
				"type":    enum("The kind of error.", "invalid_request_error", "permission_error", "rate_limit_error", "server_error", "invalid_api_key"),
				"param":   object{"type": []any{"string", "null"}, "description": "The request field at fault, when one is."},
				"code":    object{"type": []any{"string", "null"}, "description": "model_not_found (404), unknown_url (404), rate_limit_exceeded, or null."},
			}, "message", "type", "param", "code"),
		}, "error"),
		oaModel: obj("A model.", object{
			"id":       str("The model's id."),
			"object":   object{"const": "model"},
			"created":  integer("0."),
			"owned_by": str("The model's provider."),
		}, "id", "object", "created", "owned_by"),
		oaEmbedReq: obj("An Embeddings request. Unknown fields are ignored.", object{
			"model": str("An embedding model: configured, provider:model, or wick-hash-<dims>; empty uses the gateway's default embedding model."),
			"input": object{
				"description": "One text or an array of 1..2048 texts, each non-empty and at most 65536 bytes (token arrays are refused).",
				"oneOf":       []any{object{"type": "string"}, object{"type": "array", "items": object{"type": "string"}}},
			},
			"encoding_format": enum("float (default) or base64 (little-endian float32s).", "float", "base64"),
			"dimensions":      object{"type": "integer", "minimum": 1, "description": "The vectors' size: sent to OpenAI models; any other model must already make that size, else 400."},
		}, "input"),
		oaEmbedList: obj("The vectors.", object{
			"object": object{"const": "list"},
			"data": array("One per input, in order.", obj("", object{
				"object":    object{"const": "embedding"},
				"index":     integer("The input's position."),
				"embedding": object{"description": "The vector: numbers, or a base64 string.", "oneOf": []any{object{"type": "array", "items": object{"type": "number"}}, object{"type": "string"}}},
			}, "object", "index", "embedding")),
			"model": str("The model requested."),
			"usage": obj("Tokens the call used (0 for the offline embedder).", object{
				"prompt_tokens": integer("Input tokens."),
				"total_tokens":  integer("The same."),
			}, "prompt_tokens", "total_tokens"),
		}, "object", "data", "model", "usage"),
	}
}
