module github.com/wick-agent/wick/services/gateway

go 1.25
