// Package deploy renders the Kubernetes objects that run the depctrl runtime:
// the controller and the webhook as Deployments, their ServiceAccounts, the
// Secrets holding their kcp kubeconfigs and the webhook's TLS material, the
// webhook Service, and what keeps the blast radius of a disruption small: a
// PodDisruptionBudget per component with more than one replica, replicas
// spread over nodes, and a NetworkPolicy per component. The Terraform
// provider applies these objects and the depctrl_runtime_manifests data
// source prints them as YAML, so both ways of deploying come from this one
// renderer.
package deploy

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Defaults of the deployment. The image tag has no default here: it is the
// version of the binary that renders, so provider and runtime move together.
const (
	DefaultNamespace   = "depctrl-system"
	DefaultName        = "depctrl"
	DefaultImage       = "ghcr.io/depctrl/depctrl-runtime"
	DefaultPullPolicy  = "IfNotPresent"
	DefaultWebhookPort = 9443
	DefaultReplicas    = 2

	// Paths of the binaries inside the runtime image.
	ControllerBinary = "/usr/local/bin/depctrl-controller"
	WebhookBinary    = "/usr/local/bin/depctrl-webhook"

	// Where the pods find their files.
	KubeconfigDir = "/etc/depctrl/kcp"
	TLSDir        = "/etc/depctrl/tls"
	CADir         = "/etc/depctrl/webhook-ca"

	// Keys in the Secrets and the ConfigMap.
	KubeconfigKey = "kubeconfig"
	CAKey         = "ca.crt"
	TLSCertKey    = "tls.crt"
	TLSKeyKey     = "tls.key"

	// Ports of each component's metrics and probes: the binaries' own
	// defaults, which differ between the two so that both also run side by
	// side on one host with their defaults.
	ControllerMetricsPort = 8080
	ControllerProbePort   = 8081
	WebhookMetricsPort    = 8082
	WebhookProbePort      = 8083

	// ConfigHashAnnotation on a pod template changes whenever a Secret or
	// ConfigMap the pods read changes, so new credentials roll the pods.
	ConfigHashAnnotation = "depctrl.opendefense.cloud/config-hash"
	// ComponentLabel tells the controller's objects from the webhook's.
	ComponentLabel = "app.kubernetes.io/component"
	// InstanceLabel carries Config.Name, so two installations in one
	// namespace never select each other's pods.
	InstanceLabel = "app.kubernetes.io/instance"
)

// Resources are a container's requests and limits, as Kubernetes quantities
// ("100m", "128Mi"). Empty values are left out.
type Resources struct {
	CPURequest    string
	MemoryRequest string
	CPULimit      string
	MemoryLimit   string
}

// Component is what the controller and the webhook have in common.
type Component struct {
	Replicas int32
	// Kubeconfig is a self-contained kubeconfig (certificates embedded)
	// whose server is the dep-ctrl workspace through the front-proxy.
	Kubeconfig []byte
	Resources  Resources
	// ExtraArgs are appended to the container's arguments.
	ExtraArgs []string
}

// TLS is the webhook's serving certificate. Either SecretName names an
// existing kubernetes.io/tls Secret, or Cert and Key hold material the
// renderer puts into a Secret of its own. CACert is always needed: the
// controller hands it to kcp.
type TLS struct {
	SecretName string
	CACert     []byte
	Cert       []byte
	Key        []byte
	// IssuerCert and IssuerKey are the CA that signed Cert. When set, they
	// go into a Secret of their own that no pod mounts, so that the next
	// renewal can sign with the same CA; kcp's trust then does not change.
	IssuerCert []byte
	IssuerKey  []byte
}

// Config is everything the renderer needs.
type Config struct {
	Namespace       string
	CreateNamespace bool
	// Name prefixes every object: <name>-controller, <name>-webhook.
	Name            string
	Image           string
	Tag             string
	ImagePullPolicy string
	APIExportName   string

	Controller Component
	Webhook    Component
	// WebhookPort is the container port the webhook serves HTTPS on.
	WebhookPort int32
	// WebhookURL is how kcp reaches the webhook. Empty means the Service's
	// cluster DNS name, which is right when kcp runs in this cluster.
	WebhookURL string
	TLS        TLS
	// SkipProtectionGroups restricts the skip-protection annotation to
	// members of these groups; empty means anyone may use it.
	SkipProtectionGroups []string
	// DeferredDeletion is the webhook's --deferred-deletion: a deletion
	// refused for its dependents, of an object that (or whose namespace)
	// opts in, is recorded and carried out by the webhook once nothing
	// references the object. It needs the grant of depctrl_shard's
	// deferred_deletion on every shard. Off, the flag is not rendered at
	// all, so configurations from before it render as they did.
	DeferredDeletion bool
	// SettleObjects is the webhook's and the controller's settling
	// (--settle-objects): protected objects found unreferenced skip the
	// webhook on deletion. The provider defaults it to true.
	SettleObjects bool
	// NetworkPolicy says who may connect to the pods; nil means
	// DefaultNetworkPolicy.
	NetworkPolicy *NetworkPolicy
}

// ControllerName and the other helpers name the rendered objects.
func (c Config) ControllerName() string { return c.Name + "-controller" }

// WebhookName is the webhook Deployment, ServiceAccount and Service name.
func (c Config) WebhookName() string { return c.Name + "-webhook" }

// TLSSecretName is the Secret the webhook reads its certificate from.
func (c Config) TLSSecretName() string {
	if c.TLS.SecretName != "" {
		return c.TLS.SecretName
	}
	return c.Name + "-webhook-tls"
}

// IssuerSecretName holds the CA key of a generated certificate.
func (c Config) IssuerSecretName() string { return c.Name + "-webhook-issuer" }

// CAConfigMapName holds the webhook CA for the controller, which must not
// see the webhook's private key.
func (c Config) CAConfigMapName() string { return c.Name + "-webhook-ca" }

func (c Config) kubeconfigSecretName(component string) string {
	return c.Name + "-" + component + "-kubeconfig"
}

// ServiceHosts are the DNS names the webhook Service answers to inside the
// cluster; a generated serving certificate covers all of them.
func (c Config) ServiceHosts() []string {
	svc := c.WebhookName()
	return []string{
		svc,
		svc + "." + c.Namespace,
		svc + "." + c.Namespace + ".svc",
		svc + "." + c.Namespace + ".svc.cluster.local",
	}
}

// EffectiveWebhookURL is WebhookURL or, by default, the Service URL.
func (c Config) EffectiveWebhookURL() string {
	if c.WebhookURL != "" {
		return c.WebhookURL
	}
	return "https://" + c.WebhookName() + "." + c.Namespace + ".svc:443" + v1alpha1.ValidatePath
}

// ImageRef is image:tag.
func (c Config) ImageRef() string { return c.Image + ":" + c.Tag }

// WithDefaults fills every unset field that has a default.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy
	}
	if c.APIExportName == "" {
		c.APIExportName = v1alpha1.DefaultAPIExportName
	}
	if c.WebhookPort == 0 {
		c.WebhookPort = DefaultWebhookPort
	}
	if c.NetworkPolicy == nil {
		p := DefaultNetworkPolicy()
		c.NetworkPolicy = &p
	}
	return c
}

// ImageRE is an image repository without tag or digest: a registry host
// (with port) and a lower-case path, as the distribution spec allows.
var ImageRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`)

// TagRE is an image tag, as the distribution spec allows.
var TagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// FieldError names the configuration field at fault, so the provider can
// point at the attribute.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate checks what Kubernetes would otherwise reject half-way through
// an apply.
func (c Config) Validate() error {
	for _, f := range []struct{ field, value string }{{"namespace", c.Namespace}, {"name", c.Name}} {
		if errs := validation.IsDNS1123Label(f.value); len(errs) > 0 {
			return &FieldError{f.field, fmt.Sprintf("%q is not a valid name: %s", f.value, strings.Join(errs, "; "))}
		}
	}
	// The longest derived name must still be a DNS label (Services are).
	if n := len(c.Name + "-controller-kubeconfig"); n > validation.DNS1123SubdomainMaxLength {
		return &FieldError{"name", fmt.Sprintf("%q is too long: derived object names would exceed %d characters", c.Name, validation.DNS1123SubdomainMaxLength)}
	}
	if len(c.WebhookName()) > validation.DNS1123LabelMaxLength {
		return &FieldError{"name", fmt.Sprintf("%q is too long: the webhook Service name %q would exceed %d characters", c.Name, c.WebhookName(), validation.DNS1123LabelMaxLength)}
	}
	if !ImageRE.MatchString(c.Image) {
		return &FieldError{"image", fmt.Sprintf("%q is not an image repository (lower case, without tag or digest), such as registry.example.com/depctrl/runtime", c.Image)}
	}
	if !TagRE.MatchString(c.Tag) {
		return &FieldError{"image_tag", fmt.Sprintf("%q is not an image tag (letters, digits, '_', '.', '-'; at most 128)", c.Tag)}
	}
	switch c.ImagePullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		return &FieldError{"image_pull_policy", fmt.Sprintf("%q must be Always, IfNotPresent or Never", c.ImagePullPolicy)}
	}
	if c.WebhookPort < 1 || c.WebhookPort > 65535 || c.WebhookPort == WebhookProbePort || c.WebhookPort == WebhookMetricsPort {
		return &FieldError{"webhook.port", fmt.Sprintf("%d must be a port number other than %d and %d (the webhook's metrics and probes)", c.WebhookPort, WebhookMetricsPort, WebhookProbePort)}
	}
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return &FieldError{"webhook.url", fmt.Sprintf("%q must be an https URL", c.WebhookURL)}
		}
	}
	for name, comp := range map[string]Component{"controller": c.Controller, "webhook": c.Webhook} {
		for _, a := range comp.ExtraArgs {
			if strings.IndexFunc(a, unicode.IsControl) >= 0 {
				return &FieldError{name + ".extra_args", fmt.Sprintf("%q contains a control character", a)}
			}
		}
		if comp.Replicas < 0 {
			return &FieldError{name + ".replicas", "must not be negative"}
		}
		r := comp.Resources
		for field, q := range map[string]string{"cpu_request": r.CPURequest, "memory_request": r.MemoryRequest, "cpu_limit": r.CPULimit, "memory_limit": r.MemoryLimit} {
			if q == "" {
				continue
			}
			if _, err := resource.ParseQuantity(q); err != nil {
				return &FieldError{name + ".resources." + field, fmt.Sprintf("%q is not a Kubernetes quantity such as 100m or 128Mi", q)}
			}
		}
	}
	for _, g := range c.SkipProtectionGroups {
		if g == "" || strings.ContainsAny(g, ", \t") || strings.IndexFunc(g, unicode.IsControl) >= 0 {
			return &FieldError{"webhook.skip_protection_groups", fmt.Sprintf("%q is not a group name (no commas or spaces)", g)}
		}
	}
	if c.NetworkPolicy != nil {
		if err := c.NetworkPolicy.validate(); err != nil {
			return err
		}
	}
	if len(c.TLS.CACert) == 0 {
		return &FieldError{"webhook.tls_secret_name", "no CA certificate for the webhook: the TLS Secret must hold ca.crt"}
	}
	if c.TLS.SecretName == "" && (len(c.TLS.Cert) == 0 || len(c.TLS.Key) == 0) {
		return &FieldError{"webhook.tls_secret_name", "no TLS material: give an existing Secret or let the certificate be generated"}
	}
	return nil
}
