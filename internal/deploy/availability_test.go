package deploy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func budget(t *testing.T, objs []*unstructured.Unstructured, name string) *policyv1.PodDisruptionBudget {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "PodDisruptionBudget" && o.GetName() == name {
			b := &policyv1.PodDisruptionBudget{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	return nil
}

// TestRenderDisruptionBudgets: a component with two or more replicas gets
// a budget that lets a drain evict one pod at a time and selects exactly
// its pods; one replica gets none, since that would block every drain.
func TestRenderDisruptionBudgets(t *testing.T) {
	tests := []struct {
		name                  string
		controller, webhook   int32
		wantCtrl, wantWebhook bool
	}{
		{"defaults", 2, 2, true, true},
		{"one controller", 1, 3, false, true},
		{"one webhook", 2, 1, true, false},
		{"scaled to zero", 0, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			c.Controller.Replicas, c.Webhook.Replicas = tt.controller, tt.webhook
			objs, err := Render(c)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]bool{"depctrl-controller": tt.wantCtrl, "depctrl-webhook": tt.wantWebhook} {
				b := budget(t, objs, name)
				if (b != nil) != want {
					t.Fatalf("budget %s rendered: %v, want %v", name, b != nil, want)
				}
				if b == nil {
					continue
				}
				if b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 1 || b.Spec.MinAvailable != nil {
					t.Errorf("budget %s: maxUnavailable %v minAvailable %v, want maxUnavailable 1", name, b.Spec.MaxUnavailable, b.Spec.MinAvailable)
				}
				if p := b.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
					t.Errorf("budget %s: unhealthy pods must always be evictable, got %v", name, p)
				}
				d := deployment(t, objs, name)
				if !matches(b.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
					t.Errorf("budget %s selects %v, pods are labelled %v", name, b.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
				}
				other := map[string]string{"depctrl-controller": "depctrl-webhook", "depctrl-webhook": "depctrl-controller"}[name]
				if matches(b.Spec.Selector.MatchLabels, deployment(t, objs, other).Spec.Template.Labels) {
					t.Errorf("budget %s also selects the pods of %s", name, other)
				}
			}
		})
	}
}

// TestRenderSpread: both components prefer different nodes for their
// replicas, and never refuse to schedule for it.
func TestRenderSpread(t *testing.T) {
	objs, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"depctrl-controller", "depctrl-webhook"} {
		d := deployment(t, objs, name)
		spec := d.Spec.Template.Spec
		if len(spec.TopologySpreadConstraints) != 1 {
			t.Fatalf("%s: %d topology spread constraints", name, len(spec.TopologySpreadConstraints))
		}
		tsc := spec.TopologySpreadConstraints[0]
		if tsc.TopologyKey != hostnameLabel || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway || tsc.MaxSkew != 1 {
			t.Errorf("%s: constraint %+v", name, tsc)
		}
		if !matches(tsc.LabelSelector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("%s: constraint selects %v, not its own pods", name, tsc.LabelSelector.MatchLabels)
		}
		if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil || len(spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			t.Fatalf("%s: anti-affinity %+v, want a preferred one only", name, spec.Affinity)
		}
		term := spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		if len(term) != 1 || term[0].PodAffinityTerm.TopologyKey != hostnameLabel || !matches(term[0].PodAffinityTerm.LabelSelector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("%s: preferred anti-affinity %+v", name, term)
		}
	}
	s := deployment(t, objs, "depctrl-webhook").Spec.Strategy
	if s.RollingUpdate == nil || s.RollingUpdate.MaxUnavailable.IntValue() != 0 || s.RollingUpdate.MaxSurge.IntValue() != 1 {
		t.Errorf("webhook rollout %+v: it must start a new pod before stopping an old one", s.RollingUpdate)
	}
}

// matches reports whether selector selects labels.
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}
