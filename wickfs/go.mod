module github.com/wick-agent/wick/wickfs

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	golang.org/x/sys v0.49.0
)

require github.com/moby/sys/mountinfo v0.7.3
