// Command coredns is CoreDNS with only the plugins the single-node test
// cluster's DNS uses (deploy/k8s/internal/cluster): the cluster's names from
// the API server, a cache, readiness and health. Built alone, it is a
// fraction of the full program's dependencies.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
