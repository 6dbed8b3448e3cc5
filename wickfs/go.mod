module github.com/wick-agent/wick/wickfs

go 1.25

require github.com/creack/pty v1.1.24
