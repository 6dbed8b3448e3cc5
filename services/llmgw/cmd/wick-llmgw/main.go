// Command wick-llmgw serves the LLM gateway: the gRPC LLMService and, on its
// own address, the HTTP model APIs (OpenAI's Chat Completions, Anthropic's
// Messages).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/wick-agent/wick/platform/app"
	"github.com/wick-agent/wick/platform/redisconn"
	"github.com/wick-agent/wick/platform/usage"
	"github.com/wick-agent/wick/services/llmgw"
)

// DefaultHTTPAddr is where the HTTP model APIs listen by default.
const DefaultHTTPAddr = "127.0.0.1:7013"

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(llmgw.RecommendedGCPercent)
	}
	cfg := llmgw.DefaultConfig()
	var httpAddr, httpToken, usageRedis string
	var requireUser bool
	app.Main("wick-llmgw", "127.0.0.1:7003", func(fs *flag.FlagSet) {
		cfg.RegisterFlags(fs)
		fs.StringVar(&httpAddr, "http-addr", DefaultHTTPAddr, "address of the HTTP model APIs (/v1/chat/completions, /v1/messages); empty disables it")
		fs.StringVar(&httpToken, "http-token", "", "bearer token (or x-api-key) the HTTP APIs require (WICK_HTTP_TOKEN); may be empty only when -http-addr is loopback")
		fs.StringVar(&usageRedis, "usage-redis-addr", "", "Redis of the agent service (its -redis-addr) where the HTTP APIs record each signed user's tokens and cost, so that GET /usage and the budgets count external agents' calls; empty: those calls are not recorded")
		fs.BoolVar(&requireUser, "http-require-user", false, "refuse HTTP requests without a user identity signed with the identity key (X-Wick-User…), as the gateway's proxy and sandbox model endpoints send")
	}, func(ctx context.Context, env app.Env) error {
		if httpAddr != "" {
			if err := llmgw.CheckHTTPListen(httpAddr, httpToken); err != nil {
				return err
			}
		}
		opts := []llmgw.Option{llmgw.WithLogger(env.Logger)}
		if usageRedis != "" {
			rdb, err := redisconn.Open(ctx, usageRedis, "wick-llmgw@"+redisconn.ReplicaName())
			if err != nil {
				return fmt.Errorf("-usage-redis-addr: %w", err)
			}
			go func() {
				<-ctx.Done()
				_ = rdb.Close()
			}()
			opts = append(opts, llmgw.WithUsageRecorder(usage.NewRedis(rdb, "")))
		} else if httpAddr != "" {
			env.Logger.Warn("no -usage-redis-addr: calls through the HTTP model APIs are not recorded in users' usage")
		}
		svc, err := llmgw.New(cfg, opts...)
		if err != nil {
			return err
		}
		svc.Register(env.Server.GRPC())
		env.Logger.Info("llm gateway configured", "default_model", svc.DefaultModelName())
		if httpAddr == "" {
			return nil
		}
		lis, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return err
		}
		// No WriteTimeout: it would cut long streams; each call has its own timeout.
		hopts := []llmgw.HTTPOption{llmgw.WithHTTPToken(httpToken), llmgw.WithHTTPIdentity(env.Key)}
		if requireUser {
			hopts = append(hopts, llmgw.WithHTTPUserRequired())
		}
		srv := &http.Server{Handler: svc.HTTPHandler(hopts...), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				env.Logger.Error("http api stopped", "error", err)
			}
		}()
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		env.Logger.Info("serving the HTTP model APIs", "addr", lis.Addr().String())
		return nil
	})
}
