package openapigen

import (
	"fmt"
	"strings"
)

// The gateway's defaults the document states. They are literals here
// because this generator must build before gen/openapi exists (the gateway
// embeds the document); services/gateway's tests compare them with the
// gateway's constants.
const (
	maxBodyBytes      = 4 << 20   // gateway.DefaultMaxBodyBytes
	maxUploadBytes    = 100 << 20 // gateway.DefaultMaxUploadBytes
	terminalReadLimit = 64 << 10  // gateway.DefaultTerminalReadLimit
	terminalRows      = 24        // the terminal's default size
	terminalCols      = 80
	accessTokenParam  = "access_token" // gateway.AccessTokenParam
)

// Names of what this package adds to the document's components and tags.
const (
	bearerScheme      = "bearer"
	queryTokenScheme  = "access_token"
	errorResponse     = "Error"
	streamErrResponse = "StreamError"
	unauthResponse    = "Unauthenticated"
	healthSchema      = "Health"
	terminalSchema    = "TerminalControl"
	uploadSchema      = "wick.agent.v1.UploadFileResponse"
	gatewayTag        = "Gateway"
	openAITag         = "OpenAI"
	anthropicTag      = "Anthropic"
	agentTag          = "AgentService"
	maxBytesExtension = "x-wick-max-bytes"
)

// codeNames are the names the gateway gives gRPC codes 0–16 in Error.status
// (httperr.CodeName; compared by services/gateway's tests).
var codeNames = []string{
	"OK", "CANCELED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// publicCodes are the codes whose messages the gateway passes on
// (httperr.Public; compared by services/gateway's tests).
var publicCodes = []string{
	"INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED",
	"ALREADY_EXISTS", "UNAUTHENTICATED", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "CANCELED",
}

// describeErrors replaces the generator's google.rpc.Status error responses
// with the body the gateway writes (services/gateway/internal/httperr).
func describeErrors(doc object, bindings []*binding) error {
	for _, b := range bindings {
		resp := ensure(b.op, "responses")
		if b.method.IsStreamingServer() {
			resp["default"] = responseRef(streamErrResponse)
		} else {
			resp["default"] = responseRef(errorResponse)
		}
	}
	code := integer("The gRPC status code.")
	code["format"] = "int32"
	code["minimum"], code["maximum"] = 0, len(codeNames)-1
	s := obj("The body of every error the gateway answers, and the data of the error frame of a failed Server-Sent "+
		"Events stream.", object{
		"code":   code,
		"status": enum("The code's name.", codeNames...),
		"message": str("What went wrong. For " + strings.Join(publicCodes, ", ") + " these are the service's own " +
			"words, written for the caller; for the other codes a plain sentence (internal error; service unavailable; " +
			"try again; the request timed out), while the full error is logged under trace_id."),
		"trace_id": str("The request's trace id, under which the gateway logged the error; quote it when reporting " +
			"a problem. Absent when the request was not traced, and on errors the gateway raises itself " +
			"(401, 413, no route)."),
	}, "code", "status", "message")
	if err := addComponent(doc, "schemas", errorSchema, s); err != nil {
		return err
	}
	if err := addComponent(doc, "responses", errorResponse, object{
		"description": "The request failed. The HTTP status follows the gRPC code: 400 INVALID_ARGUMENT, " +
			"FAILED_PRECONDITION, OUT_OF_RANGE; 401 UNAUTHENTICATED; 403 PERMISSION_DENIED; 404 NOT_FOUND; " +
			"409 ALREADY_EXISTS, ABORTED; 429 RESOURCE_EXHAUSTED (413 for a body over the limit); 499 CANCELED; " +
			"500 INTERNAL, UNKNOWN, DATA_LOSS; 501 UNIMPLEMENTED (405 for a method the route does not allow); " +
			"503 UNAVAILABLE (also when the token verifier is down); 504 DEADLINE_EXCEEDED.",
		"content": jsonContent(schemaRef(errorSchema)),
	}); err != nil {
		return err
	}
	if err := addComponent(doc, "responses", streamErrResponse, object{
		"description": "The stream failed before its first event, or the request was refused. The HTTP status " +
			"follows the gRPC code as for every error. An SSE request gets an Error; an application/json request " +
			"gets an Error when it is refused before the stream starts (token, body, route) and " +
			"{\"error\": google.rpc.Status} when the stream fails.",
		"content": jsonContent(object{"oneOf": []any{
			schemaRef(errorSchema),
			obj("", object{"error": schemaRef(statusSchema)}, "error"),
		}}),
	}); err != nil {
		return err
	}
	return addComponent(doc, "responses", unauthResponse, object{
		"description": "The token is missing or unknown.",
		"headers": object{"WWW-Authenticate": object{
			"description": `Bearer realm="wick"`,
			"schema":      object{"type": "string"},
		}},
		"content": jsonContent(schemaRef(errorSchema)),
	})
}

// addGatewayRoutes describes what the gateway serves besides grpc-gateway's
// mapping of the protos (services/gateway/gateway.go New).
func addGatewayRoutes(doc object) error {
	paths := ensure(doc, "paths")
	routes := map[string]object{
		"/health":                                {"get": healthOp()},
		"/openapi.json":                          {"get": openAPIOp()},
		"/metrics":                               {"get": metricsOp()},
		"/agents/{agent_id}/files/raw/{path}":    rawFileItem(),
		"/agents/{agent_id}/terminal":            {"get": terminalOp()},
		"/ag-ui/agents/{agent_id}":               {"post": agUIOp()},
		a2aPath:                                  {"post": a2aRPCOp()},
		a2aPath + "/.well-known/agent-card.json": {"get": a2aCardOp()},
		"/ai-sdk/agents/{agent_id}/chat":         {"post": aiSDKChatOp()},
		"/mcp":                                   mcpItem(),
		"/v1/chat/completions":                   {"post": chatCompletionsOp()},
		"/v1/models":                             {"get": modelsOp()},
		"/v1/models/{id}":                        {"get": modelOp()},
		"/v1/embeddings":                         {"post": embeddingsOp()},
		"/v1/messages":                           {"post": messagesOp()},
		"/v1/messages/count_tokens":              {"post": countTokensOp()},
		"/v1/responses":                          {"post": responsesOp()},
	}
	for _, p := range sortedKeys(routes) {
		if _, dup := paths[p]; dup {
			return fmt.Errorf("path %s is generated from the protos too", p)
		}
		paths[p] = routes[p]
	}
	components := map[string]object{
		healthSchema:   healthSchemaObject(),
		terminalSchema: terminalControlSchema(),
		uploadSchema: obj("UploadFileResponse reports an upload (the answer of a raw file PUT).", object{
			"path":          str("path is the file written."),
			"bytes_written": object{"type": "string", "format": "int64", "description": "bytes_written is the new file's size."},
		}),
	}
	for name, s := range openAISchemas() {
		components[name] = s
	}
	for name, s := range anthropicSchemas() {
		components[name] = s
	}
	for name, s := range aiSDKSchemas() {
		components[name] = s
	}
	for name, s := range responsesSchemas() {
		components[name] = s
	}
	for _, name := range sortedKeys(components) {
		if err := addComponent(doc, "schemas", name, components[name]); err != nil {
			return err
		}
	}
	tags, _ := doc["tags"].([]any)
	doc["tags"] = append(tags,
		object{"name": gatewayTag, "description": "The gateway's own endpoints: health, this document, metrics."},
		object{"name": mcpTag, "description": "A Model Context Protocol server whose tools are the caller's agents."},
		object{"name": openAITag, "description": "The LLM gateway's OpenAI-compatible API, proxied at /v1 for " +
			"authenticated users: any OpenAI SDK can use Wick's models, fallback chains and keys. Present when the " +
			"gateway is connected to an LLM gateway (always in the single-process suite)."},
		object{"name": aiSDKTag, "description": "The Vercel AI SDK's chat protocol over Wick's runs (docs/protocols.md)."},
		object{"name": anthropicTag, "description": "The LLM gateway's Anthropic Messages API, proxied at /v1 for " +
			"authenticated users (the token as a bearer token or as x-api-key): Anthropic's SDKs and Claude Code can " +
			"use Wick's models, fallback chains and keys. Present when the gateway is connected to an LLM gateway."},
	)
	return nil
}

func healthOp() object {
	return object{
		"tags":        []any{gatewayTag},
		"operationId": "Gateway_Health",
		"summary":     "Health of the gateway and of the services behind it.",
		"description": "Asks every configured service's grpc.health.v1, each within 2 s. Needs no token; with a " +
			"valid one the answer also counts the caller's agents. Never cached.",
		"security": []any{object{}, object{bearerScheme: []any{}}, object{queryTokenScheme: []any{}}},
		"responses": object{
			"200": object{"description": "Every service serves.", "content": jsonContent(schemaRef(healthSchema))},
			"503": object{"description": "A service does not serve.", "content": jsonContent(schemaRef(healthSchema))},
		},
	}
}

func healthSchemaObject() object {
	services := object{
		"type": "object",
		"description": "Each service (gateway, agent, and sandbox and llmgw when configured) and whether it serves. " +
			"Why one does not is logged, never answered: the endpoint needs no token.",
		"additionalProperties": enum("", "SERVING", "NOT_SERVING"),
	}
	return obj("The /health answer.", object{
		"status":   enum("ok when every service serves, else degraded.", "ok", "degraded"),
		"services": services,
		"agents": integer("The number of agents the caller can use; present only when the request authenticates " +
			"(or the gateway runs without tokens)."),
	}, "status", "services")
}

func openAPIOp() object {
	return object{
		"tags":        []any{gatewayTag},
		"operationId": "Gateway_OpenAPI",
		"summary":     "This document.",
		"description": "The OpenAPI 3.1 document `make gen` generates from the protos (docs/api.md). Needs no token.",
		"security":    []any{},
		"responses": object{"200": object{
			"description": "The document.",
			"content":     jsonContent(object{"type": "object", "description": "An OpenAPI 3.1 document."}),
		}},
	}
}

func metricsOp() object {
	return object{
		"tags":        []any{gatewayTag},
		"operationId": "Gateway_Metrics",
		"summary":     "Prometheus metrics of the gateway's process.",
		"description": "Served only when the operator turns it on (-public-metrics); otherwise 404, and the metrics " +
			"are on the process's own -metrics-addr listener. Every metric of the process: " +
			"wick_gateway_http_requests_total{method,route,code}, wick_gateway_http_request_duration_seconds{method,route}, " +
			"wick_gateway_sse_streams, the OpenTelemetry instruments (wick_llm_* in one process), and the Go and process " +
			"collectors (docs/observability.md). Users' tokens do not apply: with -metrics-token it needs that bearer token.",
		"security": []any{},
		"responses": object{
			"200": object{
				"description": "The metrics in the Prometheus text exposition format.",
				"content":     object{"text/plain": object{"schema": object{"type": "string"}}},
			},
			"401": object{"description": "-metrics-token is set and the request does not carry it."},
			"404": object{"description": "Metrics are not served on this listener (no -public-metrics)."},
		},
	}
}

func rawFileItem() object {
	params := []any{
		object{"name": "agent_id", "in": "path", "required": true, "description": "The agent.", "schema": object{"type": "string"}},
		object{"name": "path", "in": "path", "required": true,
			"description": "The file's agent-facing path without its leading slash: …/files/raw/workspace%2Fa.txt " +
				"is /workspace/a.txt. Its slashes may be escaped (%2F), as OpenAPI clients send them, or sent as they " +
				"are (…/files/raw/workspace/a.txt): the route takes the rest of the URL path.",
			"schema": object{"type": "string"}},
	}
	download := func(id, summary string, body bool) object {
		content := object{}
		if body {
			content["application/octet-stream"] = object{"schema": object{"type": "string", "contentMediaType": "application/octet-stream"}}
		}
		ok := object{
			"description": "The file. User content is never rendered on the API's origin: it is sent as " +
				"application/octet-stream, with nosniff and as an attachment.",
			"headers": object{
				"Content-Length":      object{"description": "The file's size.", "schema": object{"type": "integer"}},
				"Content-Disposition": object{"description": `attachment; filename="<base name>"`, "schema": object{"type": "string"}},
			},
		}
		if body {
			ok["content"] = content
		}
		return object{
			"tags":        []any{agentTag},
			"operationId": id,
			"summary":     summary,
			"description": "Streams DownloadFile. The status is decided before the first byte (404 for a missing " +
				"file); a failure after it cuts the connection short of Content-Length.",
			"responses": object{"200": ok, "default": responseRef(errorResponse)},
		}
	}
	put := object{
		"tags":        []any{agentTag},
		"operationId": "AgentService_UploadFile",
		"summary":     "Writes a workspace file from the raw request body.",
		"description": fmt.Sprintf("Streams the body into UploadFile. The file is written only when the upload "+
			"completes: a body over the limit (%d bytes by default, the gateway's -max-upload-bytes) is a 413 — "+
			"before anything is sent when Content-Length says so, else when the limit is crossed — and leaves no "+
			"file.", maxUploadBytes),
		"requestBody": object{
			"required":        true,
			maxBytesExtension: maxUploadBytes,
			"content": object{"application/octet-stream": object{
				"schema": object{"type": "string", "contentMediaType": "application/octet-stream"},
			}},
		},
		"responses": object{
			"200":     object{"description": "The file was written.", "content": jsonContent(schemaRef(uploadSchema))},
			"413":     responseRef(errorResponse),
			"default": responseRef(errorResponse),
		},
	}
	return object{
		"parameters": params,
		"get":        download("AgentService_DownloadFile", "Reads a workspace file as raw bytes.", true),
		"head":       download("AgentService_StatFile", "The headers of a download (the file's size) without its bytes.", false),
		"put":        put,
	}
}

func terminalOp() object {
	desc := strings.Join([]string{
		"Opens an interactive shell in the agent's sandbox over a WebSocket (RFC 6455): a GET with " +
			"`Connection: Upgrade`, `Upgrade: websocket` and the handshake headers, answered with 101 Switching " +
			"Protocols. The agent is looked up before the upgrade, so a missing token or an unknown agent is a " +
			"plain HTTP error. Browsers cannot set headers on a WebSocket: send the token as ?" + accessTokenParam +
			"=. The Origin must be the gateway's own or one of its -cors-origins (403 otherwise).",
		"Client to server: a binary frame is keyboard input, passed to the shell as is; a text frame is a JSON " +
			"TerminalControl, {\"type\":\"resize\",\"rows\":R,\"cols\":C} (each 1–65535) or " +
			"{\"type\":\"input\",\"data\":\"…\"} (input as text, as xterm.js sends it). " +
			fmt.Sprintf("A frame is at most %d bytes.", terminalReadLimit),
		"Server to client: a binary frame is the terminal's output. When the shell exits, a text frame " +
			"{\"type\":\"exit\",\"code\":N}, then the close.",
		"Close codes: 1000 when the shell exits, the terminal closes or the client closes; 1008 for a text frame " +
			"that is not a TerminalControl; 1009 for a frame over the limit; 1011 for an internal error; 4000 + the " +
			"gRPC code when the service ends the session (4005 NOT_FOUND, 4014 UNAVAILABLE), with the message an " +
			"Error would carry as the reason.",
	}, "\n\n")
	size := func(name, what string, def int) object {
		return object{"name": name, "in": "query", "description": "The terminal's initial " + what + ".",
			"schema": object{"type": "integer", "minimum": 1, "maximum": 65535, "default": def}}
	}
	return object{
		"tags":        []any{agentTag},
		"operationId": "AgentService_Terminal",
		"summary":     "An interactive shell in the agent's sandbox, over a WebSocket.",
		"description": desc,
		"parameters": []any{
			object{"name": "agent_id", "in": "path", "required": true, "description": "The agent.", "schema": object{"type": "string"}},
			size("rows", "number of lines", terminalRows),
			size("cols", "number of columns", terminalCols),
		},
		// Not part of OpenAPI, which has no WebSocket: the frames for tools
		// and SDK generators that read them.
		"x-wick-websocket": object{
			"maxFrameBytes": terminalReadLimit,
			"client":        object{"binary": "Keyboard input.", "text": schemaRef(terminalSchema)},
			"server":        object{"binary": "Terminal output.", "text": schemaRef(terminalSchema)},
		},
		"responses": object{
			"101": object{"description": "The WebSocket session; its frames are described above and in TerminalControl."},
			"400": object{"description": "rows or cols out of range (an Error); a malformed WebSocket handshake " +
				"(version, key) is a 400 with a plain-text reason.", "content": jsonContent(schemaRef(errorSchema))},
			"426":     object{"description": "Not a WebSocket upgrade request (plain-text reason)."},
			"default": responseRef(errorResponse),
		},
	}
}

func terminalControlSchema() object {
	code := integer("The shell's exit code, in an exit frame.")
	code["format"] = "int32"
	dim := func(what string) object {
		o := integer("The new number of " + what + ", in a resize frame.")
		o["minimum"], o["maximum"] = 1, 65535
		return o
	}
	return obj("A text frame of the terminal WebSocket.", object{
		"type": enum("resize or input from the client; exit from the server.", "resize", "input", "exit"),
		"rows": dim("lines"),
		"cols": dim("columns"),
		"data": str("The input text, in an input frame."),
		"code": code,
	}, "type")
}

// addSecurity declares the bearer token and its query-parameter form, and
// requires them on every operation that does not say otherwise.
func addSecurity(doc object) error {
	schemes := ensure(doc, "components", "securitySchemes")
	schemes[bearerScheme] = object{
		"type": "http", "scheme": "bearer",
		"description": "Authorization: Bearer <token>. Tokens map to users (-tokens-file, WICK_TOKENS) or are " +
			"checked by an external verifier (-verifier-url). A gateway configured with neither serves everyone " +
			"as the single user local, and only on an IP address or localhost.",
	}
	schemes[queryTokenScheme] = object{
		"type": "apiKey", "in": "query", "name": accessTokenParam,
		"description": "The bearer token as a query parameter, for clients that cannot set headers (EventSource, " +
			"WebSocket). Accepted on GET only; removed from the URL before the request is traced or logged.",
	}
	doc["security"] = []any{object{bearerScheme: []any{}}}
	return operations(doc, func(_, method string, op object) error {
		if _, own := op["security"]; own {
			return nil
		}
		if method == "get" {
			op["security"] = []any{object{bearerScheme: []any{}}, object{queryTokenScheme: []any{}}}
		}
		ensure(op, "responses")["401"] = responseRef(unauthResponse)
		return nil
	})
}

func setInfo(doc object) {
	doc["info"] = object{
		"title":   "Wick API",
		"version": APIVersion,
		"description": "The REST API of Wick's gateway: agents, runs streamed as Server-Sent Events, threads, " +
			"workspace files, a terminal WebSocket, and the LLM gateway's OpenAI-compatible API. Generated from the " +
			"protos by `make gen` (docs/api.md). JSON uses the proto field names; empty fields are left out and " +
			"64-bit integers are strings (protojson); unknown request fields are refused with a 400. " +
			fmt.Sprintf("A JSON request body is at most %d bytes by default (-max-body-bytes; 413 beyond). ", maxBodyBytes) +
			"A trailing slash on an API path is ignored (/agents/ is /agents).",
	}
}
