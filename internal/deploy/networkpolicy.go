package deploy

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AllNamespaces in a namespace list admits the pods of every namespace of
// the cluster (an empty namespaceSelector).
const AllNamespaces = "*"

// namespaceNameLabel is set by Kubernetes on every namespace to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// NetworkPolicy says who may open connections to the runtime's pods. The
// webhook answers admission reviews without authenticating its callers, so
// only kcp's shards should reach its serving port; the metrics and probe
// ports serve unauthenticated HTTP. Traffic from the pod's own node (the
// kubelet's probes) is always allowed by NetworkPolicy semantics.
type NetworkPolicy struct {
	// Enabled renders one NetworkPolicy per component.
	Enabled bool
	// WebhookCIDRs and WebhookNamespaces may reach the webhook's serving
	// port. A CIDR admits addresses outside the cluster (kcp elsewhere);
	// some CNIs (Cilium) never match pod traffic against CIDRs, so kcp in
	// this cluster needs its namespace listed.
	WebhookCIDRs      []string
	WebhookNamespaces []string
	// MetricsCIDRs and MetricsNamespaces may reach the metrics and probe
	// ports of both components.
	MetricsCIDRs      []string
	MetricsNamespaces []string
}

// DefaultNetworkPolicy keeps every existing installation working on any
// CNI (kcp in this cluster, in any namespace, or on a private network
// outside it) while shutting out public addresses: a policy that locked kcp
// out would refuse every protected delete and every dependent write. Narrow
// it to kcp's namespace and the shards' addresses.
func DefaultNetworkPolicy() NetworkPolicy {
	return NetworkPolicy{
		Enabled:           true,
		WebhookCIDRs:      []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"},
		WebhookNamespaces: []string{AllNamespaces},
		MetricsCIDRs:      []string{},
		MetricsNamespaces: []string{AllNamespaces},
	}
}

// networkPolicyName is the component's name: <name>-webhook,
// <name>-controller.
func (c Config) networkPolicyName(component string) string { return c.Name + "-" + component }

// validate names the first bad CIDR or namespace.
func (p NetworkPolicy) validate() error {
	for field, cidrs := range map[string][]string{"network_policy.webhook_cidrs": p.WebhookCIDRs, "network_policy.metrics_cidrs": p.MetricsCIDRs} {
		for _, s := range cidrs {
			if err := ValidateCIDR(s); err != nil {
				return &FieldError{field, err.Error()}
			}
		}
	}
	for field, names := range map[string][]string{"network_policy.webhook_namespaces": p.WebhookNamespaces, "network_policy.metrics_namespaces": p.MetricsNamespaces} {
		for _, n := range names {
			if n == AllNamespaces {
				continue
			}
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return &FieldError{field, fmt.Sprintf("%q is neither a namespace name nor %q (all namespaces)", n, AllNamespaces)}
			}
		}
	}
	return nil
}

// ValidateCIDR accepts an IPv4 or IPv6 prefix in its canonical form
// (10.0.0.0/8, not 10.1.2.3/8, nor ::ffff:10.0.0.0/104): Kubernetes
// rejects or rewrites the others, and a host address with a prefix length
// is usually a typo.
func ValidateCIDR(s string) error {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or fd00::/8", s)
	}
	if p.Addr().Is4In6() {
		return fmt.Errorf("%q is an IPv4 range written as IPv6, which Kubernetes rejects: write it as IPv4", s)
	}
	if m := p.Masked(); m != p {
		return fmt.Errorf("%q has host bits set: write %s", s, m)
	}
	return nil
}

// networkPolicies admits, per component, the metrics and probe ports from
// the metrics peers, and for the webhook its serving port from the webhook
// peers. Nothing else may connect; egress is not restricted (the pods talk
// to kcp wherever it runs).
func (c Config) networkPolicies() []*networkingv1.NetworkPolicy {
	if c.NetworkPolicy == nil || !c.NetworkPolicy.Enabled {
		return nil
	}
	p := *c.NetworkPolicy
	tcp := corev1.ProtocolTCP
	port := func(name string) networkingv1.NetworkPolicyPort {
		n := intstr.FromString(name)
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &n}
	}
	monitoring := networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{port("metrics"), port("probes")},
		From:  peers(p.MetricsCIDRs, p.MetricsNamespaces),
	}
	serving := networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{port("https")},
		From:  peers(p.WebhookCIDRs, p.WebhookNamespaces),
	}
	policy := func(component string, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
		// A rule with no peers would admit everyone: leave it out, so that
		// an empty list means nobody.
		rules = slices.DeleteFunc(rules, func(r networkingv1.NetworkPolicyIngressRule) bool { return len(r.From) == 0 })
		return &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: c.meta(c.networkPolicyName(component), component),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: c.selector(component)},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     rules,
			},
		}
	}
	return []*networkingv1.NetworkPolicy{
		policy("controller", monitoring),
		policy("webhook", serving, monitoring),
	}
}

// peers turns CIDRs and namespace names into NetworkPolicy peers, in the
// order given (so that an import reads back the configuration); "*" stands
// for every namespace.
func peers(cidrs, namespaces []string) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	for _, cidr := range cidrs {
		out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	if slices.Contains(namespaces, AllNamespaces) {
		return append(out, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}})
	}
	if len(namespaces) > 0 {
		out = append(out, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: namespaces,
			}},
		}})
	}
	return out
}
