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

// TestPublishedGuardOnRuleChange: a rule created, edited or deleted while
// the controller is down changes the stamp of the rules the webhook
// enforces; the webhook then withdraws the stamp still published, so an
// object settled under the old rules is decided under the new ones. It waits
// until it has read every shard's rules, and leaves alone a stamp that is
// current, or one of a resource no rule protects any more.
func TestPublishedGuardOnRuleChange(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	tests := []struct {
		name      string
		current   string
		rulesRead bool
		want      string
	}{
		{name: "the rules changed: withdrawn", current: "s-new", rulesRead: true, want: ""},
		{name: "the rules changed, not every shard's read yet: kept", current: "s-new", rulesRead: false, want: "s-old"},
		{name: "the rules are those of the stamp: kept", current: "s-old", rulesRead: true, want: "s-old"},
		{name: "no rule protects the resource any more: kept", current: "", rulesRead: true, want: "s-old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.WebhookConfigurationName},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a", ObjectSelector: Selector("s-old"), Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{vpcs.Group}, APIVersions: []string{"v1"}, Resources: []string{vpcs.Resource}},
				}}}},
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
			g := &PublishedGuard{Published: p, IndexRead: func() bool { return true }, RulesRead: func() bool { return tt.rulesRead },
				Stamps: stampsByResource{vpcs: {tt.current, tt.current != ""}}, Log: logr.Discard()}
			g.Check(ctx)
			got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, got); err != nil {
				t.Fatal(err)
			}
			if s := StampOf(got.Webhooks[0].ObjectSelector); s != tt.want {
				t.Fatalf("published stamp after the check %q, want %q", s, tt.want)
			}
		})
	}
}
