package controller

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/scope"
)

// TestDesiredWebhookConfiguration: deletions of every protected resource go
// to the deletion webhook, and updates of those that carry intents to the
// one that keeps them, both failing closed.
func TestDesiredWebhookConfiguration(t *testing.T) {
	gvrs := []schema.GroupVersionResource{testDBs, testVMs, testDBs}
	c := DesiredWebhookConfiguration(testSettings, gvrs)
	if len(c.Webhooks) != 2 {
		t.Fatalf("%d webhooks, want 2", len(c.Webhooks))
	}
	for i, want := range []struct {
		name string
		op   admissionregistrationv1.OperationType
	}{{webhookName, admissionregistrationv1.Delete}, {"keep-intents.dependencies.opendefense.cloud", admissionregistrationv1.Update}} {
		w := c.Webhooks[i]
		if w.Name != want.name || !reflect.DeepEqual(w.Rules, resourceRules(gvrs, want.op)) || ptr.Deref(w.FailurePolicy, "") != admissionregistrationv1.Fail ||
			w.ClientConfig.URL == nil || *w.ClientConfig.URL != testSettings.URL {
			t.Errorf("webhook %d is wrong: %+v", i, w)
		}
	}
	if mc := c.Webhooks[0].MatchConditions; len(mc) != 0 {
		t.Errorf("the deletion webhook must see every deletion, has match conditions %v", mc)
	}
	if mc := c.Webhooks[1].MatchConditions; len(mc) != 1 || mc[0].Expression != keepIntentsCondition {
		t.Errorf("the keep-intents webhook must see only objects with intents: %v", mc)
	}
	covered := coveredResources(c)
	if len(covered) != 2 || !covered[testDBs] || !covered[testVMs] {
		t.Errorf("covered %v, want the two resources", covered)
	}
	other := DesiredWebhookConfiguration(testSettings, gvrs)
	if webhookTargetChanged(c, other) {
		t.Error("the same settings count as a moved webhook")
	}
	scoped := DesiredWebhookConfiguration(testSettings.Scoped(scope.Of("comp", "apps")), gvrs)
	if got, want := *scoped.Webhooks[0].ClientConfig.URL, testSettings.URL+"/clusters/apps,comp"; got != want || *scoped.Webhooks[1].ClientConfig.URL != want {
		t.Errorf("scoped URLs %q and %q, want both %q", got, *scoped.Webhooks[1].ClientConfig.URL, want)
	}
	if webhookTargetChanged(c, scoped) {
		t.Error("a new scope counts as a moved webhook: the same endpoint decides the same requests")
	}
	other.Webhooks[0].ClientConfig.URL = ptr.To("https://elsewhere/validate")
	if !webhookTargetChanged(c, other) {
		t.Error("a new URL does not count as a moved webhook")
	}
}
