package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

var mutatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}

// TestIndexTrustWithoutController: the reference index configuration is
// deleted while the controller is down, so nothing puts it back and writes
// of dependents go by unlabelled. A VM moved to another VPC meanwhile still
// carries the current stamp and its old reference label; the webhook must
// not trust that label, and refuses to delete the VPC it now references.
// The restarted controller reports ready only once the configuration is
// back.
func TestIndexTrustWithoutController(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	consumer := top.Consumers[len(top.Consumers)-1]
	vms := top.objects(t, consumer, fixtures.VirtualMachines)

	top.protectVPCs(ctx, t)
	top.waitCondition(ctx, t, top.Compute, "vm-needs-vpc", v1alpha1.ConditionIndexed, "True", "Indexed")
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-a", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-b", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-1", ref("vpc-a"), nil)
	stamp := waitStamp(ctx, t, vms, "vm-1", "")

	rt.StopController(t)
	check.Must(t, top.dynamicFor(t, top.Compute.Path).Resource(mutatingGVR).Delete(ctx, v1alpha1.WebhookConfigurationName, metav1.DeleteOptions{}))
	top.waitIndexWebhookGone(ctx, t, consumer)
	setRef(ctx, t, vms, "vm-1", "vpc-b")
	vm, err := vms.Get(ctx, "vm-1", metav1.GetOptions{})
	check.Must(t, err)
	if vm.GetLabels()[registry.StampLabel] != stamp {
		t.Fatalf("vm-1's labels changed without the index webhook: %v", vm.GetLabels())
	}
	t.Logf("vm-1 references vpc-b but its labels still say vpc-a under the current stamp")

	err = top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-b")
	if err == nil || !strings.Contains(err.Error(), "still referenced by VirtualMachine/vm-1") {
		t.Fatalf("deleting vpc-b, which vm-1 references, with the index configuration gone: want a refusal, got %v", err)
	}
	top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-a")

	// The controller back: it is ready only once the configuration is in
	// place again; then a new epoch, and the labels follow the fields.
	rt.StartController(t)
	check.Eventually(ctx, t, 2*time.Minute, "the restarted controller to become ready", func() error {
		if code := httpStatus(ctx, rt.ControllerReadyzURL); code != http.StatusOK {
			return fmt.Errorf("readyz: %d", code)
		}
		return nil
	})
	if _, err := top.dynamicFor(t, top.Compute.Path).Resource(mutatingGVR).Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the controller reports ready, but the reference index configuration is not back: %v", err)
	}
	waitStamp(ctx, t, vms, "vm-1", stamp)
	top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-b", "still referenced by VirtualMachine/vm-1")
}
