package controller

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// TestDesiredScopedWebhookConfiguration: resources protected by the rules of
// the same workspaces share a deletion webhook whose URL names them; those
// of other workspaces get their own, so that an unread shard holds up only
// the deletions its rules can matter to. Keeping intents needs no rules,
// so that webhook's URL names no scope.
func TestDesiredScopedWebhookConfiguration(t *testing.T) {
	settling := testSettings
	settling.Settle = true
	c := DesiredScopedWebhookConfiguration(settling, Protected{
		testVPCs: admission.Of("comp", "apps"),
		testFWs:  admission.Of("comp"),
		testDBs:  admission.Of("apps", "comp"),
		testVMs:  admission.Unnamed,
	}, currentOnly(Stamps{testFWs.GroupResource(): "s1", testDBs.GroupResource(): "s2", testVPCs.GroupResource(): "s2"}))
	type entry struct{ name, url, resources, settledUnder string }
	var got []entry
	for _, w := range c.Webhooks {
		var res []string
		for _, r := range w.Rules {
			res = append(res, r.Resources...)
		}
		got = append(got, entry{w.Name, *w.ClientConfig.URL, strings.Join(res, ","), strings.Join(settle.StampsOf(w.ObjectSelector), ",")})
	}
	all := "manageddbs,virtualmachines,firewallrules,vpcs"
	want := []entry{
		{webhookName, testSettings.URL, "virtualmachines", ""},
		{"2." + webhookName, testSettings.URL + "/clusters/apps,comp", "manageddbs,vpcs", "s2"},
		{"3." + webhookName, testSettings.URL + "/clusters/comp", "firewallrules", "s1"},
		{keepIntentsWebhookName, testSettings.URL, all, ""},
		{settleGuardWebhookName, testSettings.URL, all, ""},
		{deferGuardWebhookName, testSettings.URL, all, ""},
		{settleCandidatesWebhookName, testSettings.URL, all, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("webhooks\n got %v\nwant %v", got, want)
	}
	if covered := coveredResources(c); len(covered) != 4 {
		t.Errorf("covered %v, want the four resources", covered)
	}
	for _, w := range c.Webhooks {
		switch w.Name {
		case settleGuardWebhookName:
			if ptr.Deref(w.FailurePolicy, "") != admissionregistrationv1.Fail || len(w.MatchConditions) != 1 || w.MatchConditions[0].Expression != settle.GuardCondition ||
				!reflect.DeepEqual(w.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
				t.Errorf("the guard must fail closed on every create and update that settles: %+v", w)
			}
		case deferGuardWebhookName:
			if ptr.Deref(w.FailurePolicy, "") != admissionregistrationv1.Fail || len(w.MatchConditions) != 1 || w.MatchConditions[0].Expression != v1alpha1.DeferGuardCondition ||
				!reflect.DeepEqual(w.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
				t.Errorf("the deferral guard must fail closed on every create and update that writes a deferred deletion: %+v", w)
			}
		case settleCandidatesWebhookName:
			if ptr.Deref(w.FailurePolicy, "") != admissionregistrationv1.Ignore || len(w.MatchConditions) != 0 {
				t.Errorf("the candidates' webhook must see every create and fail open: %+v", w)
			}
		}
	}
}

// TestDesiredWebhookConfiguration: deletions of every protected resource go
// to the deletion webhook, updates that drop intents to the one that keeps
// them, and writes that set the settled label to its guard, all failing
// closed.
func TestDesiredWebhookConfiguration(t *testing.T) {
	gvrs := []schema.GroupVersionResource{testDBs, testVMs, testDBs}
	c := DesiredWebhookConfiguration(testSettings, gvrs)
	if len(c.Webhooks) != 4 {
		t.Fatalf("%d webhooks, want 4: without settling, the guards but no candidates", len(c.Webhooks))
	}
	for i, want := range []struct {
		name string
		ops  []admissionregistrationv1.OperationType
	}{
		{webhookName, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}},
		{"keep-intents.dependencies.opendefense.cloud", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}},
		{"settle-guard.dependencies.opendefense.cloud", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}},
		{"defer-guard.dependencies.opendefense.cloud", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}},
	} {
		w := c.Webhooks[i]
		if w.Name != want.name || !reflect.DeepEqual(w.Rules, resourceRules(gvrs, want.ops...)) || ptr.Deref(w.FailurePolicy, "") != admissionregistrationv1.Fail ||
			w.ClientConfig.URL == nil || *w.ClientConfig.URL != testSettings.URL {
			t.Errorf("webhook %d is wrong: %+v", i, w)
		}
	}
	if mc := c.Webhooks[0].MatchConditions; len(mc) != 0 {
		t.Errorf("the deletion webhook must see every deletion, has match conditions %v", mc)
	}
	if sel := c.Webhooks[0].ObjectSelector; sel == nil || len(sel.MatchExpressions)+len(sel.MatchLabels) != 0 {
		t.Errorf("without a stamp the deletion webhook must see every object, has selector %v", sel)
	}
	if mc := c.Webhooks[1].MatchConditions; len(mc) != 1 || mc[0].Expression != keepIntentsCondition {
		t.Errorf("the keep-intents webhook must see only updates that drop an intent: %v", mc)
	}
	if mc := c.Webhooks[2].MatchConditions; len(mc) != 1 || mc[0].Expression != settle.GuardCondition {
		t.Errorf("the guard must see only writes that set the settled label: %v", mc)
	}
	if mc := c.Webhooks[3].MatchConditions; len(mc) != 1 || mc[0].Expression != v1alpha1.DeferGuardCondition {
		t.Errorf("the deferral guard must see only writes that write a deferred deletion: %v", mc)
	}
	covered := coveredResources(c)
	if len(covered) != 2 || !covered[testDBs] || !covered[testVMs] {
		t.Errorf("covered %v, want the two resources", covered)
	}
	other := DesiredWebhookConfiguration(testSettings, gvrs)
	if webhookTargetChanged(c, other) {
		t.Error("the same settings count as a moved webhook")
	}
	scoped := DesiredScopedWebhookConfiguration(testSettings, Protected{testVMs: admission.Of("comp"), testDBs: admission.Of("comp")}, nil)
	if got, want := *scoped.Webhooks[0].ClientConfig.URL, testSettings.URL+"/clusters/comp"; got != want {
		t.Errorf("scoped URL %q, want %q", got, want)
	}
	if webhookTargetChanged(c, scoped) {
		t.Error("a new scope counts as a moved webhook: the same endpoint decides the same requests")
	}
	other.Webhooks[0].ClientConfig.URL = ptr.To("https://elsewhere/validate")
	if !webhookTargetChanged(c, other) {
		t.Error("a new URL does not count as a moved webhook")
	}
}

// TestNoStampsWithoutSettling: a controller that does not settle publishes
// no stamp, whatever the plan holds: every deletion goes to the webhook. It
// keeps guarding the label, so that none set while settling is off counts
// once it is on again.
func TestNoStampsWithoutSettling(t *testing.T) {
	c := DesiredScopedWebhookConfiguration(testSettings, Protected{testVPCs: admission.Unnamed}, currentOnly(Stamps{testVPCs.GroupResource(): "s1"}))
	guarded := false
	for _, w := range c.Webhooks {
		if len(settle.StampsOf(w.ObjectSelector)) != 0 || w.Name == settleCandidatesWebhookName {
			t.Errorf("webhook %s is for settling: %+v", w.Name, w)
		}
		guarded = guarded || w.Name == settleGuardWebhookName
	}
	if !guarded {
		t.Error("no guard of the settled label while settling is off")
	}
}
