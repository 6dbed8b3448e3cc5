// Command mcp-test-server is package mcptest's server as a program: over
// stdio (the default), or over streamable HTTP with -listen, where it
// prints "listening on <addr>" once it accepts connections. Tests build it
// at run time; it is never committed as a binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wick-agent/wick/services/agent/internal/mcp/mcptest"
)

func main() {
	listen := flag.String("listen", "", "serve streamable HTTP on this address instead of stdio")
	token := flag.String("token", "", "bearer token HTTP requests must carry")
	flag.Parse()
	s := mcptest.New(mcptest.Options{Exit: os.Exit})
	if *listen == "" {
		if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mcptest.Handler(s, *token)))
}
