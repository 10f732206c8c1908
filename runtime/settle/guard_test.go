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

// TestPublishedGuardOnRuleChange: a rule created, edited, re-indexed or
// deleted while the controller is down changes the stamp of the rules the
// webhook enforces; the webhook then withdraws a published stamp unless its
// recorded rules keep the current ones (only rules were removed since: a
// proof under more rules holds under fewer), so an object settled under
// other rules is decided under the new ones. It waits until it has read
// every shard's rules, and leaves alone a stamp that is current, or one of
// a resource no rule protects any more.
func TestPublishedGuardOnRuleChange(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	old := rulesOf("a", "b")
	reindexed := rulesOf("a", "b")
	reindexed[0].IndexEpoch = "e-a2"
	edited := rulesOf("a", "b")
	edited[1].Generation = 2
	record := func(rules map[string][]RuleRef) map[string]string {
		return map[string]string{StampsAnnotation: StampsRecord(map[string]Publication{vpcs.String(): {Current: Stamp(old), Rules: rules}})}
	}
	tests := []struct {
		name        string
		current     []RuleRef
		annotations map[string]string
		rulesRead   bool
		withdrawn   bool
	}{
		{name: "a rule added: withdrawn", current: rulesOf("a", "b", "c"), annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "a rule added, not every shard's read yet: kept", current: rulesOf("a", "b", "c"), rulesRead: false},
		{name: "a rule edited: withdrawn", current: edited, annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "a rule re-indexed: withdrawn", current: reindexed, annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "a rule removed, the stamp's rules recorded: kept", current: rulesOf("a"), annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true},
		{name: "a rule removed, the stamp's rules not recorded: withdrawn", current: rulesOf("a"), rulesRead: true, withdrawn: true},
		{name: "a rule removed, a record whose rules are not the stamp's: withdrawn", current: rulesOf("a"),
			annotations: record(map[string][]RuleRef{Stamp(old): rulesOf("a", "c")}), rulesRead: true, withdrawn: true},
		{name: "every rule removed but one that is new: withdrawn", current: rulesOf("c"), annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "the rules are those of the stamp: kept", current: old, rulesRead: true},
		{name: "no rule protects the resource any more: kept", current: nil, rulesRead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.WebhookConfigurationName, Annotations: tt.annotations},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a", ObjectSelector: Selector(Stamp(old)), Rules: []admissionregistrationv1.RuleWithOperations{{
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
				Stamps: stampsByResource{vpcs: {tt.current, len(tt.current) > 0}}, Log: logr.Discard()}
			g.Check(ctx)
			got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, got); err != nil {
				t.Fatal(err)
			}
			if s := StampsOf(got.Webhooks[0].ObjectSelector); (len(s) == 0) != tt.withdrawn {
				t.Fatalf("published stamps after the check %v, want withdrawn %v", s, tt.withdrawn)
			}
		})
	}
}
