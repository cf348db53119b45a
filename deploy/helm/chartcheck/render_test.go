// Package chartcheck checks deploy/helm/switchyard offline: `helm lint`, then
// `helm template` rendered for several value sets, each document decoded
// strictly into the Kubernetes API's own Go types (k8s.io/api: an unknown or
// misspelt field fails), the invariants the chart promises checked, and the
// rendered switchyard.yaml loaded by Switchyard's own config loader.
//
// A module of its own, so that the Kubernetes API types stay out of Switchyard's
// go.mod; scripts/test.sh runs it. Needs helm (scripts/tools.sh builds it).
package chartcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/switchyard/switchyard/config"
)

const chart = "../switchyard"

func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = "helm"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		home, _ := os.UserHomeDir()
		path, err = exec.LookPath(filepath.Join(home, ".cache", "switchyard", "bin", "helm"))
	}
	if err != nil {
		t.Fatalf("helm not found: run the tests through `make test` (scripts/tools.sh builds it): %v", err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// rendered is one `helm template` output, decoded.
type rendered struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	configMaps  []corev1.ConfigMap
	secrets     []corev1.Secret
	pdbs        []policyv1.PodDisruptionBudget
}

func render(t *testing.T, set ...string) rendered {
	t.Helper()
	args := []string{"template", "sy", chart, "--kube-version", "1.31.0", "--namespace", "ai"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out := helm(t, args...)
	var r rendered
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the rendered documents: %v", err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		if head.Kind == "" {
			continue // a document of comments only
		}
		var target any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			r.deployments = append(r.deployments, appsv1.Deployment{})
			target = &r.deployments[len(r.deployments)-1]
		case "v1 Service":
			r.services = append(r.services, corev1.Service{})
			target = &r.services[len(r.services)-1]
		case "v1 ConfigMap":
			r.configMaps = append(r.configMaps, corev1.ConfigMap{})
			target = &r.configMaps[len(r.configMaps)-1]
		case "v1 Secret":
			r.secrets = append(r.secrets, corev1.Secret{})
			target = &r.secrets[len(r.secrets)-1]
		case "policy/v1 PodDisruptionBudget":
			r.pdbs = append(r.pdbs, policyv1.PodDisruptionBudget{})
			target = &r.pdbs[len(r.pdbs)-1]
		default:
			t.Fatalf("unexpected object %s %s", head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("%s does not decode strictly as Kubernetes' type: %v\n%s", head.Kind, err, doc)
		}
	}
	return r
}

func TestHelmLint(t *testing.T) {
	t.Parallel()
	helm(t, "lint", chart, "--strict", "--kube-version", "1.31.0", "--set", "keys.masterKey=m,keys.adminKey=a")
}

func TestChartRendersValidObjects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		set       []string
		redis     bool
		drain     time.Duration
		delay     time.Duration
		idle      time.Duration // server.stream_idle_timeout from config: (0: the default)
		onError   string        // state.redis.on_error ("": the chart's default, allow, when Redis is on)
		preStop   int64
		secretKey string
	}{
		{name: "keys from values, no redis", set: []string{"keys.masterKey=m", "keys.adminKey=a", "replicaCount=1"},
			drain: 10 * time.Second, preStop: 5, secretKey: "sy-switchyard-keys"},
		{name: "existing secrets and redis", set: []string{"keys.existingSecret=sw-keys", "redis.existingSecret=sw-redis",
			"redis.onError=deny", "drainTimeoutSeconds=30", "preStopSleepSeconds=3", "drainDelaySeconds=7"},
			redis: true, drain: 30 * time.Second, delay: 7 * time.Second, preStop: 3, secretKey: "sw-keys"},
		{name: "redis url from values", set: []string{"keys.masterKey=m", "keys.adminKey=a", "redis.url=redis://r:6379/0"},
			redis: true, drain: 10 * time.Second, preStop: 5, secretKey: "sy-switchyard-keys"},
		// config: may set server: and state: settings beside the chart's own (a
		// second server: block made a file Switchyard refuses); the chart's win.
		{name: "server settings in config", set: []string{"keys.masterKey=m", "keys.adminKey=a", "redis.url=redis://r:6379/0",
			"config.server.stream_idle_timeout=2m", "config.server.drain_timeout=99s", "config.state.redis.timeout=1s",
			"config.state.redis.on_error=deny"},
			redis: true, drain: 10 * time.Second, preStop: 5, secretKey: "sy-switchyard-keys", idle: 2 * time.Minute, onError: "deny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, tc.set...)
			if len(r.deployments) != 1 || len(r.configMaps) != 1 || len(r.pdbs) != 1 || len(r.services) != 2 {
				t.Fatalf("objects: %d deployments, %d config maps, %d PDBs, %d services", len(r.deployments), len(r.configMaps), len(r.pdbs), len(r.services))
			}
			d := r.deployments[0]
			pod := d.Spec.Template
			if !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(pod.Labels)) {
				t.Fatalf("the deployment's selector does not select its pods")
			}
			for _, s := range r.services {
				if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
					t.Fatalf("service %s does not select the pods", s.Name)
				}
			}
			if !labels.SelectorFromSet(r.pdbs[0].Spec.Selector.MatchLabels).Matches(labels.Set(pod.Labels)) {
				t.Fatalf("the PDB does not cover the pods")
			}
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d containers", len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			probe := func(p *corev1.Probe, path string) {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
					t.Fatalf("probe on %s: %+v", path, p)
				}
			}
			probe(c.LivenessProbe, "/health")
			probe(c.ReadinessProbe, "/health/ready")
			if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil ||
				c.Lifecycle.PreStop.Sleep.Seconds != tc.preStop {
				t.Fatalf("preStop: %+v", c.Lifecycle)
			}
			grace := *pod.Spec.TerminationGracePeriodSeconds
			if want := tc.preStop + int64(tc.delay/time.Second) + int64(tc.drain/time.Second) + 5; grace != want {
				t.Fatalf("terminationGracePeriodSeconds %d, want preStop + drain_delay + drain_timeout + 5 = %d", grace, want)
			}
			if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Fatalf("pods must run as non-root")
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
				t.Fatalf("resource requests unset")
			}
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			for _, k := range []string{"SWITCHYARD_MASTER_KEY", "SWITCHYARD_ADMIN_KEY"} {
				e, ok := env[k]
				if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != tc.secretKey {
					t.Fatalf("%s must come from secret %s: %+v", k, tc.secretKey, e)
				}
			}
			if _, ok := env["SWITCHYARD_REDIS_URL"]; ok != tc.redis {
				t.Fatalf("SWITCHYARD_REDIS_URL set: %v, want %v", ok, tc.redis)
			}

			// The rendered config is one Switchyard loads, with the chart's drain timeout.
			path := filepath.Join(t.TempDir(), "switchyard.yaml")
			if err := os.WriteFile(path, []byte(r.configMaps[0].Data["switchyard.yaml"]), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, func(k string) (string, bool) {
				if k == "SWITCHYARD_REDIS_URL" && tc.redis {
					return "redis://r:6379/0", true
				}
				return "", false
			})
			if err != nil {
				t.Fatalf("the rendered switchyard.yaml does not load: %v", err)
			}
			if cfg.Server.DrainTimeout != tc.drain {
				t.Fatalf("server.drain_timeout %s, want %s", cfg.Server.DrainTimeout, tc.drain)
			}
			if cfg.Server.DrainDelay != tc.delay {
				t.Fatalf("server.drain_delay %s, want %s", cfg.Server.DrainDelay, tc.delay)
			}
			if tc.onError != "" && cfg.State.Redis.OnError != tc.onError {
				t.Fatalf("state.redis.on_error %q, want %q from config:", cfg.State.Redis.OnError, tc.onError)
			}
			if tc.idle != 0 && cfg.Server.StreamIdleTimeout != tc.idle {
				t.Fatalf("server.stream_idle_timeout %s, want %s from config:", cfg.Server.StreamIdleTimeout, tc.idle)
			}
			if cfg.State.Redis.Enabled() != tc.redis {
				t.Fatalf("state.redis.url set: %v, want %v", cfg.State.Redis.Enabled(), tc.redis)
			}
			for _, port := range c.Ports {
				addr := cfg.Server.HTTPAddr
				if port.Name == "grpc" {
					addr = cfg.Server.GRPCAddr
				}
				if !strings.HasSuffix(addr, fmt.Sprintf(":%d", port.ContainerPort)) {
					t.Fatalf("port %s %d, config listens on %s", port.Name, port.ContainerPort, addr)
				}
			}
		})
	}
}

// TestChartRefusesMissingKeys: without keys (values or a Secret) rendering fails
// with a message, instead of a pod Switchyard would refuse to start.
func TestChartRefusesMissingKeys(t *testing.T) {
	t.Parallel()
	path, err := exec.LookPath(filepath.Join(os.Getenv("HOME"), ".cache", "switchyard", "bin", "helm"))
	if err != nil {
		path = "helm"
	}
	out, err := exec.Command(path, "template", "sy", chart, "--kube-version", "1.31.0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "keys.existingSecret") {
		t.Fatalf("want a failure naming keys.existingSecret, got %v: %s", err, out)
	}
}
