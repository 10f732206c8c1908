package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestConsent: a provider workspace consents to protection by binding the
// dep-ctrl export and accepting its claim. A rule that names a workspace
// which did not bind, or bound without accepting, installs nothing there
// and says why; accepting the claim later lets it in.
func TestConsent(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, _ := install(ctx, t, e)

	unbound, err := e.CreateWorkspace(ctx, top.Org.Path, "unbound")
	check.Must(t, err)
	refused, err := e.CreateWorkspace(ctx, top.Org.Path, "refused")
	check.Must(t, err)
	apply(ctx, t, top.admin(t, unbound.Path), fixtures.ExportYAML(fixtures.VPCs))
	// Bound, but the claim on webhook configurations is rejected.
	apply(ctx, t, top.admin(t, refused.Path), fixtures.ExportYAML(fixtures.VPCs),
		strings.Replace(depCtrlBindingYAML(top.DepCtrl.Path), "state: Accepted", "state: Rejected", 1))

	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-unbound-vpc", fixtures.VirtualMachines, fixtures.VPCs, unbound.Path, ".spec.vpcRef.name"))
	msg := top.waitCondition(ctx, t, top.Compute, "vm-needs-unbound-vpc", v1alpha1.ConditionWebhookInstalled, "False", "ExportNotBound")
	t.Logf("unbound workspace: %s", msg)
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-refused-vpc", fixtures.VirtualMachines, fixtures.VPCs, refused.Path, ".spec.vpcRef.name"))
	msg = top.waitCondition(ctx, t, top.Compute, "vm-needs-refused-vpc", v1alpha1.ConditionWebhookInstalled, "False", "ClaimNotAccepted")
	t.Logf("claim rejected: %s", msg)

	// Give the controller time to do anything it should not.
	time.Sleep(3 * time.Second)
	for _, ws := range []env.Workspace{unbound, refused} {
		if top.webhookConfiguration(ctx, t, ws) != nil {
			t.Errorf("a webhook configuration was installed in %s, which did not consent", ws.Path)
		}
	}

	// Consent given: the claim accepted, the rule goes Ready.
	apply(ctx, t, top.admin(t, refused.Path), depCtrlBindingYAML(top.DepCtrl.Path))
	top.waitReady(ctx, t, top.Compute, "vm-needs-refused-vpc")
	if top.webhookConfiguration(ctx, t, refused) == nil {
		t.Errorf("no webhook configuration in %s after it accepted the claim", refused.Path)
	}
}
