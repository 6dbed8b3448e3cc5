// Command wick-gateway serves Wick's REST, SSE and WebSocket API in front of
// the agent service, and the agent service over gRPC (-grpc-addr) to
// external clients with the same bearer tokens. Its gRPC server is that
// public API (TLS from -grpc-tls-cert); -tls-cert and the other common TLS
// flags are the certificate it presents to the agent service.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/platform/dial"
	"github.com/wick-agent/wick/platform/server"
	"github.com/wick-agent/wick/services/gateway"
)

func main() {
	var (
		httpAddr   string
		agentAddr  string
		llmHTTP    string
		sandbox    string
		llm        string
		tokensFile string
		tokens     string
		verifier   string
		origins    string
		cfg        gateway.Config
	)
	define := func(fs *flag.FlagSet) {
		fs.StringVar(&httpAddr, "http-addr", gateway.DefaultHTTPAddr, "HTTP listen address")
		fs.StringVar(&agentAddr, "agent-addr", "127.0.0.1:7001", "agent service gRPC address: "+dial.TargetHelp)
		fs.StringVar(&llmHTTP, "llm-http-addr", "", "LLM gateway's OpenAI-compatible HTTP base URL, proxied at /v1/ (e.g. http://llmgw:8080)")
		fs.StringVar(&cfg.LLMToken, "llm-http-token", "", "bearer token the LLM gateway's HTTP endpoint requires, if any")
		fs.StringVar(&sandbox, "sandbox-addr", "", "sandbox service gRPC address, for /health: "+dial.TargetHelp)
		fs.StringVar(&llm, "llm-addr", "", "LLM gateway gRPC address, for /health: "+dial.TargetHelp)
		fs.StringVar(&tokensFile, "tokens-file", "", `bearer token file: lines "token user [org1,org2]", or a JSON object {"token":"user"} (a value may be {"user":…,"orgs":[…]})`)
		fs.StringVar(&tokens, "tokens", "", "bearer tokens as token:user pairs separated by commas (prefer WICK_TOKENS or a file)")
		fs.StringVar(&verifier, "verifier-url", "", "external token verifier URL; GET with the bearer token, answers {\"user\":…}")
		fs.DurationVar(&cfg.VerifierCacheTTL, "verifier-cache-ttl", 30*time.Second, "how long the verifier's answers are cached")
		fs.StringVar(&origins, "cors-origins", "", "comma-separated origins allowed to call the API from a browser (\"*\" for any)")
		fs.StringVar(&cfg.UIDir, "ui-dir", "", "directory of the UI's built files, served with SPA fallback")
		fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", gateway.DefaultMaxBodyBytes, "largest request body")
		fs.Int64Var(&cfg.MaxUploadBytes, "max-upload-bytes", gateway.DefaultMaxUploadBytes, "largest raw file upload")
		fs.DurationVar(&cfg.Heartbeat, "sse-heartbeat", gateway.DefaultHeartbeat, "idle time before an SSE comment heartbeat")
		fs.StringVar(&cfg.GRPC.CertFile, "grpc-tls-cert", "", "PEM certificate of the gRPC API (-grpc-addr); with -grpc-tls-key it serves TLS only")
		fs.StringVar(&cfg.GRPC.KeyFile, "grpc-tls-key", "", "PEM key of -grpc-tls-cert")
		fs.BoolVar(&cfg.GRPC.AllowPlaintext, "grpc-allow-plaintext", false, "serve the gRPC API without TLS on an address other than loopback (a proxy or mesh in front terminates TLS)")
		fs.IntVar(&cfg.GRPC.MaxMsgBytes, "grpc-max-msg-bytes", gateway.DefaultGRPCMaxMsgBytes, "largest gRPC message to or from a client")
		cfg.RegisterMetricsFlags(fs)
	}
	// The gateway is built before the gRPC server: the server of the gRPC
	// API needs the edge's codec and TLS credentials from the start.
	var g *gateway.Gateway
	var edge *gateway.Edge
	serverOptions := func(ctx context.Context, env app.Env, addr net.Addr) ([]server.Option, error) {
		var err error
		cfg.Tokens, err = gateway.LoadTokens(tokensFile, tokens)
		if err != nil {
			return nil, err
		}
		if cfg.Orgs, err = gateway.LoadOrgs(tokensFile); err != nil {
			return nil, err
		}
		cfg.VerifierURL = verifier
		cfg.CORSOrigins = gateway.SplitList(origins)
		cfg.LLMURL = llmHTTP
		agentConn, err := env.Dial(agentAddr)
		if err != nil {
			return nil, err
		}
		opts := []gateway.Option{gateway.WithLogger(env.Logger), gateway.WithHealthCheck("agent", agentConn), gateway.WithRegistry(env.Metrics), gateway.WithIdentityKey(env.Key)}
		for name, target := range map[string]string{"sandbox": sandbox, "llmgw": llm} {
			if target == "" {
				continue
			}
			conn, err := env.Dial(target)
			if err != nil {
				return nil, err
			}
			opts = append(opts, gateway.WithHealthCheck(name, conn))
		}
		g, err = gateway.New(cfg, agentConn, opts...)
		if err != nil {
			return nil, err
		}
		edge, err = g.GRPCEdge(addr)
		if errors.Is(err, gateway.ErrPlaintext) {
			return nil, fmt.Errorf("%w (-grpc-tls-cert and -grpc-tls-key, or -grpc-allow-plaintext)", err)
		}
		if err != nil {
			return nil, err
		}
		var sopts []server.Option
		for _, o := range edge.ServerOptions() {
			sopts = append(sopts, server.WithGRPCOption(o))
		}
		return sopts, nil
	}
	app.Main("wick-gateway", "127.0.0.1:7000", define, func(ctx context.Context, env app.Env) error {
		edge.Register(env.Server.GRPC())
		if g.Anonymous() {
			env.Logger.Warn("NO AUTHENTICATION: no tokens configured (WICK_TOKENS, -tokens-file, -verifier-url); every request acts as the single user " + gateway.LocalUser)
		}
		lis, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", httpAddr, err)
		}
		go func() {
			if err := gateway.Serve(ctx, lis, g, env.Logger, gateway.DefaultShutdownTimeout); err != nil {
				env.Logger.Error("HTTP server stopped", "error", err)
			}
		}()
		return nil
	}, app.WithServerOptions(serverOptions), app.WithEdgeServer())
}
