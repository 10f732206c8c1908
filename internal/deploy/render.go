package deploy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// nonRootUID is the "nonroot" user of distroless images; the runtime image
// has no /etc/passwd, so the number is what counts.
const nonRootUID = 65532

// Render returns the objects of the deployment in the order they must be
// created (and the reverse of the order they must be deleted in).
func Render(c Config) ([]*unstructured.Unstructured, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var objs []runtime.Object
	if c.CreateNamespace {
		objs = append(objs, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Namespace, Labels: c.labels("")},
		})
	}
	controllerCfg := c.kubeconfigSecret("controller", c.Controller.Kubeconfig)
	webhookCfg := c.kubeconfigSecret("webhook", c.Webhook.Kubeconfig)
	caMap := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: c.meta(c.CAConfigMapName(), "controller"),
		Data:       map[string]string{CAKey: string(c.TLS.CACert)},
	}
	objs = append(objs,
		c.serviceAccount(c.ControllerName(), "controller"),
		c.serviceAccount(c.WebhookName(), "webhook"),
		controllerCfg, webhookCfg, caMap,
	)
	webhookHash := []any{webhookCfg.Data, c.TLS.SecretName}
	if c.TLS.SecretName == "" {
		tls := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: c.meta(c.TLSSecretName(), "webhook"),
			Type:       corev1.SecretTypeTLS,
			Data: map[string][]byte{
				TLSCertKey: c.TLS.Cert,
				TLSKeyKey:  c.TLS.Key,
				CAKey:      c.TLS.CACert,
			},
		}
		objs = append(objs, tls)
		webhookHash = append(webhookHash, tls.Data)
		if len(c.TLS.IssuerKey) > 0 {
			objs = append(objs, &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: c.meta(c.IssuerSecretName(), "webhook"),
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{TLSCertKey: c.TLS.IssuerCert, TLSKeyKey: c.TLS.IssuerKey},
			})
		}
	}
	objs = append(objs, c.webhookService())
	// Policies and budgets before the Deployments: no pod runs unguarded.
	for _, p := range c.networkPolicies() {
		objs = append(objs, p)
	}
	for _, b := range []struct {
		component string
		replicas  int32
	}{{"controller", c.Controller.Replicas}, {"webhook", c.Webhook.Replicas}} {
		if pdb := c.disruptionBudget(b.component, b.replicas); pdb != nil {
			objs = append(objs, pdb)
		}
	}
	objs = append(objs,
		c.controllerDeployment(configHash(controllerCfg.Data, caMap.Data)),
		c.webhookDeployment(configHash(webhookHash...)),
	)

	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("converting %T: %w", o, err)
		}
		u := &unstructured.Unstructured{Object: m}
		// The converter keeps zero-valued structs as empty maps and a nil
		// creationTimestamp; neither belongs in an applied configuration.
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		if u.GetKind() == "Deployment" {
			unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		}
		out = append(out, u)
	}
	return out, nil
}

// YAML renders the objects as one multi-document YAML stream.
func YAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

func (c Config) labels(component string) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":    "depctrl",
		"app.kubernetes.io/part-of": "depctrl",
		InstanceLabel:               c.Name,
	}
	if component != "" {
		l[ComponentLabel] = component
	}
	return l
}

func (c Config) selector(component string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "depctrl", InstanceLabel: c.Name, ComponentLabel: component}
}

func (c Config) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: c.labels(component)}
}

func (c Config) serviceAccount(name, component string) *corev1.ServiceAccount {
	// The runtime talks only to kcp, never to this cluster's API server.
	no := false
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   c.meta(name, component),
		AutomountServiceAccountToken: &no,
	}
}

func (c Config) kubeconfigSecret(component string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: c.meta(c.kubeconfigSecretName(component), component),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KubeconfigKey: kubeconfig},
	}
}

func (c Config) webhookService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: c.meta(c.WebhookName(), "webhook"),
		Spec: corev1.ServiceSpec{
			Selector: c.selector("webhook"),
			Ports: []corev1.ServicePort{{
				Name: "https", Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString("https"),
			}},
		},
	}
}

func (c Config) controllerDeployment(hash string) *appsv1.Deployment {
	args := append(c.ControllerArgs(), c.Controller.ExtraArgs...)
	container := c.container("controller", ControllerBinary, args, c.Controller.Resources, ControllerMetricsPort, ControllerProbePort)
	container.VolumeMounts = []corev1.VolumeMount{
		{Name: "kcp-kubeconfig", MountPath: KubeconfigDir, ReadOnly: true},
		{Name: "webhook-ca", MountPath: CADir, ReadOnly: true},
	}
	volumes := []corev1.Volume{
		secretVolume("kcp-kubeconfig", c.kubeconfigSecretName("controller")),
		{Name: "webhook-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.CAConfigMapName()},
		}}},
	}
	return c.deployment(c.ControllerName(), "controller", c.Controller.Replicas, hash, container, volumes)
}

func (c Config) webhookDeployment(hash string) *appsv1.Deployment {
	args := append(c.WebhookArgs(), c.Webhook.ExtraArgs...)
	container := c.container("webhook", WebhookBinary, args, c.Webhook.Resources, WebhookMetricsPort, WebhookProbePort)
	container.Ports = append([]corev1.ContainerPort{{Name: "https", ContainerPort: c.WebhookPort, Protocol: corev1.ProtocolTCP}}, container.Ports...)
	container.VolumeMounts = []corev1.VolumeMount{
		{Name: "kcp-kubeconfig", MountPath: KubeconfigDir, ReadOnly: true},
		{Name: "tls", MountPath: TLSDir, ReadOnly: true},
	}
	volumes := []corev1.Volume{
		secretVolume("kcp-kubeconfig", c.kubeconfigSecretName("webhook")),
		secretVolume("tls", c.TLSSecretName()),
	}
	d := c.deployment(c.WebhookName(), "webhook", c.Webhook.Replicas, hash, container, volumes)
	// A rollout starts a new pod before it stops an old one, so it never
	// lowers the number of ready webhook pods; a new pod that cannot become
	// ready (a shard down while it reads the rules) stalls the rollout
	// while the old pods keep answering.
	none, one := intstr.FromInt32(0), intstr.FromInt32(1)
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &none, MaxSurge: &one},
	}
	return d
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func (c Config) container(name, binary string, args []string, r Resources, metricsPort, probePort int32) corev1.Container {
	yes, no := true, false
	uid := int64(nonRootUID)
	return corev1.Container{
		Name:            name,
		Image:           c.ImageRef(),
		ImagePullPolicy: corev1.PullPolicy(c.ImagePullPolicy),
		Command:         []string{binary},
		Args:            args,
		Ports: []corev1.ContainerPort{
			{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
			{Name: "probes", ContainerPort: probePort, Protocol: corev1.ProtocolTCP},
		},
		LivenessProbe:  httpProbe("/healthz", 15),
		ReadinessProbe: httpProbe("/readyz", 5),
		Resources:      r.requirements(),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             &yes,
			RunAsUser:                &uid,
			ReadOnlyRootFilesystem:   &yes,
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

func httpProbe(path string, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes")}},
		PeriodSeconds: period,
	}
}

func (r Resources) requirements() corev1.ResourceRequirements {
	req := corev1.ResourceRequirements{}
	add := func(list *corev1.ResourceList, name corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = resource.MustParse(v) // checked by Validate
	}
	add(&req.Requests, corev1.ResourceCPU, r.CPURequest)
	add(&req.Requests, corev1.ResourceMemory, r.MemoryRequest)
	add(&req.Limits, corev1.ResourceCPU, r.CPULimit)
	add(&req.Limits, corev1.ResourceMemory, r.MemoryLimit)
	return req
}

func (c Config) deployment(name, component string, replicas int32, hash string, container corev1.Container, volumes []corev1.Volume) *appsv1.Deployment {
	yes := true
	affinity, spread := c.spread(component)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: c.meta(name, component),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: c.selector(component)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      c.labels(component),
					Annotations: map[string]string{ConfigHashAnnotation: hash},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:           name,
					AutomountServiceAccountToken: new(bool),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   &yes,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers:                []corev1.Container{container},
					Volumes:                   volumes,
					Affinity:                  affinity,
					TopologySpreadConstraints: spread,
				},
			},
		},
	}
}

// configHash digests what the pods read from Secrets and ConfigMaps.
func configHash(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		switch v := p.(type) {
		case map[string][]byte:
			writeSorted(h, v)
		case map[string]string:
			conv := make(map[string][]byte, len(v))
			for k, s := range v {
				conv[k] = []byte(s)
			}
			writeSorted(h, conv)
		case string:
			_, _ = fmt.Fprintf(h, "%q\n", v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func writeSorted(h io.Writer, m map[string][]byte) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "%s=%x\n", k, m[k])
	}
}
