module github.com/wick-agent/wick/services/gateway

go 1.26.0

require (
	github.com/wick-agent/wick/gen v0.0.0
	github.com/wick-agent/wick/platform v0.0.0
)

replace (
	github.com/wick-agent/wick/gen v0.0.0 => ../../gen
	github.com/wick-agent/wick/platform v0.0.0 => ../../platform
)
