package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// run runs a host tool and returns its output, or an error carrying that output.
func run(name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// setUpNetwork gives the node its addresses and forwarding, and installs the egress rules,
// before any component that could start a pod or send pod traffic runs.
func (c Config) setUpNetwork() error {
	if out, _ := run("ip", "-o", "addr", "show", "to", NodeIP.String()); strings.TrimSpace(out) != "" {
		return fmt.Errorf("node: %s is already an address of this machine (%s): is another node up?", NodeIP, strings.TrimSpace(out))
	}
	steps := [][]string{
		{"link", "add", NodeLink, "type", "bridge"},
		{"link", "set", NodeLink, "up"},
		{"addr", "add", NodeIP.String() + "/32", "dev", NodeLink},
		{"addr", "add", OutsideIP.String() + "/32", "dev", NodeLink},
	}
	for _, args := range steps {
		if _, err := run("ip", args...); err != nil {
			return err
		}
	}
	if err := installEgressRules(); err != nil {
		return err
	}
	for key, value := range map[string]string{
		"net/ipv4/ip_forward":                 "1",
		"net/bridge/bridge-nf-call-iptables":  "1",
		"net/bridge/bridge-nf-call-ip6tables": "1",
	} {
		if err := writeSysctl(key, value); err != nil {
			return fmt.Errorf("node: set %s: %w", key, err)
		}
	}
	return c.writeCNIConfig()
}

// installEgressRules keeps every packet of the cluster on this machine:
//   - raw PREROUTING, before any NAT: a pod may send only to the pod network, the service range
//     (which kube-proxy then translates) and the node's address; everything else is dropped and
//     counted (Drops(PodEgress));
//   - mangle POSTROUTING, after NAT: no packet from a pod's address, or to a pod or service
//     address, goes out of any link but the pod bridge, whatever a Service's endpoints say.
//     This covers the host too: its connection to a Service kube-proxy has not programmed yet
//     would otherwise follow the default route out of the machine (Drops(ClusterLeak));
//   - IPv6: pods have no IPv6 addresses but link-local ones; nothing from the pod bridge passes.
func installEgressRules() error {
	pods := ClusterCIDR.String()
	rules := [][]string{
		{"iptables", "-w", "-t", "raw", "-N", EgressChain},
		{"iptables", "-w", "-t", "raw", "-A", EgressChain, "-d", pods, "-j", "RETURN"},
		{"iptables", "-w", "-t", "raw", "-A", EgressChain, "-d", ServiceCIDR.String(), "-j", "RETURN"},
		{"iptables", "-w", "-t", "raw", "-A", EgressChain, "-d", NodeIP.String() + "/32", "-j", "RETURN"},
		{"iptables", "-w", "-t", "raw", "-A", EgressChain, "-m", "comment", "--comment", string(PodEgress), "-j", "DROP"},
		{"iptables", "-w", "-t", "raw", "-I", "PREROUTING", "1", "-s", pods, "-j", EgressChain},
		{"iptables", "-w", "-t", "mangle", "-N", EgressChain},
		{"iptables", "-w", "-t", "mangle", "-A", EgressChain, "-o", PodBridge, "-j", "RETURN"},
		{"iptables", "-w", "-t", "mangle", "-A", EgressChain, "-m", "comment", "--comment", string(ClusterLeak), "-j", "DROP"},
		{"iptables", "-w", "-t", "mangle", "-I", "POSTROUTING", "1", "-s", pods, "-j", EgressChain},
		{"iptables", "-w", "-t", "mangle", "-I", "POSTROUTING", "1", "-d", pods, "-j", EgressChain},
		{"iptables", "-w", "-t", "mangle", "-I", "POSTROUTING", "1", "-d", ServiceCIDR.String(), "-j", EgressChain},
		{"ip6tables", "-w", "-t", "raw", "-N", EgressChain},
		{"ip6tables", "-w", "-t", "raw", "-A", EgressChain, "-j", "DROP"},
		{"ip6tables", "-w", "-t", "raw", "-I", "PREROUTING", "1", "-i", PodBridge, "-j", EgressChain},
	}
	for _, r := range rules {
		if _, err := run(r[0], r[1:]...); err != nil {
			return fmt.Errorf("node: egress rules: %w", err)
		}
	}
	return nil
}

// DropRule names one of the egress rules, by the comment it carries.
type DropRule string

const (
	// PodEgress drops what a pod sends outside the pod network, the service range and the node.
	PodEgress DropRule = "sluice-e2e: pods may not leave the machine"
	// ClusterLeak drops any pod-sourced packet, or any packet to a pod or service address,
	// about to leave by a link other than the pod bridge.
	ClusterLeak DropRule = "sluice-e2e: no cluster traffic leaves the machine"
)

// Drops is how many packets rule has dropped so far.
func Drops(rule DropRule) (int64, error) {
	table := "raw"
	if rule == ClusterLeak {
		table = "mangle"
	}
	out, err := run("iptables-save", "-c", "-t", table)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, string(rule)) || !strings.HasPrefix(line, "[") {
			continue
		}
		var pkts, bytes int64
		if _, err := fmt.Sscanf(line, "[%d:%d]", &pkts, &bytes); err != nil {
			return 0, fmt.Errorf("read the counters of %q: %w", line, err)
		}
		return pkts, nil
	}
	return 0, fmt.Errorf("no rule %q in the %s table: is the node up?", rule, table)
}

// writeCNIConfig configures one bridge network for the pods, with host-local addresses from
// PodCIDR kept under Paths.Work, and no masquerading: nothing from a pod is meant to go out.
func (c Config) writeCNIConfig() error {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       CNINetwork,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": PodBridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": PodCIDR.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": c.cniIPAMDir(),
				},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.cniConfDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.cniConfDir(), "10-sluice-e2e.conflist"), b, 0o644)
}
