package deploy

import (
	"maps"
	"net"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

func networkPolicy(t *testing.T, objs []*unstructured.Unstructured, name string) *networkingv1.NetworkPolicy {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" && o.GetName() == name {
			p := &networkingv1.NetworkPolicy{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	return nil
}

// admitted describes, per port name, who an ingress policy lets in: CIDRs,
// "ns:<name>" for namespaces, "ns:*" for all namespaces. A port in no rule
// is absent: nobody may connect to it (but the pod's node).
func admitted(p *networkingv1.NetworkPolicy) map[string][]string {
	out := map[string][]string{}
	for _, rule := range p.Spec.Ingress {
		var from []string
		for _, peer := range rule.From {
			switch {
			case peer.IPBlock != nil:
				from = append(from, peer.IPBlock.CIDR)
			case peer.NamespaceSelector != nil && peer.PodSelector == nil && len(peer.NamespaceSelector.MatchLabels)+len(peer.NamespaceSelector.MatchExpressions) == 0:
				from = append(from, "ns:*")
			case peer.NamespaceSelector != nil && peer.PodSelector == nil:
				for _, e := range peer.NamespaceSelector.MatchExpressions {
					if e.Key == namespaceNameLabel && e.Operator == "In" {
						for _, v := range e.Values {
							from = append(from, "ns:"+v)
						}
					}
				}
			default:
				from = append(from, "unexpected peer")
			}
		}
		if len(from) == 0 {
			from = []string{"everyone"}
		}
		for _, port := range rule.Ports {
			out[port.Port.String()] = append(out[port.Port.String()], from...)
		}
	}
	return out
}

func TestRenderNetworkPolicy(t *testing.T) {
	tests := []struct {
		name                string
		policy              *NetworkPolicy
		webhook, controller string
	}{
		{
			name:       "default: private networks and the cluster's pods to the webhook, the cluster's pods to metrics and probes",
			webhook:    "https=10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7,ns:* metrics=ns:* probes=ns:*",
			controller: "metrics=ns:* probes=ns:*",
		},
		{
			name: "narrowed to kcp's namespace and shard addresses, Prometheus by namespace",
			policy: &NetworkPolicy{Enabled: true, WebhookCIDRs: []string{"192.0.2.0/28"}, WebhookNamespaces: []string{"kcp", "kcp-shards"},
				MetricsNamespaces: []string{"monitoring"}},
			webhook:    "https=192.0.2.0/28,ns:kcp,ns:kcp-shards metrics=ns:monitoring probes=ns:monitoring",
			controller: "metrics=ns:monitoring probes=ns:monitoring",
		},
		{
			name:       "no peers: nobody but the node",
			policy:     &NetworkPolicy{Enabled: true},
			webhook:    "",
			controller: "",
		},
		{
			name:   "disabled",
			policy: &NetworkPolicy{Enabled: false, WebhookCIDRs: []string{"192.0.2.0/28"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			c.NetworkPolicy = tt.policy
			objs, err := Render(c)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"depctrl-webhook": tt.webhook, "depctrl-controller": tt.controller} {
				p := networkPolicy(t, objs, name)
				if tt.policy != nil && !tt.policy.Enabled {
					if p != nil {
						t.Errorf("NetworkPolicy %s rendered although disabled", name)
					}
					continue
				}
				if p == nil {
					t.Fatalf("no NetworkPolicy %s", name)
				}
				if !slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
					t.Errorf("%s: policy types %v, want Ingress only", name, p.Spec.PolicyTypes)
				}
				if !matches(p.Spec.PodSelector.MatchLabels, deployment(t, objs, name).Spec.Template.Labels) {
					t.Errorf("%s selects %v, not the component's pods", name, p.Spec.PodSelector.MatchLabels)
				}
				var got []string
				a := admitted(p)
				for _, port := range slices.Sorted(maps.Keys(a)) {
					got = append(got, port+"="+strings.Join(a[port], ","))
				}
				if strings.Join(got, " ") != want {
					t.Errorf("%s admits\n got %s\nwant %s", name, strings.Join(got, " "), want)
				}
			}
		})
	}
}

// TestRenderNetworkPolicyPorts: the policy names the ports the containers
// declare, so that a changed webhook port needs no change of the policy.
func TestRenderNetworkPolicyPorts(t *testing.T) {
	c := testConfig()
	c.WebhookPort = 10443
	objs, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, p := range deployment(t, objs, "depctrl-webhook").Spec.Template.Spec.Containers[0].Ports {
		declared[p.Name] = true
	}
	for port := range admitted(networkPolicy(t, objs, "depctrl-webhook")) {
		if !declared[port] {
			t.Errorf("the policy admits port %q, which the webhook container does not declare", port)
		}
	}
}

func TestValidateCIDR(t *testing.T) {
	tests := []struct {
		cidr, err string
	}{
		{"10.0.0.0/8", ""},
		{"0.0.0.0/0", ""},
		{"2001:db8::/32", ""},
		{"192.0.2.7/32", ""},
		{"10.0.0.1/8", "write 10.0.0.0/8"},
		{"2001:db8::1/32", "write 2001:db8::/32"},
		{"::ffff:10.0.0.0/104", "write it as IPv4"},
		{"10.0.0.0", "not a CIDR"},
		{"10.0.0.0/33", "not a CIDR"},
		{"kcp.example.com/32", "not a CIDR"},
		{"", "not a CIDR"},
	}
	for _, tt := range tests {
		err := ValidateCIDR(tt.cidr)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ValidateCIDR(%q) = %v, want %q", tt.cidr, err, tt.err)
		}
	}
}

// FuzzNetworkPolicy feeds arbitrary peers to the renderer, as a Terraform
// configuration could: it must never panic, and what it accepts must render
// CIDRs Kubernetes parses and namespace names that are labels.
func FuzzNetworkPolicy(f *testing.F) {
	f.Add("10.0.0.0/8", "kcp")
	f.Add("10.1.2.3/8", "*")
	f.Add("::/0", "Kcp")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, cidr, namespace string) {
		c := testConfig()
		c.NetworkPolicy = &NetworkPolicy{Enabled: true, WebhookCIDRs: []string{cidr}, WebhookNamespaces: []string{namespace},
			MetricsCIDRs: []string{cidr}, MetricsNamespaces: []string{namespace}}
		objs, err := Render(c)
		if err != nil {
			return
		}
		p := networkPolicy(t, objs, "depctrl-webhook")
		for _, rule := range p.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.IPBlock != nil {
					if _, n, err := net.ParseCIDR(peer.IPBlock.CIDR); err != nil || n.String() != peer.IPBlock.CIDR {
						t.Fatalf("accepted CIDR %q is not canonical (%v)", peer.IPBlock.CIDR, err)
					}
				}
				if s := peer.NamespaceSelector; s != nil {
					for _, e := range s.MatchExpressions {
						for _, v := range e.Values {
							if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
								t.Fatalf("accepted namespace %q: %v", v, errs)
							}
						}
					}
				}
			}
		}
	})
}
