package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

func TestDecodedRulesDecodeOnlyChanges(t *testing.T) {
	objs := manyRuleObjects(t, 2)
	d := decodedRules{}
	first := d.get(objs[0])
	if first.err != nil || first.input.Key != "comp/many-0000" || first.input.Invalid != "" {
		t.Fatalf("decoded %+v", first)
	}
	if again := d.get(objs[0]); again.rule != first.rule {
		t.Error("an unchanged rule was decoded again")
	}
	changed := process.ShardObject{URL: objs[0].URL, Cluster: objs[0].Cluster, Obj: objs[0].Obj.DeepCopy()}
	changed.Obj.SetResourceVersion("2")
	if again := d.get(changed); again.rule == first.rule {
		t.Error("a rule at a new resourceVersion was not decoded again")
	}
	d.get(objs[1])
	d.keep(objs[1:])
	if _, ok := d["comp/many-0000"]; ok || len(d) != 1 {
		t.Errorf("keep left %v", d)
	}
}

func TestRuleChanged(t *testing.T) {
	rule := func(edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"metadata": map[string]interface{}{"name": "r", "generation": int64(1)},
			"status": map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"type": "Enforced", "status": "False", "observedGeneration": int64(1)},
				map[string]interface{}{"type": "Ready", "status": "False", "observedGeneration": int64(1)},
			}},
		}}
		if edit != nil {
			edit(u)
		}
		return u
	}
	setCond := func(typ, status string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m := c.(map[string]interface{}); m["type"] == typ {
					m["status"] = status
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
		}
	}
	tests := []struct {
		name    string
		updated *unstructured.Unstructured
		want    bool
	}{
		{"nothing", rule(nil), false},
		{"the controller's own status", rule(setCond("Ready", "True")), false},
		{"a label", rule(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }), false},
		{"the spec (generation)", rule(func(u *unstructured.Unstructured) { u.SetGeneration(2) }), true},
		{"the webhook's Enforced", rule(setCond("Enforced", "True")), true},
		{"deletion started", rule(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "2026-01-01T00:00:00Z", "metadata", "deletionTimestamp")
		}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ruleChanged(rule(nil), tt.updated); got != tt.want {
				t.Errorf("ruleChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
