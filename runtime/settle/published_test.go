package settle

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// stampsByResource answers Stamp and Rules from a map of the rules over
// each resource and their settleability.
type stampsByResource map[schema.GroupResource]struct {
	rules      []RuleRef
	settleable bool
	// notLive is the key of a rule whose index is not in place.
	notLive string
}

func (s stampsByResource) Stamp(gr schema.GroupResource) (string, bool) {
	return Stamp(s[gr].rules), s[gr].settleable
}

// Protecting lists the rules, each live when the type is settleable.
func (s stampsByResource) Protecting(gr schema.GroupResource) []Protecting {
	ps := make([]Protecting, len(s[gr].rules))
	for i, r := range s[gr].rules {
		ps[i] = Protecting{Rule: r, Live: s[gr].settleable && r.Key != s[gr].notLive}
	}
	return ps
}

// rulesOf are n made-up rules, the i-th called r<i>.
func rulesOf(names ...string) []RuleRef {
	out := make([]RuleRef, len(names))
	for i, n := range names {
		out[i] = RuleRef{Key: "c/" + n, UID: "uid-" + n, Generation: 1, IndexEpoch: "e-" + n}
	}
	return out
}

// TestPublishedGuard: the stamps a protection configuration publishes are
// read per resource; once a reference index a stamp relies on is no longer
// intact, the webhook withdraws that stamp (its entry selects every object
// again) and leaves the others; before every shard's index configurations
// are read, it withdraws nothing.
func TestPublishedGuard(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	fws := schema.GroupResource{Group: "network.test.io", Resource: "firewallrules"}
	vpcRules, fwRules := rulesOf("vpc-rule"), rulesOf("fw-rule")
	sVPCs, sFWs := Stamp(vpcRules), Stamp(fwRules)
	entry := func(name, resource, stamp string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ObjectSelector: Selector(stamp), Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"network.test.io"}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		}}}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.WebhookConfigurationName},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{entry("a", "vpcs", sVPCs), entry("b", "firewallrules", sFWs)},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cfg).Build()
	ctx := context.Background()
	p := &PublishedStamps{}
	if err := p.Observe(ctx, cl, "network", v1alpha1.WebhookConfigurationName); err != nil {
		t.Fatal(err)
	}
	if !p.Accepts(vpcs, sVPCs) || !p.Accepts(fws, sFWs) || p.Accepts(vpcs, sFWs) || len(p.Stamped()) != 2 {
		t.Fatalf("accepted %v, %v, stamped %v", p.Accepts(vpcs, sVPCs), p.Accepts(fws, sFWs), p.Stamped())
	}
	read := false
	g := &PublishedGuard{Published: p, IndexRead: func() bool { return read }, Log: logr.Discard(),
		Stamps: stampsByResource{vpcs: {vpcRules, false, ""}, fws: {fwRules, true, ""}}}
	selectors := func() (string, string) {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, got); err != nil {
			t.Fatal(err)
		}
		return strings.Join(StampsOf(got.Webhooks[0].ObjectSelector), ","), strings.Join(StampsOf(got.Webhooks[1].ObjectSelector), ",")
	}
	g.Check(ctx)
	if a, b := selectors(); a != sVPCs || b != sFWs {
		t.Fatalf("withdrawn before the index configurations were read: %q, %q", a, b)
	}
	read = true
	g.Check(ctx)
	if a, b := selectors(); a != "" || b != sFWs {
		t.Fatalf("after the check: vpcs %q (want none), firewallrules %q (want kept)", a, b)
	}
}
