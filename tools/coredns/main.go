// Command coredns is CoreDNS, built with only the plugins the kind cluster's Corefile
// (e2e/kindbed/manifests/coredns.yaml) names. CoreDNS chooses its plugins at build time (its
// plugin.cfg); this main does the same choice for the kind image, so that a cold build does not
// compile the cloud providers' DNS backends and the other plugins nothing here uses.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	// The order in which a query passes the plugins: plugin.cfg's, for those compiled in.
	dnsserver.Directives = []string{
		"reload", "ready", "health", "prometheus", "errors", "log",
		"loadbalance", "cache", "kubernetes", "loop", "forward",
	}
}

func main() { coremain.Run() }
