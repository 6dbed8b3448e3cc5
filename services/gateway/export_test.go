package gateway

// Patterns returns the patterns of g's top-level mux.
func Patterns(g *Gateway) []string { return g.patterns }

// APIPrefixes are the paths grpc-gateway serves.
var APIPrefixes = apiPrefixes

// LLMMount is where the LLM gateway's API is served.
const LLMMount = llmMount
