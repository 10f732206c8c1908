package decision

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// TestOwnTypeIsNoDependent: a workspace that serves a type of the
// dependent's group and resource without binding the export the rule names
// (a CRD of its own, or another provider's export) has no dependents of the
// rule, however its objects reference; a workspace that binds the export
// has, and one whose bindings cannot be read counts every such object.
func TestOwnTypeIsNoDependent(t *testing.T) {
	compute := registry.Export{Cluster: "p1", Name: "compute"}
	rule := func(e registry.Export) registry.Protection {
		return registry.Protection{Rule: e.Cluster + "/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine",
			Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}, DependentExports: []registry.Export{e}}
	}
	binding := func(export registry.Export) map[string]interface{} {
		return map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{
			apisv1alpha1.InternalAPIBindingExportLabelKey: exportLabel(export)}}}
	}
	tests := []struct {
		name     string
		bindings []registry.Export
		// rules are the dependent exports of the rules over VMs, one
		// rule of p1's compute export when empty.
		rules     []registry.Export
		forbidden bool
		wantAllow bool
	}{
		{name: "the workspace binds the dependent's export", bindings: []registry.Export{{Cluster: "p2", Name: "network"}, compute}},
		{name: "a CRD of the workspace's own, no binding of the export", bindings: []registry.Export{{Cluster: "p2", Name: "network"}}, wantAllow: true},
		{name: "another provider's export of the same name", bindings: []registry.Export{{Cluster: "p9", Name: "compute"}, {Cluster: "p2", Name: "network"}}, wantAllow: true},
		{name: "an export of another name in the rule's workspace", bindings: []registry.Export{{Cluster: "p1", Name: "compute-2"}}, wantAllow: true},
		{name: "bindings that cannot be read count every object", forbidden: true},
		{name: "rules of two providers over one type, the workspace binds the second's",
			rules: []registry.Export{compute, {Cluster: "p9", Name: "compute"}}, bindings: []registry.Export{{Cluster: "p9", Name: "compute"}}},
		{name: "rules of two providers over one type, the workspace binds neither",
			rules: []registry.Export{compute, {Cluster: "p9", Name: "compute"}}, bindings: []registry.Export{{Cluster: "p8", Name: "compute"}}, wantAllow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := &fakeFrontProxy{forbiddenResources: map[string]bool{"tenant|apibindings": tt.forbidden}}
			fp.add("tenant", vpcGVR, "a", "vpc-x", map[string]interface{}{})
			fp.add("tenant", vmGVR, "a", "vm-1", map[string]interface{}{"spec": vpcRef("vpc-x")})
			for i, b := range tt.bindings {
				fp.add("tenant", apiBindings, "", "binding-"+string(rune('a'+i)), binding(b))
			}
			rules := tt.rules
			if len(rules) == 0 {
				rules = []registry.Export{compute}
			}
			protections := fakeProtections{}
			for _, e := range rules {
				protections[vpcGVR] = append(protections[vpcGVR], rule(e))
			}
			v := bindingValidator(t, fp, protections)
			resp, outcome := v.Decide(context.Background(), deleteVPC("tenant"))
			if resp.Allowed != tt.wantAllow {
				t.Fatalf("allowed = %v (%s: %v), want %v", resp.Allowed, outcome, resp.Result, tt.wantAllow)
			}
			onlyIn(t, fp.sent(), "tenant")
		})
	}
}

// TestBindingIsRememberedOnlyWhenBound: a workspace found to bind the
// export is not asked again for a while (a stale answer refuses only that
// workspace's own deletes); one found not to bind it is asked every time,
// so that a binding made since counts at once.
func TestBindingIsRememberedOnlyWhenBound(t *testing.T) {
	compute := registry.Export{Cluster: "p1", Name: "compute"}
	protections := fakeProtections{vpcGVR: {{Rule: "p1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine",
		Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}, DependentExports: []registry.Export{compute}}}}
	fp := &fakeFrontProxy{}
	fp.add("tenant", vpcGVR, "a", "vpc-x", map[string]interface{}{})
	fp.add("tenant", vmGVR, "a", "vm-1", map[string]interface{}{"spec": vpcRef("vpc-x")})
	v := bindingValidator(t, fp, protections)
	bindingReads := func() int {
		n := 0
		for _, r := range fp.sent() {
			if strings.HasSuffix(r, "/apibindings") {
				n++
			}
		}
		return n
	}

	if resp, _ := v.Decide(context.Background(), deleteVPC("tenant")); !resp.Allowed {
		t.Fatalf("refused without a binding of the export: %v", resp.Result)
	}
	fp.mu.Lock()
	fp.add("tenant", apiBindings, "", "compute", map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{
		apisv1alpha1.InternalAPIBindingExportLabelKey: exportLabel(compute)}}})
	fp.mu.Unlock()
	for i := range 3 {
		if resp, _ := v.Decide(context.Background(), deleteVPC("tenant")); resp.Allowed {
			t.Fatalf("delete %d allowed once the workspace binds the export", i+1)
		}
	}
	if got := bindingReads(); got != 2 {
		t.Fatalf("the bindings were listed %d times, want 2 (each time while unbound, once when bound)", got)
	}
}

func bindingValidator(t *testing.T, fp *fakeFrontProxy, protections fakeProtections) *Validator {
	t.Helper()
	ready := make(chan struct{})
	close(ready)
	return NewValidator(protections, serveFinder(t, fp), admission.When(ready), ValidatorOptions{}, logr.Discard())
}

func deleteVPC(cluster string) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Delete, Resource: metav1.GroupVersionResource(vpcGVR),
		Namespace: "a", Name: "vpc-x", OldObject: object(cluster, "a", "vpc-x", nil, nil)}
}

// TestBindingsRememberedBounded: a replica that decides in ever new
// workspaces keeps at most bindingsRemembered of their bindings, forgetting
// the least recently used first; a forgotten one is only read again.
func TestBindingsRememberedBounded(t *testing.T) {
	var b bindings
	key := func(i int) bindingKey { return bindingKey{cluster: fmt.Sprintf("c%d", i), export: "p1:compute"} }
	for i := range bindingsRemembered + 100 {
		b.remember(key(i))
	}
	if n := len(b.cache().Keys()); n != bindingsRemembered {
		t.Errorf("remembered %d bindings, want %d", n, bindingsRemembered)
	}
	if b.bound(key(0)) {
		t.Error("the least recently used binding is still remembered")
	}
	if !b.bound(key(bindingsRemembered + 99)) {
		t.Error("the most recent binding is forgotten")
	}
}
