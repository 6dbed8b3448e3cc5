module github.com/wick-agent/wick/daemon

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/wick-agent/wick/gen v0.0.0
	github.com/wick-agent/wick/platform v0.0.0
	github.com/wick-agent/wick/wickfs v0.0.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/bufbuild/protocompile v0.9.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fullstorydev/grpchan v1.1.2 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/jhump/protoreflect v1.15.6 // indirect
	github.com/moby/sys/mountinfo v0.7.3 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.72.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261012220534-4341edf3f941 // indirect
)

replace (
	github.com/wick-agent/wick/gen v0.0.0 => ../gen
	github.com/wick-agent/wick/platform v0.0.0 => ../platform
	github.com/wick-agent/wick/wickfs v0.0.0 => ../wickfs
)
