package kindbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	// PodSubnet is the cluster's pod network; the controller-manager gives each node a /24 of it.
	PodSubnet = "10.244.0.0/16"
	// hostPathVolumes is where kube-controller-manager's hostpath provisioner puts volumes on a
	// node (/tmp/hostpath_pv/<uid>); every node mounts the same host directory there.
	hostPathVolumes = "/tmp/hostpath_pv"
)

// volumesDir is the host directory the nodes share for the hostpath provisioner's volumes.
func (c Config) volumesDir() string { return filepath.Join(c.WorkDir, c.Name+"-volumes") }

// nodeNet is one node's place in the pod network.
type nodeNet struct{ name, ip, podCIDR string }

func (n nodeNet) String() string { return n.name + " " + n.podCIDR + " via " + n.ip }

// podNetwork gives the offline node image what kindnetd gives kind's own (kindnetd cannot be
// built here): once the controller-manager has given every node its podCIDR, each node gets the
// bridge CNI configuration of its own podCIDR (the node image's /kind/cni template; the kubelet
// reports the node Ready once containerd finds it), a route to every other node's podCIDR through
// that node's address on the Docker network they share, and a masquerade of its pods' traffic
// that leaves the pod network. Pod-to-pod traffic keeps the pods' addresses, on one node or
// across nodes. It returns once every node is Ready; running it again changes nothing.
func (c Config) podNetwork(ctx context.Context) ([]nodeNet, error) {
	names, err := c.NodeNames(ctx)
	if err != nil {
		return nil, err
	}
	var nodes []nodeNet
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := c.Kubectl(ctx, nil, "get", "nodes", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.spec.podCIDR}{"\n"}{end}`)
		if err != nil {
			return nil, err
		}
		nodes = nodes[:0]
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(l); len(f) == 3 {
				nodes = append(nodes, nodeNet{name: f[0], ip: f[1], podCIDR: f[2]})
			}
		}
		if len(nodes) == len(names) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d nodes have an address and a podCIDR 2m after the cluster was made: %q", len(nodes), len(names), out)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	for _, n := range nodes {
		script := []string{
			"set -e",
			fmt.Sprintf("sed 's|@POD_CIDR@|%s|' /kind/cni/10-bridge.conflist >/etc/cni/net.d/.10-bridge.tmp", n.podCIDR),
			"mv /etc/cni/net.d/.10-bridge.tmp /etc/cni/net.d/10-bridge.conflist",
		}
		for _, o := range nodes {
			if o.name != n.name {
				script = append(script, fmt.Sprintf("ip route replace %s via %s", o.podCIDR, o.ip))
			}
		}
		masq := fmt.Sprintf("POSTROUTING -s %s ! -d %s -m comment --comment jobset-addons-pod-network -j MASQUERADE", n.podCIDR, PodSubnet)
		script = append(script, "iptables -t nat -C "+masq+" 2>/dev/null || iptables -t nat -A "+masq)
		if _, err := c.Exec(ctx, n.name, "sh", "-c", strings.Join(script, "\n")); err != nil {
			return nil, fmt.Errorf("pod network on node %s: %w", n.name, err)
		}
	}
	if _, err := c.Kubectl(ctx, nil, "wait", "--for=condition=Ready", "nodes", "--all", "--timeout=120s"); err != nil {
		return nil, err
	}
	return nodes, nil
}

// coreDNS installs CoreDNS (e2e/kindbed/manifests/coredns.yaml) behind the kube-dns Service, at
// the address the kubelets give pods as their nameserver (clusterDNS of the kubelet
// configuration kubeadm stored in the kubelet-config ConfigMap).
func (c Config) coreDNS(ctx context.Context) error {
	out, err := c.Kubectl(ctx, nil, "-n", "kube-system", "get", "configmap", "kubelet-config", "-o", "jsonpath={.data.kubelet}")
	if err != nil {
		return err
	}
	var kubelet struct {
		ClusterDNS []string `json:"clusterDNS"`
	}
	if err := yaml.Unmarshal(out, &kubelet); err != nil {
		return fmt.Errorf("the kubelet configuration in kube-system/kubelet-config: %w", err)
	}
	if len(kubelet.ClusterDNS) == 0 {
		return fmt.Errorf("the kubelet configuration in kube-system/kubelet-config names no clusterDNS")
	}
	m, err := os.ReadFile(filepath.Join(c.Root, "e2e", "kindbed", "manifests", "coredns.yaml"))
	if err != nil {
		return err
	}
	m = []byte(strings.ReplaceAll(string(m), "@CLUSTER_DNS@", kubelet.ClusterDNS[0]))
	_, err = c.Kubectl(ctx, m, "apply", "--server-side", "--force-conflicts", "-f", "-")
	return err
}
