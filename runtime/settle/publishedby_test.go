package settle

import (
	"maps"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPublishedBy: the controller reads the stamps it published as the
// webhook does. A resource published in one workspace and not in another,
// in two entries that disagree, or under an entry that deletes by "*", has
// the stamp every covering entry agrees on, or none.
func TestPublishedBy(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.io", Resource: "vpcs"}
	fws := schema.GroupResource{Group: "network.io", Resource: "firewallrules"}
	entry := func(stamp string, op admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.ValidatingWebhook {
		w := admissionregistrationv1.ValidatingWebhook{Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"network.io"}, APIVersions: []string{"v1"}, Resources: resources},
		}}}
		if stamp != "" {
			w.ObjectSelector = Selector(stamp)
		}
		return w
	}
	config := func(entries ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: entries}
	}
	tests := []struct {
		name    string
		configs []*admissionregistrationv1.ValidatingWebhookConfiguration
		want    map[schema.GroupResource]string
	}{
		{"one entry each", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs"), entry("s2", admissionregistrationv1.Delete, "firewallrules"))},
			map[schema.GroupResource]string{vpcs: "s1", fws: "s2"}},
		{"two workspaces agree", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs")), config(entry("s1", admissionregistrationv1.Delete, "vpcs"))},
			map[schema.GroupResource]string{vpcs: "s1"}},
		{"one workspace not published yet", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs")), config(entry("", admissionregistrationv1.Delete, "vpcs"))},
			map[schema.GroupResource]string{}},
		{"two workspaces disagree", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs")), config(entry("s2", admissionregistrationv1.Delete, "vpcs"))},
			map[schema.GroupResource]string{}},
		{"two entries of one configuration disagree", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs"), entry("", admissionregistrationv1.Delete, "vpcs"))},
			map[schema.GroupResource]string{}},
		{"an entry for every operation counts", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs"), entry("", admissionregistrationv1.OperationAll, "vpcs"))},
			map[schema.GroupResource]string{}},
		{"an entry for writes only does not", []*admissionregistrationv1.ValidatingWebhookConfiguration{config(entry("s1", admissionregistrationv1.Delete, "vpcs"), entry("", admissionregistrationv1.Create, "vpcs"))},
			map[schema.GroupResource]string{vpcs: "s1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[schema.GroupResource]string{}
			for gr, pub := range PublishedBy(tt.configs) {
				got[gr] = pub.Current
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("PublishedBy = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPublishedByWhileABridgeEnds: while the webhook withdraws a bridge
// from one configuration after another, configurations that call the same
// stamp current agree on it and on the stamps they all accept; ones that
// call different stamps current agree on none.
func TestPublishedByWhileABridgeEnds(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.io", Resource: "vpcs"}
	old, current, other := rulesOf("a"), rulesOf("a", "b"), rulesOf("a", "c")
	config := func(pub Publication) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{StampsAnnotation: StampsRecord(map[string]Publication{vpcs.String(): pub})}},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{ObjectSelector: Selector(pub.Stamps()...), Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{vpcs.Group}, APIVersions: []string{"v1"}, Resources: []string{vpcs.Resource}},
			}}}},
		}
	}
	bridging := Publication{Current: Stamp(current), Rules: map[string][]RuleRef{Stamp(current): current, Stamp(old): old}}
	ended := Publication{Current: Stamp(current), Rules: map[string][]RuleRef{Stamp(current): current}}
	otherCurrent := Publication{Current: Stamp(other), Rules: map[string][]RuleRef{Stamp(other): other}}
	tests := []struct {
		name    string
		configs []Publication
		want    *Publication
	}{
		{name: "ended in one, not yet in the other", configs: []Publication{bridging, ended}, want: &ended},
		{name: "ended in neither", configs: []Publication{bridging, bridging}, want: &bridging},
		{name: "another stamp current", configs: []Publication{bridging, otherCurrent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfgs []*admissionregistrationv1.ValidatingWebhookConfiguration
			for _, p := range tt.configs {
				cfgs = append(cfgs, config(p))
			}
			got, ok := PublishedBy(cfgs)[vpcs]
			switch {
			case tt.want == nil && ok:
				t.Errorf("PublishedBy = %+v, want none", got)
			case tt.want != nil && (!ok || got.Current != tt.want.Current || !slices.Equal(got.Stamps(), tt.want.Stamps())):
				t.Errorf("PublishedBy = %+v (%v), want %+v", got, ok, *tt.want)
			}
		})
	}
}
