package controller

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// evaluate compiles a match condition as the API server sees it (object
// and oldObject, oldObject null on a create) and evaluates it.
func evaluate(t *testing.T, expression string, object, oldObject map[string]interface{}) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expression)
	if iss.Err() != nil {
		t.Fatalf("compiling %q: %v", expression, iss.Err())
	}
	if ast.OutputType() != cel.BoolType {
		t.Fatalf("%q is a %s, not a bool", expression, ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]interface{}{"object": object, "oldObject": types.NullValue}
	if oldObject != nil {
		vars["oldObject"] = oldObject
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		t.Fatalf("evaluating %q: %v", expression, err)
	}
	return out.Value().(bool)
}

func withMeta(field string, m map[string]interface{}) map[string]interface{} {
	meta := map[string]interface{}{"name": "vpc-a"}
	if m != nil {
		meta[field] = m
	}
	return map[string]interface{}{"metadata": meta}
}

// TestKeepIntentsCondition: the keep-intents webhook is called for exactly
// the updates that drop or change an intent, and never for one that only
// adds intents or leaves them alone (the webhook's own intent patches).
func TestKeepIntentsCondition(t *testing.T) {
	intent := v1alpha1.IntentAnnotationPrefix + "a1"
	other := v1alpha1.IntentAnnotationPrefix + "b2"
	ann := func(kv ...string) map[string]interface{} {
		if len(kv) == 0 {
			return nil
		}
		m := map[string]interface{}{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]interface{}
		called   bool
	}{
		{"no intents before", ann("team", "x"), ann(), false},
		{"no annotations before", nil, ann(intent, "v"), false},
		{"an intent added", ann(intent, "v"), ann(intent, "v", other, "w"), false},
		{"intents kept, another annotation changed", ann(intent, "v", "team", "x"), ann(intent, "v", "team", "y"), false},
		{"an intent dropped", ann(intent, "v", other, "w"), ann(other, "w"), true},
		{"every annotation dropped", ann(intent, "v"), nil, true},
		{"an intent's value changed", ann(intent, "v"), ann(intent, "forged"), true},
		{"an intent dropped while another is added", ann(intent, "v"), ann(other, "w"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, keepIntentsCondition, withMeta("annotations", tc.new), withMeta("annotations", tc.old)); got != tc.called {
				t.Errorf("webhook called = %v, want %v", got, tc.called)
			}
		})
	}
}

// TestGuardCondition: the settle guard is called for every create or
// update that sets the settled label or changes its value, and not for one
// that removes it or leaves it alone.
func TestGuardCondition(t *testing.T) {
	lbl := func(v string) map[string]interface{} {
		if v == "" {
			return map[string]interface{}{"app": "x"}
		}
		return map[string]interface{}{settle.SettledLabel: v}
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]interface{}
		called   bool
	}{
		{"create with the label", nil, withMeta("labels", lbl("s1")), true},
		{"create without it", nil, withMeta("labels", lbl("")), false},
		{"create without labels", nil, withMeta("labels", nil), false},
		{"update setting it", withMeta("labels", lbl("")), withMeta("labels", lbl("s1")), true},
		{"update setting it on an object without labels", withMeta("labels", nil), withMeta("labels", lbl("s1")), true},
		{"update changing it", withMeta("labels", lbl("s1")), withMeta("labels", lbl("s2")), true},
		{"update keeping it", withMeta("labels", lbl("s1")), withMeta("labels", lbl("s1")), false},
		{"update removing it", withMeta("labels", lbl("s1")), withMeta("labels", lbl("")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, settle.GuardCondition, tc.new, tc.old); got != tc.called {
				t.Errorf("webhook called = %v, want %v", got, tc.called)
			}
		})
	}
}

// TestDeferGuardCondition: the deferral guard is called for every create or
// update that writes a deferred deletion's annotation or label, or changes
// either, and not for one that removes them or leaves them alone.
func TestDeferGuardCondition(t *testing.T) {
	ann := func(v string) map[string]interface{} {
		if v == "" {
			return map[string]interface{}{"note": "x"}
		}
		return map[string]interface{}{v1alpha1.DeletionDeferredAnnotation: v}
	}
	lbl := func(v string) map[string]interface{} {
		if v == "" {
			return map[string]interface{}{"app": "x"}
		}
		return map[string]interface{}{v1alpha1.DeletionDeferredLabel: v}
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]interface{}
		called   bool
	}{
		{"create with the record", nil, withMeta("annotations", ann(`{"user":"u"}`)), true},
		{"create with the label", nil, withMeta("labels", lbl("true")), true},
		{"create without either", nil, withMeta("annotations", ann("")), false},
		{"create without metadata maps", nil, withMeta("labels", nil), false},
		{"update writing the record", withMeta("annotations", ann("")), withMeta("annotations", ann(`{"user":"u"}`)), true},
		{"update writing it on an object without annotations", withMeta("annotations", nil), withMeta("annotations", ann(`{"user":"u"}`)), true},
		{"update changing the record", withMeta("annotations", ann(`{"user":"a"}`)), withMeta("annotations", ann(`{"user":"b"}`)), true},
		{"update keeping the record", withMeta("annotations", ann(`{"user":"a"}`)), withMeta("annotations", ann(`{"user":"a"}`)), false},
		{"update removing the record", withMeta("annotations", ann(`{"user":"a"}`)), withMeta("annotations", ann("")), false},
		{"update adding the label", withMeta("labels", lbl("")), withMeta("labels", lbl("true")), true},
		{"update changing the label", withMeta("labels", lbl("true")), withMeta("labels", lbl("yes")), true},
		{"update removing the label", withMeta("labels", lbl("true")), withMeta("labels", lbl("")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evaluate(t, v1alpha1.DeferGuardCondition, tc.new, tc.old); got != tc.called {
				t.Errorf("webhook called = %v, want %v", got, tc.called)
			}
		})
	}
}
