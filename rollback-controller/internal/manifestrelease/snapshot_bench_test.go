package manifestrelease_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/testenv/flux"
)

// BenchmarkSnapshot stores 5 MiB of manifests (every real Flux CRD plus generated workloads) the
// way a ManifestRelease does, at each zstd level, beside the baseline: Helm's storage encoding of
// the same manifests in a sh.helm.release.v1 Secret (the release as JSON, gzip at
// BestCompression, base64). stored-bytes is what goes into Secret data; x-smaller is Helm's size
// over ours. Each op is one snapshot written (encode) or read back (decode).
func BenchmarkSnapshot(b *testing.B) {
	files := benchmarkManifests(b, 5<<20)
	helmStored := helmEncode(b, files)
	checkBothHoldTheManifests(b, files, helmStored)

	levels := []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression}
	for _, level := range levels {
		opts := snapshot.Options{Level: level}
		b.Run("encode/sluice-zstd-"+level.String(), func(b *testing.B) {
			var stored int
			for b.Loop() {
				a, err := snapshot.Pack(files, opts)
				if err != nil {
					b.Fatal(err)
				}
				secrets, err := snapshot.Secrets(snapshot.Meta{Namespace: "flux-system", Release: "flux", Number: 1}, a, opts)
				if err != nil {
					b.Fatal(err)
				}
				stored = storedBytes(secrets)
			}
			b.ReportMetric(float64(stored), "stored-bytes")
			b.ReportMetric(float64(len(helmStored))/float64(stored), "x-smaller")
		})
	}
	b.Run("encode/baseline-helm-json-gzip-base64", func(b *testing.B) {
		var stored int
		for b.Loop() {
			stored = len(helmEncode(b, files))
		}
		b.ReportMetric(float64(stored), "stored-bytes")
		b.ReportMetric(1, "x-smaller")
	})

	a, err := snapshot.Pack(files, snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode/sluice-zstd-"+snapshot.Level.String(), func(b *testing.B) {
		for b.Loop() {
			if _, err := snapshot.Unpack(a.Compressed, a.Digest, snapshot.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/baseline-helm-json-gzip-base64", func(b *testing.B) {
		for b.Loop() {
			helmDecode(b, helmStored)
		}
	})
}

// checkBothHoldTheManifests makes sure both encodings give every byte back, so neither side of
// the comparison can win by dropping something.
func checkBothHoldTheManifests(b *testing.B, files []snapshot.File, helmStored []byte) {
	manifest := helmDecode(b, helmStored).Manifest
	a, err := snapshot.Pack(files, snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	unpacked, err := snapshot.Unpack(a.Compressed, a.Digest, snapshot.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(unpacked) != len(files) {
		b.Fatalf("unpacked %d files of %d", len(unpacked), len(files))
	}
	total := 0
	for i, f := range unpacked {
		total += len(f.Data)
		if !strings.Contains(manifest, string(bytes.TrimRight(f.Data, "\n"))) {
			b.Fatalf("the Helm release lacks %s", f.Name)
		}
		if !bytes.Equal(f.Data, fileNamed(files, f.Name).Data) {
			b.Fatalf("file %d, %s, differs after Unpack", i, f.Name)
		}
	}
	b.Logf("%d files, %d bytes of manifests; Helm's manifest string is %d bytes", len(files), total, len(manifest))
}

func fileNamed(files []snapshot.File, name string) snapshot.File {
	for _, f := range files {
		if f.Name == name {
			return f
		}
	}
	return snapshot.File{}
}

func storedBytes(secrets []*corev1.Secret) int {
	n := 0
	for _, s := range secrets {
		n += len(s.Data[snapshot.DataKey])
	}
	return n
}

// helmRelease has the JSON shape of the fields Helm fills in a release (helm.sh/helm/v3
// pkg/release.Release). The chart, which Helm stores too, is left out: the baseline is Helm's
// encoding of the manifests alone, which favours Helm.
type helmRelease struct {
	Name      string   `json:"name,omitempty"`
	Info      helmInfo `json:"info"`
	Manifest  string   `json:"manifest,omitempty"`
	Version   int      `json:"version,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
}

type helmInfo struct {
	FirstDeployed time.Time `json:"first_deployed,omitempty"`
	LastDeployed  time.Time `json:"last_deployed,omitempty"`
	Deleted       string    `json:"deleted"` // Helm writes its zero time as ""
	Description   string    `json:"description,omitempty"`
	Status        string    `json:"status,omitempty"`
}

// helmEncode is Helm's storage encoding (pkg/storage/driver encodeRelease): json.Marshal of the
// release, gzip at BestCompression, then standard base64, which the Secret stores as its data.
// The manifest is every file joined the way Helm renders a chart: "---\n# Source: <path>\n".
func helmEncode(tb testing.TB, files []snapshot.File) []byte {
	var manifest strings.Builder
	for _, f := range files {
		fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", f.Name, bytes.TrimRight(f.Data, "\n"))
	}
	when := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	raw, err := json.Marshal(helmRelease{Name: "flux", Namespace: "flux-system", Version: 1, Manifest: manifest.String(),
		Info: helmInfo{FirstDeployed: when, LastDeployed: when, Description: "Install complete", Status: "deployed"}})
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// helmDecode is Helm's decodeRelease: base64, gunzip, json.Unmarshal.
func helmDecode(tb testing.TB, stored []byte) helmRelease {
	gz, err := base64.StdEncoding.DecodeString(string(stored))
	if err != nil {
		tb.Fatal(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		tb.Fatal(err)
	}
	var rel helmRelease
	if err := json.Unmarshal(raw, &rel); err != nil {
		tb.Fatal(err)
	}
	return rel
}

// benchmarkManifests returns every Flux CRD, then generated workloads until the set holds at
// least size bytes. The workloads vary the way real ones do (names, images pinned by digest,
// config checksums, env, resources), from a fixed seed so every run measures the same bytes.
func benchmarkManifests(tb testing.TB, size int) []snapshot.File {
	paths, err := flux.CRDPaths()
	if err != nil {
		tb.Fatal(err)
	}
	var files []snapshot.File
	total := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, snapshot.File{Name: "crds/" + filepath.Base(p), Data: data})
		total += len(data)
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	for i := 0; total < size; i++ {
		data := workload(rng, i)
		files = append(files, snapshot.File{Name: fmt.Sprintf("apps/app-%04d.yaml", i), Data: data})
		total += len(data)
	}
	return files
}

var words = []string{"api", "auth", "billing", "cart", "catalog", "checkout", "events", "gateway", "inventory",
	"ledger", "mail", "media", "orders", "payments", "profile", "search", "session", "shipping", "stock", "users"}

func workload(rng *rand.Rand, i int) []byte {
	name := fmt.Sprintf("%s-%s-%d", words[rng.IntN(len(words))], words[rng.IntN(len(words))], i)
	team := words[rng.IntN(len(words))]
	var env strings.Builder
	for j := range 3 + rng.IntN(8) {
		fmt.Fprintf(&env, "            - name: %s_%s_%d\n              value: %q\n",
			strings.ToUpper(words[rng.IntN(len(words))]), strings.ToUpper(words[rng.IntN(len(words))]), j,
			fmt.Sprintf("%s.%s.svc.cluster.local:%d", words[rng.IntN(len(words))], team, 8000+rng.IntN(1000)))
	}
	var cfg strings.Builder
	for j := range 2 + rng.IntN(6) {
		key := fmt.Sprintf("%s.%s.%d", words[rng.IntN(len(words))], words[rng.IntN(len(words))], j)
		switch rng.IntN(4) {
		case 0:
			fmt.Fprintf(&cfg, "  %s: %q\n", key, fmt.Sprintf("https://%s.%s.example.com/v%d", words[rng.IntN(len(words))], team, 1+rng.IntN(3)))
		case 1:
			fmt.Fprintf(&cfg, "  %s: %q\n", key, fmt.Sprintf("%dms", 10*(1+rng.IntN(500))))
		case 2:
			fmt.Fprintf(&cfg, "  %s: %q\n", key, fmt.Sprint(rng.IntN(2) == 0))
		default:
			fmt.Fprintf(&cfg, "  %s: %q\n", key, fmt.Sprint(rng.IntN(100000)))
		}
	}
	return fmt.Appendf(nil, `apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[1]s
  namespace: %[2]s
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s-config
  namespace: %[2]s
data:
%[3]s---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {app.kubernetes.io/name: %[1]s, app.kubernetes.io/part-of: %[2]s}
spec:
  selector: {app.kubernetes.io/name: %[1]s}
  ports:
    - {name: http, port: 80, targetPort: %[4]d}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {app.kubernetes.io/name: %[1]s, app.kubernetes.io/part-of: %[2]s, app.kubernetes.io/version: "%[5]d.%[6]d.%[7]d"}
spec:
  replicas: %[8]d
  selector:
    matchLabels: {app.kubernetes.io/name: %[1]s}
  template:
    metadata:
      labels: {app.kubernetes.io/name: %[1]s}
      annotations:
        checksum/config: %[9]x%[10]x%[11]x%[12]x
    spec:
      serviceAccountName: %[1]s
      containers:
        - name: app
          image: registry.example.com/%[2]s/%[1]s@sha256:%[13]x%[14]x%[15]x%[16]x
          ports: [{name: http, containerPort: %[4]d}]
          env:
%[17]s          resources:
            requests: {cpu: %[18]dm, memory: %[19]dMi}
            limits: {memory: %[20]dMi}
          readinessProbe:
            httpGet: {path: /healthz, port: http}
            periodSeconds: %[21]d
`, name, team, cfg.String(), 8000+rng.IntN(1000), rng.IntN(3), rng.IntN(30), rng.IntN(20), 1+rng.IntN(5),
		rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64(),
		env.String(), 50*(1+rng.IntN(20)), 64*(1+rng.IntN(16)), 128*(1+rng.IntN(16)), 5+rng.IntN(10))
}
