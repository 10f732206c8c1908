package registry

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

var (
	vpcsGR  = schema.GroupResource{Group: "network.test.io", Resource: "vpcs"}
	subnets = schema.GroupResource{Group: "network.test.io", Resource: "subnets"}
)

func paths(ps ...string) []fieldpath.Path {
	out := make([]fieldpath.Path, len(ps))
	for i, p := range ps {
		out[i] = fieldpath.MustParse(p)
	}
	return out
}

func TestNewSchema(t *testing.T) {
	refs := []Reference{{Target: vpcsGR, Paths: paths(".spec.vpcRef.name")}}
	base := NewSchema([]RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}, {Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}}, refs)
	if !base.Indexed() || len(base.Stamp) != 20 {
		t.Fatalf("stamp = %q, want 20 hex characters", base.Stamp)
	}
	tests := []struct {
		name      string
		rules     []RuleVersion
		refs      []Reference
		sameStamp bool
		indexed   bool
	}{
		{name: "order does not matter", rules: []RuleVersion{{Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}, {Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, refs: refs, sameStamp: true, indexed: true},
		{name: "an edited rule changes the stamp", rules: []RuleVersion{{Key: "c/a", Generation: 2, Version: "v1", Epoch: "e1"}, {Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}}, refs: refs, indexed: true},
		{name: "a rule deleted and created again under its name changes the stamp", rules: []RuleVersion{{Key: "c/a", UID: "second", Generation: 1, Version: "v1", Epoch: "e1"}, {Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}}, refs: refs, indexed: true},
		{name: "a removed rule changes the stamp", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, refs: refs, indexed: true},
		{name: "the same rule in another workspace changes the stamp", rules: []RuleVersion{{Key: "d/a", Generation: 1, Version: "v1", Epoch: "e1"}, {Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}}, refs: refs, indexed: true},
		{name: "no rules: not indexed", refs: refs},
		{name: "a new epoch changes the stamp", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e2"}, {Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}}, refs: refs, indexed: true},
		{name: "a rule without an index webhook: not indexed", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}, {Key: "c/b", Generation: 3, Version: "v1"}}, refs: refs},
		{name: "a path into status: not indexed", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, refs: []Reference{{Target: vpcsGR, Paths: paths(".spec.vpcRef.name", ".status.vpc")}}},
		{name: "a list in status: not indexed", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, refs: []Reference{{Target: vpcsGR, Paths: paths(".status[*].vpc")}}},
		{name: "a field named like status is fine", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, refs: []Reference{{Target: vpcsGR, Paths: paths(".statusRef.name")}}, indexed: true},
		{name: "rules over two versions: not indexed", rules: []RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}, {Key: "c/b", Generation: 3, Version: "v2", Epoch: "e1"}}, refs: refs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSchema(tt.rules, tt.refs)
			if s.Indexed() {
				var fingerprinted []settle.RuleRef
				for _, r := range tt.rules {
					fingerprinted = append(fingerprinted, settle.RuleRef{Key: r.Key, UID: r.UID, Generation: r.Generation, IndexEpoch: r.Epoch})
				}
				if s.Stamp == settle.Stamp(fingerprinted) {
					t.Fatalf("stamp %q is the settle stamp of the same rules", s.Stamp)
				}
			}
			if s.Indexed() != tt.indexed {
				t.Fatalf("indexed = %v, want %v", s.Indexed(), tt.indexed)
			}
			if (s.Stamp == base.Stamp) != tt.sameStamp {
				t.Fatalf("stamp %q vs %q: same = %v, want %v", s.Stamp, base.Stamp, s.Stamp == base.Stamp, tt.sameStamp)
			}
		})
	}
}

// TestSchemaStampGolden pins index stamps: dependents carry them, and a
// change makes every dependent read in full at deletions until it is
// re-indexed. Change them only with scheme, and say so in the upgrading
// guide.
func TestSchemaStampGolden(t *testing.T) {
	refs := []Reference{{Target: vpcsGR, Paths: paths(".spec.vpcRef.name")}}
	for _, tt := range []struct {
		name  string
		rules []RuleVersion
		want  string
	}{
		{"two rules", []RuleVersion{{Key: "c/b", Generation: 3, Version: "v1", Epoch: "e1"}, {Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, "5f82eff8d5bbe0cde87f"},
		{"a kcp path", []RuleVersion{{Key: "root:org/vm-rule", UID: "uid-vm", Generation: 2, Version: "v1alpha1", Epoch: "epoch-1"}}, "9b391b9eff561cfddb82"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewSchema(tt.rules, refs).Stamp; got != tt.want {
				t.Errorf("stamp = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSchemaRuleUIDs: the schema names the rules over the type, sorted and
// once each, also when the type cannot be indexed: the intents its writes
// record name them either way.
func TestSchemaRuleUIDs(t *testing.T) {
	refs := []Reference{{Target: vpcsGR, Paths: paths(".status.vpc")}}
	s := NewSchema([]RuleVersion{{Key: "c/b", UID: "u2", Version: "v1"}, {Key: "c/a", UID: "u1", Version: "v1"}, {Key: "c/a", UID: "u1", Version: "v1"}}, refs)
	if s.Indexed() || !slices.Equal(s.RuleUIDs, []string{"u1", "u2"}) {
		t.Fatalf("indexed %v, rule UIDs %v; want not indexed, [u1 u2]", s.Indexed(), s.RuleUIDs)
	}
}

func TestLabels(t *testing.T) {
	s := NewSchema([]RuleVersion{{Key: "c/a", Generation: 1, Version: "v1", Epoch: "e1"}}, []Reference{
		{Target: vpcsGR, Paths: paths(".spec.vpcRef.name", ".spec.networks[*].vpc")},
		{Target: subnets, Paths: paths(".spec.subnetRef.name")},
	})
	obj := map[string]interface{}{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"vm"},"spec":{
		"vpcRef":{"name":"vpc-a"},
		"networks":[{"vpc":"vpc-b"},{"vpc":"vpc-a"},{"vpc":""},{"vpc":7}],
		"subnetRef":{"name":"vpc-a"}}}`), &obj); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		StampLabel:                 s.Stamp,
		RefLabel(vpcsGR, "vpc-a"):  "",
		RefLabel(vpcsGR, "vpc-b"):  "",
		RefLabel(subnets, "vpc-a"): "",
	}
	got := s.Labels(obj)
	if !maps.Equal(got, want) {
		t.Fatalf("labels = %v, want %v", got, want)
	}
	for k, v := range got {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("label key %q is invalid: %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label value %q is invalid: %v", v, errs)
		}
	}
	if RefLabel(vpcsGR, "vpc-a") == RefLabel(subnets, "vpc-a") {
		t.Fatal("references to two resources share a label")
	}
	long := strings.Repeat("a", 253)
	if errs := validation.IsQualifiedName(RefLabel(vpcsGR, long)); len(errs) > 0 {
		t.Fatalf("the label of a 253-character name is invalid: %v", errs)
	}
	if got := (Schema{}).Labels(obj); got != nil {
		t.Fatalf("an unindexed type got labels %v", got)
	}
}

func TestRelabel(t *testing.T) {
	index := map[string]string{StampLabel: "s1", RefLabel(vpcsGR, "vpc-a"): ""}
	tests := []struct {
		name        string
		current     map[string]string
		index       map[string]string
		want        map[string]string
		wantChanged bool
	}{
		{name: "new object", current: nil, index: index, want: index, wantChanged: true},
		{name: "already right", current: map[string]string{"team": "a", StampLabel: "s1", RefLabel(vpcsGR, "vpc-a"): ""}, index: index,
			want: map[string]string{"team": "a", StampLabel: "s1", RefLabel(vpcsGR, "vpc-a"): ""}},
		{name: "a stale reference goes, user labels stay", current: map[string]string{"team": "a", StampLabel: "s0", RefLabel(vpcsGR, "vpc-old"): ""}, index: index,
			want: map[string]string{"team": "a", StampLabel: "s1", RefLabel(vpcsGR, "vpc-a"): ""}, wantChanged: true},
		{name: "a forged stamp is replaced", current: map[string]string{StampLabel: "s1"}, index: index, want: index, wantChanged: true},
		{name: "stripping", current: map[string]string{"team": "a", StampLabel: "s1", RefLabel(vpcsGR, "vpc-a"): ""}, index: nil,
			want: map[string]string{"team": "a"}, wantChanged: true},
		{name: "nothing to strip", current: nil, index: nil, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Relabel(tt.current, tt.index)
			if !maps.Equal(got, tt.want) || changed != tt.wantChanged {
				t.Fatalf("got %v (changed %v), want %v (changed %v)", got, changed, tt.want, tt.wantChanged)
			}
		})
	}
}

func TestSelectors(t *testing.T) {
	s := Schema{Stamp: "s1"}
	objects := map[string]map[string]string{
		"current, referencing": {StampLabel: "s1", RefLabel(vpcsGR, "vpc-a"): ""},
		"current, other":       {StampLabel: "s1", RefLabel(vpcsGR, "vpc-b"): ""},
		"old stamp":            {StampLabel: "s0", RefLabel(vpcsGR, "vpc-a"): ""},
		"no stamp":             {"team": "a"},
		"no labels":            nil,
	}
	unstamped, err := labels.Parse(s.UnstampedSelector())
	if err != nil {
		t.Fatal(err)
	}
	referencing, err := labels.Parse(s.ReferencingSelector(vpcsGR, "vpc-a"))
	if err != nil {
		t.Fatal(err)
	}
	wantUnstamped := map[string]bool{"old stamp": true, "no stamp": true, "no labels": true}
	wantReferencing := map[string]bool{"current, referencing": true}
	for name, l := range objects {
		if got := unstamped.Matches(labels.Set(l)); got != wantUnstamped[name] {
			t.Errorf("%s: unstamped selector matches = %v", name, got)
		}
		if got := referencing.Matches(labels.Set(l)); got != wantReferencing[name] {
			t.Errorf("%s: referencing selector matches = %v", name, got)
		}
		if unstamped.Matches(labels.Set(l)) && referencing.Matches(labels.Set(l)) {
			t.Errorf("%s: both selectors match; the reads must be disjoint", name)
		}
	}
}
