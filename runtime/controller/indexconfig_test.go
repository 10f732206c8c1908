package controller

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var testSettings = WebhookSettings{
	ConfigurationName: "dependency-controller",
	URL:               "https://depctrl-webhook.depctrl.svc:443/validate",
	MutateURL:         "https://depctrl-webhook.depctrl.svc:443/mutate",
	CABundle:          []byte("ca"),
	TimeoutSeconds:    7,
}

func TestDesiredIndexConfiguration(t *testing.T) {
	tests := []struct {
		name       string
		dependents []schema.GroupVersionResource
		want       []string
	}{{
		name:       "one dependent type",
		dependents: []schema.GroupVersionResource{testVMs},
		want:       []string{"compute.io/v1/virtualmachines"},
	}, {
		name:       "sorted and without duplicates",
		dependents: []schema.GroupVersionResource{testVMs, testDBs, testVMs, gvr("", "configmaps")},
		want:       []string{"/v1/configmaps", "compute.io/v1/manageddbs", "compute.io/v1/virtualmachines"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]schema.GroupVersionResource(nil), tt.dependents...)
			c := DesiredIndexConfiguration(testSettings, tt.dependents)
			if !reflect.DeepEqual(tt.dependents, in) {
				t.Errorf("the caller's slice was changed: %v", tt.dependents)
			}
			if c.Name != testSettings.ConfigurationName || c.Labels[managedByLabel] != "depctrl-controller" {
				t.Errorf("metadata %+v", c.ObjectMeta)
			}
			if len(c.Webhooks) != 2 {
				t.Fatalf("%d webhooks, want 2", len(c.Webhooks))
			}
			withdraw := c.Webhooks[1]
			if withdraw.Name != "withdraw-intent.dependencies.opendefense.cloud" || ptr.Deref(withdraw.FailurePolicy, "") != admissionregistrationv1.Ignore ||
				!reflect.DeepEqual(withdraw.Rules, resourceRules(tt.dependents, admissionregistrationv1.Delete)) ||
				ptr.Deref(withdraw.SideEffects, "") != admissionregistrationv1.SideEffectClassNoneOnDryRun ||
				withdraw.ObjectSelector == nil || len(withdraw.ObjectSelector.MatchExpressions) != 1 ||
				withdraw.ObjectSelector.MatchExpressions[0].Key != "dependencies.opendefense.cloud/intent" {
				t.Errorf("withdraw webhook is wrong: %+v", withdraw)
			}
			w := c.Webhooks[0]
			var got []string
			for _, r := range w.Rules {
				if !reflect.DeepEqual(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
					t.Errorf("operations %v, want CREATE and UPDATE", r.Operations)
				}
				if r.Scope == nil || *r.Scope != admissionregistrationv1.AllScopes {
					t.Errorf("scope %v, want *", r.Scope)
				}
				got = append(got, r.APIGroups[0]+"/"+r.APIVersions[0]+"/"+r.Resources[0])
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rules %v, want %v", got, tt.want)
			}
			for field, ok := range map[string]bool{
				"name":                    w.Name == "reference-index.dependencies.opendefense.cloud",
				"url":                     w.ClientConfig.URL != nil && *w.ClientConfig.URL == testSettings.MutateURL,
				"caBundle":                string(w.ClientConfig.CABundle) == "ca",
				"failurePolicy":           ptr.Deref(w.FailurePolicy, "") == admissionregistrationv1.Fail,
				"matchPolicy":             ptr.Deref(w.MatchPolicy, "") == admissionregistrationv1.Equivalent,
				"sideEffects":             ptr.Deref(w.SideEffects, "") == admissionregistrationv1.SideEffectClassNoneOnDryRun,
				"reinvocationPolicy":      ptr.Deref(w.ReinvocationPolicy, "") == admissionregistrationv1.IfNeededReinvocationPolicy,
				"timeoutSeconds":          ptr.Deref(w.TimeoutSeconds, 0) == testSettings.TimeoutSeconds,
				"admissionReviewVersions": reflect.DeepEqual(w.AdmissionReviewVersions, []string{"v1"}),
				"namespaceSelector":       w.NamespaceSelector != nil && w.NamespaceSelector.Size() == 0,
				"objectSelector":          w.ObjectSelector != nil && w.ObjectSelector.Size() == 0,
			} {
				if !ok {
					t.Errorf("%s is wrong: %+v", field, w)
				}
			}
		})
	}
}

func TestIndexConfigurationDrifted(t *testing.T) {
	desired := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		return DesiredIndexConfiguration(testSettings, []schema.GroupVersionResource{testVMs, testDBs})
	}
	tests := []struct {
		name  string
		edit  func(c *admissionregistrationv1.MutatingWebhookConfiguration)
		drift bool
	}{
		{"as written", func(*admissionregistrationv1.MutatingWebhookConfiguration) {}, false},
		{"server-set metadata", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.ResourceVersion, c.UID, c.Generation = "42", "uid", 3
			c.Annotations = map[string]string{"kcp.io/cluster": "comp"}
		}, false},
		{"someone else's label", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Labels["team"] = "x" }, false},
		{"managed-by label removed", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { delete(c.Labels, managedByLabel) }, true},
		{"URL changed", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = ptr.To("https://elsewhere/mutate")
		}, true},
		{"CA changed", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.CABundle = []byte("other")
		}, true},
		{"a resource dropped", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].Rules = c.Webhooks[0].Rules[:1]
		}, true},
		{"failure policy relaxed", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}, true},
		{"reinvocation turned off", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}, true},
		{"object selector added", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ObjectSelector.MatchLabels = map[string]string{"indexed": "yes"}
		}, true},
		{"a second webhook added", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, c.Webhooks[0])
		}, true},
		{"the withdraw webhook removed", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = c.Webhooks[:1]
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := desired()
			tt.edit(existing)
			if got := IndexConfigurationDrifted(existing, desired()); got != tt.drift {
				t.Fatalf("drifted = %v, want %v", got, tt.drift)
			}
			ApplyOwnedIndexFields(existing, desired())
			if IndexConfigurationDrifted(existing, desired()) {
				t.Fatal("still drifted after ApplyOwnedIndexFields")
			}
		})
	}
}

func TestApplyOwnedIndexFieldsKeepsServerMetadata(t *testing.T) {
	existing := DesiredIndexConfiguration(testSettings, []schema.GroupVersionResource{testDBs})
	existing.ResourceVersion = "42"
	existing.Labels = map[string]string{"team": "x"}
	ApplyOwnedIndexFields(existing, DesiredIndexConfiguration(testSettings, []schema.GroupVersionResource{testVMs}))
	if existing.ResourceVersion != "42" || existing.Labels["team"] != "x" || existing.Labels[managedByLabel] != "depctrl-controller" {
		t.Fatalf("metadata %+v", existing.ObjectMeta)
	}
	if r := existing.Webhooks[0].Rules; len(r) != 1 || r[0].Resources[0] != "virtualmachines" {
		t.Fatalf("rules %+v", r)
	}
}
