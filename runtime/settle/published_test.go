package settle

import (
	"context"
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

// stampsByResource answers Stamp from a map of stamp and settleability.
type stampsByResource map[schema.GroupResource]struct {
	stamp      string
	settleable bool
}

func (s stampsByResource) Stamp(gr schema.GroupResource) (string, bool) {
	return s[gr].stamp, s[gr].settleable
}

// TestPublishedGuard: the stamps a protection configuration publishes are
// read per resource; once a reference index a stamp relies on is no longer
// intact, the webhook withdraws that stamp (its entry selects every object
// again) and leaves the others; before every shard's index configurations
// are read, it withdraws nothing.
func TestPublishedGuard(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	fws := schema.GroupResource{Group: "network.test.io", Resource: "firewallrules"}
	entry := func(name, resource, stamp string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ObjectSelector: Selector(stamp), Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"network.test.io"}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		}}}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.WebhookConfigurationName},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{entry("a", "vpcs", "s-vpcs"), entry("b", "firewallrules", "s-fws")},
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
	if p.Published(vpcs) != "s-vpcs" || p.Published(fws) != "s-fws" || len(p.Stamped()) != 2 {
		t.Fatalf("published %q, %q, stamped %v", p.Published(vpcs), p.Published(fws), p.Stamped())
	}
	read := false
	g := &PublishedGuard{Published: p, IndexRead: func() bool { return read }, Log: logr.Discard(),
		Stamps: stampsByResource{vpcs: {"s-vpcs", false}, fws: {"s-fws", true}}}
	selectors := func() (string, string) {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, got); err != nil {
			t.Fatal(err)
		}
		return StampOf(got.Webhooks[0].ObjectSelector), StampOf(got.Webhooks[1].ObjectSelector)
	}
	g.Check(ctx)
	if a, b := selectors(); a != "s-vpcs" || b != "s-fws" {
		t.Fatalf("withdrawn before the index configurations were read: %q, %q", a, b)
	}
	read = true
	g.Check(ctx)
	if a, b := selectors(); a != "" || b != "s-fws" {
		t.Fatalf("after the check: vpcs %q (want none), firewallrules %q (want kept)", a, b)
	}
}
