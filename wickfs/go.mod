module github.com/wick-agent/wick/wickfs

go 1.25
