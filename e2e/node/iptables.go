package node

import (
	"errors"
	"os/exec"
	"strings"
)

// ownChains are the iptables chains the node's parts create: the egress rules, kube-proxy's and
// the kubelet's (KUBE-), and the CNI plugins' (CNI-). There is one node per machine, so every
// chain with these prefixes is the node's.
var ownChains = []string{EgressChain, "KUBE-", "CNI-"}

func ownChain(name string) bool {
	for _, prefix := range ownChains {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// removeChains removes the node's chains, and the rules that jump to them, from every table of
// iptables and ip6tables: each table is saved, filtered and restored whole, so rules of other
// programs stay exactly as they were (quoting included).
func removeChains() error {
	var errs []error
	for _, tool := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(tool + "-save"); err != nil {
			continue
		}
		for _, table := range []string{"raw", "mangle", "nat", "filter"} {
			errs = append(errs, removeChainsFrom(tool, table))
		}
	}
	return errors.Join(errs...)
}

func removeChainsFrom(tool, table string) error {
	saved, err := run(tool+"-save", "-t", table)
	if err != nil {
		return nil // the table does not exist: nothing to remove
	}
	kept, changed := withoutOwnChains(saved)
	if !changed {
		return nil
	}
	cmd := exec.Command(tool+"-restore", "-w")
	cmd.Stdin = strings.NewReader(kept)
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New(tool + "-restore " + table + ": " + err.Error() + ": " + string(out))
	}
	return nil
}

// withoutOwnChains drops, from an iptables-save dump, the declarations of the node's chains and
// every rule in them or jumping to them.
func withoutOwnChains(saved string) (string, bool) {
	var kept []string
	changed := false
	for _, line := range strings.Split(saved, "\n") {
		if dropLine(line) {
			changed = true
			continue
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n"), changed
}

func dropLine(line string) bool {
	fields := strings.Fields(line)
	switch {
	case len(fields) == 0:
		return false
	case strings.HasPrefix(fields[0], ":"):
		return ownChain(strings.TrimPrefix(fields[0], ":"))
	case fields[0] == "-A" && len(fields) > 1:
		if ownChain(fields[1]) {
			return true
		}
		for i, f := range fields {
			if (f == "-j" || f == "-g") && i+1 < len(fields) && ownChain(fields[i+1]) {
				return true
			}
		}
	}
	return false
}
