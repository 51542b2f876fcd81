package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// containerdConfig runs containerd's CRI plugin on its own root, state and socket, with the
// locally built pause image as the sandbox image, and every registry pointed at a closed local
// port: no image is ever pulled. restrict_oom_score_adj lets runc start containers when the
// machine forbids lowering oom_score_adj.
var containerdConfig = template.Must(template.New("config.toml").Parse(`version = 2
root = "{{.Root}}"
state = "{{.State}}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{{.Socket}}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{{.Root}}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{.SandboxImage}}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{{.CNIConfDir}}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{{.RegistryHosts}}"
`))

// registryHosts sends any pull, from any registry, to the discard port of loopback, where
// nothing listens: an image that was not imported fails at once instead of leaving the machine.
const registryHosts = `server = "http://127.0.0.1:9"

[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
`

func (c Config) startContainerd(ctx context.Context) (*process, error) {
	hosts := filepath.Join(c.Work, "containerd-hosts")
	if err := os.MkdirAll(filepath.Join(hosts, "_default"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(hosts, "_default", "hosts.toml"), []byte(registryHosts), 0o644); err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := containerdConfig.Execute(&b, map[string]string{
		"Root": c.containerdRoot(), "State": c.containerdState(), "Socket": c.ContainerdSocket(),
		"SandboxImage": c.SandboxImage, "CNIConfDir": c.cniConfDir(), "RegistryHosts": hosts,
	}); err != nil {
		return nil, err
	}
	config := filepath.Join(c.Work, "containerd.toml")
	if err := os.WriteFile(config, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	p, err := c.start("containerd", "containerd", "--config", config)
	if err != nil {
		return nil, err
	}
	return p, c.waitFor(ctx, p, time.Minute, func(context.Context) error {
		conn, err := net.Dial("unix", c.ContainerdSocket())
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// importImages imports the OCI archives into containerd's k8s.io namespace, where the CRI
// plugin looks for images.
func (c Config) importImages() error {
	for _, archive := range c.Images {
		if _, err := c.Ctr("images", "import", archive); err != nil {
			return fmt.Errorf("import %s: %w", archive, err)
		}
	}
	return nil
}

// Ctr runs containerd's ctr in the k8s.io namespace against the node's containerd, such as
// Ctr("images", "tag", from, to).
func (p Paths) Ctr(args ...string) (string, error) {
	return run("ctr", append([]string{"--address", p.ContainerdSocket(), "--namespace", "k8s.io"}, args...)...)
}
