package settle

import (
	"context"
	"slices"
	"testing"
	"time"

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
	// bridged is the record of the controller keeping the old stamp as a
	// bridge while it holds the new one back.
	bridged := map[string]string{StampsAnnotation: StampsRecord(map[string]Publication{vpcs.String(): {Rules: map[string][]RuleRef{Stamp(old): old}}})}
	tests := []struct {
		name        string
		current     []RuleRef
		annotations map[string]string
		notLive     string
		// accepts are the stamps the configuration accepts, Stamp(old)
		// when nil.
		accepts   []string
		rulesRead bool
		withdrawn bool
	}{
		{name: "a rule added, the controller not there to bridge: withdrawn", current: rulesOf("a", "b", "c"), annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "a rule added, the old stamp kept as a bridge: kept", current: rulesOf("a", "b", "c"), annotations: bridged, rulesRead: true},
		{name: "a rule added, its index not in place yet, bridged: kept", current: rulesOf("a", "b", "c"), notLive: "c/c", annotations: bridged, rulesRead: true},
		{name: "a rule added, an old rule's index not in place: withdrawn", current: rulesOf("a", "b", "c"), notLive: "c/a", annotations: bridged, rulesRead: true, withdrawn: true},
		{name: "a rule removed, seen as added by a replica that missed the removal: withdrawn", current: old,
			accepts: []string{Stamp(rulesOf("a")), Stamp(old)},
			annotations: map[string]string{StampsAnnotation: StampsRecord(map[string]Publication{vpcs.String(): {Current: Stamp(rulesOf("a")),
				Rules: map[string][]RuleRef{Stamp(rulesOf("a")): rulesOf("a"), Stamp(old): old}}})}, rulesRead: true, withdrawn: true},
		{name: "a rule added, the stamp's rules not recorded: withdrawn", current: rulesOf("a", "b", "c"), rulesRead: true, withdrawn: true},
		{name: "a rule added, not every shard's read yet: kept", current: rulesOf("a", "b", "c"), rulesRead: false},
		{name: "a rule edited: withdrawn", current: edited, annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "a rule re-indexed: withdrawn", current: reindexed, annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "a rule removed, the stamp's rules recorded: kept", current: rulesOf("a"), annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true},
		{name: "a rule removed, the stamp's rules not recorded: withdrawn", current: rulesOf("a"), rulesRead: true, withdrawn: true},
		{name: "a rule removed, a record whose rules are not the stamp's: withdrawn", current: rulesOf("a"),
			annotations: record(map[string][]RuleRef{Stamp(old): rulesOf("a", "c")}), rulesRead: true, withdrawn: true},
		{name: "every rule removed but one that is new, bridged: kept", current: rulesOf("c"), annotations: bridged, rulesRead: true},
		{name: "every rule removed but one that is new, the controller not there: withdrawn", current: rulesOf("c"), annotations: record(map[string][]RuleRef{Stamp(old): old}), rulesRead: true, withdrawn: true},
		{name: "the rules are those of the stamp: kept", current: old, rulesRead: true},
		{name: "no rule protects the resource any more: kept", current: nil, rulesRead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accepts := tt.accepts
			if accepts == nil {
				accepts = []string{Stamp(old)}
			}
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.WebhookConfigurationName, Annotations: tt.annotations},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a", ObjectSelector: Selector(accepts...), Rules: []admissionregistrationv1.RuleWithOperations{{
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
				Stamps: stampsByResource{vpcs: {tt.current, len(tt.current) > 0, tt.notLive}}, SettleAfter: 20 * time.Second, Log: logr.Discard()}
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

// TestPublishedGuardEndsABridge: a stamp kept as a bridge to rules added
// since stays accepted beside the current one until this replica has seen
// it so for TransitionFor its --settle-after; then the guard withdraws it
// alone, and objects settled under the current stamp keep skipping the
// webhook. A stamp this replica saw published less than --settle-after
// before it became a bridge is withdrawn at once: nothing was settled
// under it, and the bridge would only hold the new rules' Ready back.
func TestPublishedGuardEndsABridge(t *testing.T) {
	vpcs := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	old, current := rulesOf("a", "b"), rulesOf("a", "b", "c")
	const settleAfter = 20 * time.Second
	transition := TransitionFor(settleAfter)
	config := func(pub Publication) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.WebhookConfigurationName, Annotations: map[string]string{StampsAnnotation: StampsRecord(map[string]Publication{vpcs.String(): pub})}},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a", ObjectSelector: Selector(pub.Stamps()...), Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{vpcs.Group}, APIVersions: []string{"v1"}, Resources: []string{vpcs.Resource}},
			}}}},
		}
	}
	bridging := Publication{Current: Stamp(current), Rules: map[string][]RuleRef{Stamp(current): current, Stamp(old): old}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type step struct {
		at    time.Duration
		rules []RuleRef // the rules over VPCs the webhook enforces
		write *Publication
		want  []string
	}
	// Stamps seen in the first startGrace count as published before the
	// replica started; later is after that.
	const later = startGrace + time.Second
	appearsThenBridges := func(want []string) []step {
		return []step{
			{at: 0, rules: rulesOf("a"), want: []string{Stamp(rulesOf("a"))}},
			{at: later, rules: old, write: &Publication{Current: Stamp(old), Rules: map[string][]RuleRef{Stamp(old): old}}, want: []string{Stamp(old)}},
			{at: later + settleAfter, rules: current, write: &bridging, want: want},
		}
	}
	held := Publication{Rules: map[string][]RuleRef{Stamp(old): old}}
	startA := Publication{Current: Stamp(rulesOf("a")), Rules: map[string][]RuleRef{Stamp(rulesOf("a")): rulesOf("a")}}
	tests := []struct {
		name  string
		start Publication
		// settled, when set, is how many objects this replica settled
		// under each stamp.
		settled map[string]int
		steps   []step
	}{
		{name: "a bridge from a stamp published since start, nothing settled under it here: ends at once", start: startA,
			settled: map[string]int{}, steps: appearsThenBridges([]string{Stamp(current)})},
		{name: "a bridge from a stamp published since start, objects settled under it here: lasts", start: startA,
			settled: map[string]int{Stamp(old): 3}, steps: appearsThenBridges(bridging.Stamps())},
		{name: "a bridge seen at start, nothing settled under it here: lasts (others may have)", start: bridging,
			settled: map[string]int{}, steps: []step{{at: 0, rules: current, want: bridging.Stamps()}}},
		{name: "a bridge seen at start lasts its transition", start: bridging, steps: []step{
			{at: 0, rules: current, want: bridging.Stamps()},
			{at: transition / 2, rules: current, want: bridging.Stamps()},
			{at: transition - time.Second, rules: current, want: bridging.Stamps()},
			{at: transition, rules: current, want: []string{Stamp(current)}},
		}},
		{name: "a bridge from a stamp published long enough before lasts its transition",
			start: Publication{Current: Stamp(rulesOf("a")), Rules: map[string][]RuleRef{Stamp(rulesOf("a")): rulesOf("a")}}, steps: []step{
				{at: 0, rules: rulesOf("a"), want: []string{Stamp(rulesOf("a"))}},
				{at: later, rules: old, write: &Publication{Current: Stamp(old), Rules: map[string][]RuleRef{Stamp(old): old}}, want: []string{Stamp(old)}},
				{at: later + settleAfter, rules: current, write: &bridging, want: bridging.Stamps()},
				{at: later + settleAfter + transition - time.Second, rules: current, want: bridging.Stamps()},
				{at: later + settleAfter + transition, rules: current, want: []string{Stamp(current)}},
			}},
		{name: "a bridge's clock starts once the new stamp is published beside it, within a cap", start: held, steps: []step{
			{at: 0, rules: current, want: held.Stamps()},
			{at: transition, rules: current, want: held.Stamps()},
			{at: transition + time.Second, rules: current, write: &bridging, want: bridging.Stamps()},
			{at: 2*transition - time.Second, rules: current, want: bridging.Stamps()},
			// Capped at twice the transition from when it was first seen.
			{at: 2 * transition, rules: current, want: []string{Stamp(current)}},
		}},
		{name: "a bridge whose new stamp is never published ends at twice its transition", start: held, steps: []step{
			{at: 0, rules: current, want: held.Stamps()},
			{at: 2*transition - time.Second, rules: current, want: held.Stamps()},
			{at: 2 * transition, rules: current, want: nil},
		}},
		{name: "a bridge from a stamp published too recently ends at once",
			start: Publication{Current: Stamp(rulesOf("a")), Rules: map[string][]RuleRef{Stamp(rulesOf("a")): rulesOf("a")}}, steps: []step{
				{at: 0, rules: rulesOf("a"), want: []string{Stamp(rulesOf("a"))}},
				{at: later, rules: old, write: &Publication{Current: Stamp(old), Rules: map[string][]RuleRef{Stamp(old): old}}, want: []string{Stamp(old)}},
				{at: later + settleAfter - 2*time.Second, rules: current, write: &bridging, want: []string{Stamp(current)}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(config(tt.start)).Build()
			p := &PublishedStamps{}
			rules := stampsByResource{}
			now := time.Unix(1000, 0)
			g := &PublishedGuard{Published: p, IndexRead: func() bool { return true }, Stamps: rules,
				SettleAfter: settleAfter, Now: func() time.Time { return now }, Log: logr.Discard()}
			if tt.settled != nil {
				g.Settled = settledUnder(tt.settled)
			}
			for _, st := range tt.steps {
				if st.write != nil {
					got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
					if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, got); err != nil {
						t.Fatal(err)
					}
					want := config(*st.write)
					got.Annotations, got.Webhooks = want.Annotations, want.Webhooks
					if err := cl.Update(ctx, got); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.Observe(ctx, cl, "network", v1alpha1.WebhookConfigurationName); err != nil {
					t.Fatal(err)
				}
				rules[vpcs] = struct {
					rules      []RuleRef
					settleable bool
					notLive    string
				}{st.rules, true, ""}
				now = time.Unix(1000, 0).Add(st.at)
				g.Check(ctx)
				got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, got); err != nil {
					t.Fatal(err)
				}
				if s := StampsOf(got.Webhooks[0].ObjectSelector); !slices.Equal(s, st.want) {
					t.Fatalf("at %s: accepted %v, want %v", st.at, s, st.want)
				}
			}
		})
	}
}

// settledUnder answers SettledUnder from a map of counts by stamp.
type settledUnder map[string]int

func (s settledUnder) SettledUnder(_ schema.GroupResource, stamp string) int { return s[stamp] }
