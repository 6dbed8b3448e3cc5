module github.com/wick-agent/wick

go 1.25
