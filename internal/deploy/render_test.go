package deploy

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func testConfig() Config {
	return Config{
		CreateNamespace: true,
		Tag:             "v1.2.3",
		Controller:      Component{Replicas: 2, Kubeconfig: []byte("controller-kubeconfig")},
		Webhook:         Component{Replicas: 2, Kubeconfig: []byte("webhook-kubeconfig"), Resources: Resources{MemoryLimit: "256Mi"}},
		TLS:             TLS{CACert: []byte("ca"), Cert: []byte("cert"), Key: []byte("key")},
	}
}

func deployment(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

func TestRenderObjects(t *testing.T) {
	objs, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
		if o.GetKind() != "Namespace" && o.GetNamespace() != DefaultNamespace {
			t.Errorf("%s/%s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	want := "Namespace/depctrl-system ServiceAccount/depctrl-controller ServiceAccount/depctrl-webhook " +
		"Secret/depctrl-controller-kubeconfig Secret/depctrl-webhook-kubeconfig ConfigMap/depctrl-webhook-ca " +
		"Secret/depctrl-webhook-tls Service/depctrl-webhook NetworkPolicy/depctrl-controller NetworkPolicy/depctrl-webhook " +
		"PodDisruptionBudget/depctrl-controller PodDisruptionBudget/depctrl-webhook Deployment/depctrl-controller Deployment/depctrl-webhook"
	if strings.Join(got, " ") != want {
		t.Errorf("objects\n got %s\nwant %s", strings.Join(got, " "), want)
	}

	ctrl := deployment(t, objs, "depctrl-controller")
	c := ctrl.Spec.Template.Spec.Containers[0]
	if c.Image != DefaultImage+":v1.2.3" || c.Command[0] != ControllerBinary {
		t.Errorf("controller image %q command %v", c.Image, c.Command)
	}
	for _, arg := range []string{
		"--webhook-url=https://depctrl-webhook.depctrl-system.svc:443/validate",
		"--webhook-ca-bundle-file=" + CADir + "/ca.crt",
		"--kubeconfig=" + KubeconfigDir + "/kubeconfig",
		"--leader-elect=true",
	} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("controller args %v lack %s", c.Args, arg)
		}
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("controller security context %+v", sc)
	}
	for _, v := range ctrl.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "depctrl-webhook-tls" {
			t.Error("the controller mounts the webhook's private key")
		}
	}

	hook := deployment(t, objs, "depctrl-webhook")
	w := hook.Spec.Template.Spec.Containers[0]
	if w.Ports[0].Name != "https" || w.Ports[0].ContainerPort != DefaultWebhookPort {
		t.Errorf("webhook ports %v", w.Ports)
	}
	if w.Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("webhook memory limit %v", w.Resources.Limits)
	}
	if *hook.Spec.Replicas != 2 {
		t.Errorf("webhook replicas %d", *hook.Spec.Replicas)
	}
}

// TestRenderRollsOnNewCredentials: pods read Secrets only at start, so a
// changed Secret must change the pod template.
// TestRenderPorts: each component's pods serve metrics and probes on that
// binary's own default ports, which differ between the two, and the
// container ports, probes and arguments agree.
func TestRenderPorts(t *testing.T) {
	objs, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		deployment     string
		metrics, probe int32
	}{
		{"depctrl-controller", ControllerMetricsPort, ControllerProbePort},
		{"depctrl-webhook", WebhookMetricsPort, WebhookProbePort},
	} {
		c := deployment(t, objs, tt.deployment).Spec.Template.Spec.Containers[0]
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["metrics"] != tt.metrics || ports["probes"] != tt.probe {
			t.Errorf("%s: container ports %v, want metrics %d and probes %d", tt.deployment, ports, tt.metrics, tt.probe)
		}
		for _, want := range []string{"--metrics-bind-address=:" + strconv.Itoa(int(tt.metrics)), "--health-probe-bind-address=:" + strconv.Itoa(int(tt.probe))} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("%s: args %v lack %s", tt.deployment, c.Args, want)
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			if got := p.HTTPGet.Port.String(); got != "probes" {
				t.Errorf("%s: probe on port %s, want the named port probes", tt.deployment, got)
			}
		}
	}
	if ControllerMetricsPort == WebhookMetricsPort || ControllerProbePort == WebhookProbePort {
		t.Error("the two components share a metrics or probe port: their binaries' defaults would clash on one host")
	}
}

func TestRenderRollsOnNewCredentials(t *testing.T) {
	hash := func(c Config) (string, string) {
		objs, err := Render(c)
		if err != nil {
			t.Fatal(err)
		}
		return deployment(t, objs, "depctrl-controller").Spec.Template.Annotations[ConfigHashAnnotation],
			deployment(t, objs, "depctrl-webhook").Spec.Template.Annotations[ConfigHashAnnotation]
	}
	base := testConfig()
	c0, w0 := hash(base)
	tests := []struct {
		name               string
		change             func(*Config)
		ctrlRolls, whRolls bool
	}{
		{"controller kubeconfig", func(c *Config) { c.Controller.Kubeconfig = []byte("new") }, true, false},
		{"webhook kubeconfig", func(c *Config) { c.Webhook.Kubeconfig = []byte("new") }, false, true},
		{"serving certificate", func(c *Config) { c.TLS.Cert = []byte("new") }, false, true},
		{"CA", func(c *Config) { c.TLS.CACert = []byte("new") }, true, true},
		{"replicas only", func(c *Config) { c.Webhook.Replicas = 3 }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.change(&c)
			c1, w1 := hash(c)
			if (c1 != c0) != tt.ctrlRolls || (w1 != w0) != tt.whRolls {
				t.Errorf("controller rolls %v (want %v), webhook rolls %v (want %v)", c1 != c0, tt.ctrlRolls, w1 != w0, tt.whRolls)
			}
		})
	}
}

func TestRenderExistingTLSSecret(t *testing.T) {
	c := testConfig()
	c.TLS = TLS{SecretName: "from-cert-manager", CACert: []byte("ca")}
	objs, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetName() == "depctrl-webhook-tls" {
			t.Error("a TLS Secret is rendered although an existing one is named")
		}
	}
	hook := deployment(t, objs, "depctrl-webhook")
	found := false
	for _, v := range hook.Spec.Template.Spec.Volumes {
		found = found || (v.Secret != nil && v.Secret.SecretName == "from-cert-manager")
	}
	if !found {
		t.Error("the webhook does not mount the named Secret")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"namespace", func(c *Config) { c.Namespace = "Bad_NS" }, "namespace"},
		{"long name", func(c *Config) { c.Name = strings.Repeat("a", 60) }, "name"},
		{"image with tag", func(c *Config) { c.Image = "repo/image:tag:" }, "image"},
		{"tag", func(c *Config) { c.Tag = "a b" }, "image_tag"},
		{"pull policy", func(c *Config) { c.ImagePullPolicy = "Sometimes" }, "image_pull_policy"},
		{"port of the webhook's probes", func(c *Config) { c.WebhookPort = WebhookProbePort }, "webhook.port"},
		{"port of the webhook's metrics", func(c *Config) { c.WebhookPort = WebhookMetricsPort }, "webhook.port"},
		{"http url", func(c *Config) { c.WebhookURL = "http://x/validate" }, "webhook.url"},
		{"quantity", func(c *Config) { c.Controller.Resources.CPURequest = "fast" }, "controller.resources.cpu_request"},
		{"no CA", func(c *Config) { c.TLS.CACert = nil }, "webhook.tls_secret_name"},
		{"no key", func(c *Config) { c.TLS.Key = nil }, "webhook.tls_secret_name"},
		{"CIDR", func(c *Config) { c.NetworkPolicy.WebhookCIDRs = []string{"10.0.0.0"} }, "network_policy.webhook_cidrs"},
		{"CIDR with host bits", func(c *Config) { c.NetworkPolicy.MetricsCIDRs = []string{"10.1.2.3/8"} }, "network_policy.metrics_cidrs"},
		{"namespace peer", func(c *Config) { c.NetworkPolicy.WebhookNamespaces = []string{"Kcp"} }, "network_policy.webhook_namespaces"},
		{"namespace wildcard", func(c *Config) { c.NetworkPolicy.MetricsNamespaces = []string{"kcp-*"} }, "network_policy.metrics_namespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig().WithDefaults()
			tt.change(&c)
			_, err := Render(c)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("got %v, want an error about %s", err, tt.field)
			}
		})
	}
}

func TestYAMLRoundTrips(t *testing.T) {
	objs, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	out, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "---\n")
	if len(docs) != len(objs) {
		t.Fatalf("%d documents for %d objects", len(docs), len(objs))
	}
	for i, doc := range docs {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if m["kind"] != objs[i].GetKind() {
			t.Errorf("document %d is a %v, want %s", i, m["kind"], objs[i].GetKind())
		}
	}
}
