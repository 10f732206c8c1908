package controller

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// TestPublish: a stamp already published stays accepted beside the planned
// one while its rules keep the planned ones (rules only removed) or bridge
// to them (rules only added, also while an added rule's index is not in
// place yet, so that no stamp is planned), at most one of them; a rule
// edited or re-indexed, a rule whose index is gone, or a published stamp
// whose rules were never recorded, keeps nothing.
func TestPublish(t *testing.T) {
	gr := schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	rules := func(names ...string) []settle.RuleRef {
		out := make([]settle.RuleRef, len(names))
		for i, n := range names {
			out[i] = settle.RuleRef{Key: "c/" + n, UID: "uid-" + n, Generation: 1, IndexEpoch: "e-" + n}
		}
		return out
	}
	abc, ab, a, bc := rules("a", "b", "c"), rules("a", "b"), rules("a"), rules("b", "c")
	edited := rules("a")
	edited[0].Generation = 2
	pub := func(current []settle.RuleRef, kept ...[]settle.RuleRef) settle.Publication {
		p := settle.Publication{Rules: map[string][]settle.RuleRef{}}
		if current != nil {
			p.Current = settle.Stamp(current)
			p.Rules[p.Current] = current
		}
		for _, k := range kept {
			p.Rules[settle.Stamp(k)] = k
		}
		return p
	}
	keptOnly := func(k []settle.RuleRef) settle.Publication {
		return settle.Publication{Rules: map[string][]settle.RuleRef{settle.Stamp(k): k}}
	}
	tests := []struct {
		name      string
		planned   []settle.RuleRef
		notLive   string // a rule whose index is not in place: no stamp is planned
		held      bool
		published settle.Publication
		want      settle.Publication
	}{
		{name: "a rule removed, the new stamp held: the old one stays", planned: a, held: true, published: pub(ab), want: keptOnly(ab)},
		{name: "a rule removed, the new stamp published: both", planned: a, published: pub(ab), want: pub(a, ab)},
		{name: "a rule added: both, the old one as a bridge", planned: abc, published: pub(ab), want: pub(abc, ab)},
		{name: "a rule added, the new stamp held: the old one stays", planned: abc, held: true, published: pub(ab), want: keptOnly(ab)},
		{name: "a rule added, its index not in place yet: the old one stays", planned: abc, notLive: "c/c", published: pub(ab), want: keptOnly(ab)},
		{name: "a rule added, an old rule's index gone: nothing", planned: abc, notLive: "c/a", published: pub(ab), want: settle.Publication{Rules: map[string][]settle.RuleRef{}}},
		{name: "one rule removed and one added: both", planned: bc, published: pub(ab), want: pub(bc, ab)},
		{name: "a second rule added during a bridge: the newer old stamp bridges", planned: abc, published: pub(ab, a), want: pub(abc, ab)},
		{name: "the bridge ended by the webhook: the new stamp alone", planned: abc, published: pub(abc), want: pub(abc)},
		{name: "a rule edited: the new stamp alone", planned: edited, published: pub(ab), want: pub(edited)},
		{name: "the published stamp's rules not recorded: the new stamp alone", planned: a,
			published: settle.Publication{Current: settle.Stamp(ab), Rules: map[string][]settle.RuleRef{settle.Stamp(ab): nil}}, want: pub(a)},
		{name: "two removals: the newer old stamp is kept", planned: a, published: pub(ab, abc), want: pub(a, ab)},
		{name: "unchanged rules keep the stamp kept before", planned: a, published: pub(a, ab), want: pub(a, ab)},
		{name: "nothing published: the new stamp alone", planned: a, want: pub(a)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := make([]settle.Protecting, len(tt.planned))
			for i, r := range tt.planned {
				ps[i] = settle.Protecting{Rule: r, Live: r.Key != tt.notLive}
			}
			planned, stamps := Stamps{}, Stamps{}
			if stamp, ok := settle.StampFor(ps); ok {
				planned[gr] = stamp
				if !tt.held {
					stamps[gr] = stamp
				}
			}
			published := map[schema.GroupResource]settle.Publication{}
			if tt.published.Rules != nil {
				published[gr] = tt.published
			}
			got := publish(stamps, planned, map[schema.GroupResource][]settle.Protecting{gr: ps}, published)[gr]
			if got.Rules == nil {
				got.Rules = map[string][]settle.RuleRef{}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("publish = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestBridged: a rule is held back from Ready while a type it protects has
// a stamp accepted whose rules lack it as it is now (a bridge from the
// rules before it); not when every accepted stamp counts it, nor when
// nothing is published for the type.
func TestBridged(t *testing.T) {
	vpcs := schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	ref := func(n string) settle.RuleRef {
		return settle.RuleRef{Key: "c/" + n, UID: "uid-" + n, Generation: 1, IndexEpoch: "e-" + n}
	}
	a, b := ref("a"), ref("b")
	protecting := map[schema.GroupResource][]settle.Protecting{vpcs.GroupResource(): {{Rule: a, Live: true}, {Rule: b, Live: true}}}
	ab, onlyA := []settle.RuleRef{a, b}, []settle.RuleRef{a}
	rule := RuleInput{Key: "c/b", Dependencies: []DependencyInput{{GVR: vpcs}}}
	tests := []struct {
		name string
		pub  *settle.Publication
		want string
	}{
		{name: "a bridge from the rules before it", pub: &settle.Publication{Current: settle.Stamp(ab), Rules: map[string][]settle.RuleRef{settle.Stamp(ab): ab, settle.Stamp(onlyA): onlyA}}, want: "vpcs.network.test.io"},
		{name: "the bridge alone, the new stamp held", pub: &settle.Publication{Rules: map[string][]settle.RuleRef{settle.Stamp(onlyA): onlyA}}, want: "vpcs.network.test.io"},
		{name: "the new stamp alone", pub: &settle.Publication{Current: settle.Stamp(ab), Rules: map[string][]settle.RuleRef{settle.Stamp(ab): ab}}},
		{name: "nothing published"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pubs := map[schema.GroupResource]settle.Publication{}
			if tt.pub != nil {
				pubs[vpcs.GroupResource()] = *tt.pub
			}
			if got := bridged(rule, []map[schema.GroupResource]settle.Publication{pubs}, protecting); got != tt.want {
				t.Errorf("bridged = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHoldBridged: a rule is held back from Ready while the publications a
// run writes, or any configuration it read (each on its own, also one the
// run does not write), accept a stamp that lacks it; and for the
// propagation delay after the last time one did, while every shard applies
// the configuration that ends the bridge.
func TestHoldBridged(t *testing.T) {
	vpcs := testVPCs
	a := settle.RuleRef{Key: "c/a", UID: "uid-a", Generation: 1, IndexEpoch: "e-a"}
	b := settle.RuleRef{Key: "c/b", UID: "uid-b", Generation: 1, IndexEpoch: "e-b"}
	ab, onlyA := []settle.RuleRef{a, b}, []settle.RuleRef{a}
	protecting := map[schema.GroupResource][]settle.Protecting{vpcs.GroupResource(): {{Rule: a, Live: true}, {Rule: b, Live: true}}}
	rules := []RuleInput{{Key: "c/a", Dependencies: []DependencyInput{{GVR: vpcs}}}, {Key: "c/b", Dependencies: []DependencyInput{{GVR: vpcs}}}}
	current := settle.Publication{Current: settle.Stamp(ab), Rules: map[string][]settle.RuleRef{settle.Stamp(ab): ab}}
	bridging := settle.Publication{Current: settle.Stamp(ab), Rules: map[string][]settle.RuleRef{settle.Stamp(ab): ab, settle.Stamp(onlyA): onlyA}}
	settling := testSettings
	settling.Settle = true
	config := func(cluster string, pub settle.Publication) process.ShardObject {
		c := DesiredScopedWebhookConfiguration(settling, Protected{vpcs: admission.Of("comp")}, map[schema.GroupResource]settle.Publication{vpcs.GroupResource(): pub})
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			t.Fatal(err)
		}
		return process.ShardObject{Cluster: cluster, Obj: &unstructured.Unstructured{Object: m}}
	}
	s := &Syncer{Propagation: 2 * time.Second}
	start := time.Unix(1000, 0)
	steps := []struct {
		name    string
		at      time.Duration
		writes  settle.Publication
		configs []process.ShardObject
		want    string
		wait    time.Duration
	}{
		{name: "the run writes a bridge", writes: bridging, configs: []process.ShardObject{config("net", bridging)}, want: "vpcs.network.io"},
		{name: "the webhook ended it in one configuration, not in another", at: time.Second, writes: current,
			configs: []process.ShardObject{config("net", current), config("net-2", bridging)}, want: "vpcs.network.io"},
		{name: "ended everywhere, not yet applied everywhere", at: 2 * time.Second, writes: current,
			configs: []process.ShardObject{config("net", current), config("net-2", current)}, want: "the types it protects", wait: time.Second},
		{name: "applied everywhere", at: 4 * time.Second, writes: current, configs: []process.ShardObject{config("net", current), config("net-2", current)}},
	}
	for _, st := range steps {
		plan := &Plan{Rules: map[string]*RulePlan{"c/a": {}, "c/b": {}}, Publications: map[schema.GroupResource]settle.Publication{vpcs.GroupResource(): st.writes}}
		wait := s.holdBridged(plan, rules, protecting, st.configs, testSettings.ConfigurationName, start.Add(st.at))
		if got := plan.Rules["c/b"].Bridged; got != st.want || wait != st.wait {
			t.Errorf("%s: rule b held for %q (next check in %s), want %q (%s)", st.name, got, wait, st.want, st.wait)
		}
		if got := plan.Rules["c/a"].Bridged; got != "" {
			t.Errorf("%s: rule a, which every stamp counts, held for %q", st.name, got)
		}
	}
}

// TestPublishedKeptStamp: a configuration rendered with a kept stamp reads
// back, as the webhook reads it, with both stamps, the current one, and
// the rules of each.
func TestPublishedKeptStamp(t *testing.T) {
	settling := testSettings
	settling.Settle = true
	ab := []settle.RuleRef{{Key: "c/a", UID: "u-a", Generation: 1, IndexEpoch: "e-a"}, {Key: "c/b", UID: "u-b", Generation: 3, IndexEpoch: "e-b"}}
	a := ab[:1]
	want := settle.Publication{Current: settle.Stamp(a), Rules: map[string][]settle.RuleRef{settle.Stamp(a): a, settle.Stamp(ab): ab}}
	c := DesiredScopedWebhookConfiguration(settling, Protected{testVPCs: admission.Of("comp")}, map[schema.GroupResource]settle.Publication{testVPCs.GroupResource(): want})
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	got := publishedStamps([]process.ShardObject{{Cluster: "net", Obj: &unstructured.Unstructured{Object: m}}}, testSettings.ConfigurationName)
	if !reflect.DeepEqual(got[testVPCs.GroupResource()], want) {
		t.Errorf("published %+v, want %+v", got[testVPCs.GroupResource()], want)
	}
}
