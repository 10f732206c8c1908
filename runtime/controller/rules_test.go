package controller

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestStatusEqual: a status is written when anything the webhook reads
// changed, the index epoch included.
func TestStatusEqual(t *testing.T) {
	base := func() *v1alpha1.DependencyRuleStatus {
		return &v1alpha1.DependencyRuleStatus{ObservedGeneration: 2, IndexEpoch: "uid-1", Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionIndexed, "True", "Indexed"),
		}}
	}
	tests := []struct {
		name  string
		edit  func(*v1alpha1.DependencyRuleStatus)
		equal bool
	}{
		{"same", func(*v1alpha1.DependencyRuleStatus) {}, true},
		{"new epoch", func(s *v1alpha1.DependencyRuleStatus) { s.IndexEpoch = "uid-2" }, false},
		{"epoch cleared", func(s *v1alpha1.DependencyRuleStatus) { s.IndexEpoch = "" }, false},
		{"index lost", func(s *v1alpha1.DependencyRuleStatus) {
			s.Conditions[0] = cond(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted")
		}, false},
		{"new generation", func(s *v1alpha1.DependencyRuleStatus) { s.ObservedGeneration = 3 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := base()
			tt.edit(after)
			if got := statusEqual(base(), after); got != tt.equal {
				t.Fatalf("statusEqual = %v, want %v", got, tt.equal)
			}
		})
	}
}

// TestReadinessNeedsTypesServed: a rule whose types are not served, or not
// known to be, is never Ready, however installed and enforced it is.
func TestReadinessNeedsTypesServed(t *testing.T) {
	tests := []struct {
		served metav1.Condition
		ready  bool
		reason string
	}{
		{cond(v1alpha1.ConditionTypesServed, "True", ReasonTypesServed), true, "Ready"},
		{cond(v1alpha1.ConditionTypesServed, "False", v1alpha1.ReasonVersionNotServed), false, v1alpha1.ReasonVersionNotServed},
		{cond(v1alpha1.ConditionTypesServed, "Unknown", ReasonTypesClaimNotAccepted), false, ReasonTypesClaimNotAccepted},
		{cond("Other", "True", "Other"), false, "Pending"},
	}
	for _, tt := range tests {
		if got := readiness(readyBut(v1alpha1.ConditionTypesServed, tt.served)); got.OK != tt.ready || got.Reason != tt.reason {
			t.Errorf("TypesServed %s %s: readiness %+v, want ok=%v reason %s", tt.served.Status, tt.served.Reason, got, tt.ready, tt.reason)
		}
	}
}

// TestKeepVerdict: a read failure leaves a verdict for the current
// generation as it is, and nothing else.
func TestKeepVerdict(t *testing.T) {
	readFailed := Outcome{Unknown: true, Keep: true, Reason: ReasonExportReadFailed}
	tests := []struct {
		name    string
		current *metav1.Condition
		gen     int64
		o       Outcome
		keep    bool
	}{
		{"True for this generation", &metav1.Condition{Status: "True", ObservedGeneration: 2}, 2, readFailed, true},
		{"False for this generation", &metav1.Condition{Status: "False", ObservedGeneration: 2}, 2, readFailed, true},
		{"for an older generation", &metav1.Condition{Status: "True", ObservedGeneration: 1}, 2, readFailed, false},
		{"already Unknown", &metav1.Condition{Status: "Unknown", ObservedGeneration: 2}, 2, readFailed, false},
		{"no condition yet", nil, 2, readFailed, false},
		{"a claim not accepted does not pass by itself", &metav1.Condition{Status: "True", ObservedGeneration: 2}, 2, Outcome{Unknown: true, Reason: ReasonTypesClaimNotAccepted}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &v1alpha1.DependencyRule{}
			r.Generation = tt.gen
			if tt.current != nil {
				c := *tt.current
				c.Type, c.Reason = v1alpha1.ConditionTypesServed, "X"
				r.Status.Conditions = []metav1.Condition{c}
			}
			if got := keepVerdict(r, v1alpha1.ConditionTypesServed, tt.o); got != tt.keep {
				t.Fatalf("keepVerdict = %v, want %v", got, tt.keep)
			}
		})
	}
}

// TestRuleInputSpec: the spec a rule's planning input gives the checks of
// the rule's API is the spec it was made from.
func TestRuleInputSpec(t *testing.T) {
	vms := v1alpha1.Dependent{APIExportName: "compute.test.io", Group: "compute.test.io", Version: "v1", Kind: "VirtualMachine", Resource: "virtualmachines"}
	vpcs := v1alpha1.Dependency{APIExportRef: v1alpha1.APIExportRef{Path: "root:network", Name: "network.test.io"},
		Group: "network.test.io", Version: "v1", Resource: "vpcs", FieldRef: v1alpha1.FieldRef{Path: ".spec.vpcRef.name"}}
	secrets := v1alpha1.Dependency{APIExportRef: v1alpha1.APIExportRef{Path: "root:core", Name: "core.test.io"},
		Version: "v1", Resource: "secrets", FieldRef: v1alpha1.FieldRef{Path: ".spec.secrets[*].name"}}
	tests := []struct {
		name string
		spec v1alpha1.DependencyRuleSpec
	}{
		{"one dependency", v1alpha1.DependencyRuleSpec{Dependent: vms, Dependencies: []v1alpha1.Dependency{vpcs}}},
		{"several, one in the core group", v1alpha1.DependencyRuleSpec{Dependent: vms, Dependencies: []v1alpha1.Dependency{vpcs, secrets}}},
		{"none", v1alpha1.DependencyRuleSpec{Dependent: vms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := specInput("comp/vm", tt.spec).spec(); !reflect.DeepEqual(got, tt.spec) {
				t.Fatalf("spec %+v, want %+v", got, tt.spec)
			}
		})
	}
}

// TestReadinessNeedsTheIndex: a rule whose dependent type has no reference
// index is not Ready, however installed and enforced it is: no webhook
// records the intents of its dependents' writes, so a deletion decided
// while one is on its way would miss it.
func TestReadinessNeedsTheIndex(t *testing.T) {
	for _, tt := range []struct {
		indexed metav1.Condition
		ready   bool
		reason  string
	}{
		{cond(v1alpha1.ConditionIndexed, "True", "Indexed"), true, "Ready"},
		{cond(v1alpha1.ConditionIndexed, "False", "ClaimNotAccepted"), false, "ClaimNotAccepted"},
		{cond(v1alpha1.ConditionIndexed, "False", "ExportNotBound"), false, "ExportNotBound"},
		{cond(v1alpha1.ConditionIndexed, "False", "InstallFailed"), false, "InstallFailed"},
		{cond("Other", "True", "Other"), false, "Pending"},
	} {
		if got := readiness(readyBut(v1alpha1.ConditionIndexed, tt.indexed)); got.OK != tt.ready || got.Reason != tt.reason {
			t.Errorf("Indexed %s %s: readiness %+v, want ok=%v reason %s", tt.indexed.Status, tt.indexed.Reason, got, tt.ready, tt.reason)
		}
	}
}

// readyBut is a rule of generation 1 whose conditions for it all hold but
// the condition of type missing, which c stands in for (c of another type
// leaves it missing).
func readyBut(missing string, c metav1.Condition) *v1alpha1.DependencyRule {
	r := &v1alpha1.DependencyRule{}
	r.Generation = 1
	for _, have := range []metav1.Condition{
		cond(v1alpha1.ConditionWorkspacesResolved, "True", "Resolved"), cond(v1alpha1.ConditionTypesServed, "True", ReasonTypesServed),
		cond(v1alpha1.ConditionWebhookInstalled, "True", "Installed"), cond(v1alpha1.ConditionAcyclic, "True", "NoCycle"),
		cond(v1alpha1.ConditionIndexed, "True", "Indexed"), cond(v1alpha1.ConditionEnforced, "True", "Enforced"), c,
	} {
		if have.Type == missing && have != c {
			continue
		}
		have.ObservedGeneration = 1
		r.Status.Conditions = append(r.Status.Conditions, have)
	}
	return r
}
