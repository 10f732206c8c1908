package controller

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// manyRuleObjects returns n rules over VMs protecting VPCs in one
// workspace, as the benchmark's readiness measurement creates them, each
// with the status a previous run wrote.
func manyRuleObjects(b testing.TB, n int) []process.ShardObject {
	b.Helper()
	out := make([]process.ShardObject, 0, n)
	for i := range n {
		r := &v1alpha1.DependencyRule{}
		r.APIVersion, r.Kind = v1alpha1.GroupVersion.String(), "DependencyRule"
		r.Name, r.UID, r.Generation = fmt.Sprintf("many-%04d", i), types.UID(fmt.Sprintf("uid-%d", i)), 1
		r.Spec.Dependent = v1alpha1.Dependent{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines", Kind: "VirtualMachine", APIExportName: "compute.test.io"}
		r.Spec.Dependencies = []v1alpha1.Dependency{{
			APIExportRef: v1alpha1.APIExportRef{Path: "root:network", Name: "network.test.io"},
			Group:        "network.test.io", Version: "v1", Resource: "vpcs",
			FieldRef: v1alpha1.FieldRef{Path: fmt.Sprintf(".spec.field%d", i)},
		}}
		r.ResourceVersion = "1"
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, process.ShardObject{URL: "https://vw", Cluster: "comp", Obj: &unstructured.Unstructured{Object: m}})
	}
	return out
}

// BenchmarkSyncPlan is the computation of one run with 1001 rules that did
// not change since the last run: what every run repeats around its
// requests.
func BenchmarkSyncPlan(b *testing.B) {
	objs := manyRuleObjects(b, 1001)
	bindings := map[string]Binding{
		"comp": {URL: "https://vw", ClaimAccepted: true, IndexClaimAccepted: true, TypesClaimAccepted: true},
		"net":  {URL: "https://vw", ClaimAccepted: true, IndexClaimAccepted: true, TypesClaimAccepted: true},
	}
	resolve := fakeResolve(map[string]string{"root:network": "net"})
	exports := func(_ context.Context, cluster, name string) (*v1alpha1.ExportTypes, error) {
		if cluster == "net" {
			return networkExport, nil
		}
		return computeExport(preserving()), nil
	}
	settings := WebhookSettings{ConfigurationName: "c", URL: "https://wh/validate", MutateURL: "https://wh/mutate", Settle: true}
	decoded := decodedRules{}
	for b.Loop() {
		rules := make([]RuleInput, 0, len(objs))
		for _, o := range objs {
			rules = append(rules, decoded.get(o).input)
		}
		plan := ComputePlan(context.Background(), rules, bindings, resolve, exports)
		plan.Stamps = PlanStamps(rules, nil)
		for cluster := range plan.Webhooks {
			DesiredScopedWebhookConfiguration(settings, plan.Protected(cluster), currentOnly(plan.Stamps))
		}
		for cluster, gvrs := range plan.Indexes {
			_ = DesiredIndexConfiguration(settings, gvrs)
			_ = cluster
		}
		for _, o := range objs {
			rule := decoded.get(o).rule.DeepCopy()
			rp := plan.Rules[o.Cluster+"/"+o.Obj.GetName()]
			before := rule.Status.DeepCopy()
			setCondition(&rule.Status.Conditions, v1alpha1.ConditionTypesServed, rp.Served, rule.Generation)
			setCondition(&rule.Status.Conditions, v1alpha1.ConditionWebhookInstalled, rp.Installed, rule.Generation)
			_ = statusEqual(before, &rule.Status)
		}
	}
}
