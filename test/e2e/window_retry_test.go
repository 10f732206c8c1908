package e2e

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestReadCommitWindowWithAConcurrentWrite attacks the read–commit window
// of a write the API server retries. A patch that moves a VM's reference
// to vpc-to is held by a slow admission step after the index webhook
// recorded its intent on vpc-to; meanwhile another write of the VM (a
// label, as any client or the re-indexer may make) is stored. The patch's
// compare-and-swap then fails and the API server applies the patch again to
// the new revision, admitting it anew: the move is still on its way, so
// vpc-to's deletion must be refused throughout, although the VM is stored
// at a revision later than the one the first admission saw, and that
// revision does not reference vpc-to.
func TestReadCommitWindowWithAConcurrentWrite(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, _ := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	consumer := top.Consumers[0]

	// Writes that change the slow label are held.
	probe := vmObject("vm-retry-probe", "nothing")
	probe.SetLabels(map[string]string{slowLabel: "probe"})
	slowAdmission(ctx, t, top, consumer, slowHold, func(obj, old metav1.ObjectMeta) bool {
		return obj.Labels[slowLabel] != "" && obj.Labels[slowLabel] != old.Labels[slowLabel]
	}, probe)
	vms := top.objects(t, consumer, fixtures.VirtualMachines)

	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-from", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-to", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-race", ref("vpc-from"), nil)

	deleteErr, moveErr := whileHeld(func() error {
		_, err := vms.Patch(ctx, "vm-race", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+slowLabel+`":"move"}},"spec":{"vpcRef":{"name":"vpc-to"}}}`), metav1.PatchOptions{})
		return err
	}, func() error {
		// Another write of the VM, stored while the move is held: the
		// VM is now at a later revision that references vpc-from.
		if _, err := vms.Patch(ctx, "vm-race", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"e2e.test.io/other":"write"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("the concurrent write of vm-race: %v", err)
		}
		return top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-to")
	})
	t.Logf("delete of vpc-to: %v; move: %v", deleteErr, moveErr)
	top.referenceHolds(ctx, t, consumer, "vm-race", "vpc-to", moveErr)
	if moveErr != nil || deleteErr == nil || !strings.Contains(deleteErr.Error(), "VirtualMachine/vm-race (being written)") {
		t.Fatalf("want the move stored and the delete of vpc-to refused naming the VM being written; got move: %v, delete: %v", moveErr, deleteErr)
	}
	// Stored, the VM holds vpc-to as any dependent does, and vpc-from no
	// longer.
	top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-to", "still referenced by VirtualMachine/vm-race")
	top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-from")

	// A server-side apply that moves the reference, held the same way
	// while the VM is deleted: its compare-and-swap then finds the VM gone,
	// and the API server admits the apply again as a create. The first
	// intent's dependent is not stored, yet its write may still be: the
	// VPC it newly references must not go meanwhile.
	t.Run("a server-side apply whose dependent is deleted meanwhile", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-apply-from", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-apply-to", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-apply", ref("vpc-apply-from"), nil)
		applied := vmObject("vm-apply", "vpc-apply-to")
		applied.SetLabels(map[string]string{slowLabel: "apply"})
		deleteErr, applyErr := whileHeld(func() error {
			_, err := vms.Apply(ctx, "vm-apply", applied, metav1.ApplyOptions{FieldManager: "e2e-apply", Force: true})
			return err
		}, func() error {
			if err := vms.Delete(ctx, "vm-apply", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting vm-apply while the apply is held: %v", err)
			}
			return top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-apply-to")
		})
		t.Logf("delete of vpc-apply-to: %v; apply: %v", deleteErr, applyErr)
		if _, err := vms.Get(ctx, "vm-apply", metav1.GetOptions{}); err == nil {
			top.referenceHolds(ctx, t, consumer, "vm-apply", "vpc-apply-to", applyErr)
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if deleteErr == nil || !strings.Contains(deleteErr.Error(), "VirtualMachine/vm-apply (being written)") {
			t.Fatalf("want the delete of vpc-apply-to refused naming the VM being written, got %v", deleteErr)
		}
	})

	// An update against a revision another write replaced is refused by
	// the API server with a conflict, after mutating admission: it
	// records no intent, so the object it would have referenced goes at
	// once.
	t.Run("an update against a replaced revision", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-stale", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-stale", ref("nothing"), nil)
		read, err := vms.Get(ctx, "vm-stale", metav1.GetOptions{})
		check.Must(t, err)
		_, err = vms.Patch(ctx, "vm-stale", types.MergePatchType, []byte(`{"metadata":{"labels":{"e2e.test.io/other":"write"}}}`), metav1.PatchOptions{})
		check.Must(t, err)
		check.Must(t, unstructured.SetNestedField(read.Object, "vpc-stale", "spec", "vpcRef", "name"))
		_, err = vms.Update(ctx, read, metav1.UpdateOptions{})
		t.Logf("the update against a replaced revision: %v", err)
		if !apierrors.IsConflict(err) {
			t.Fatalf("an update against a replaced revision: want a conflict, got %v", err)
		}
		if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-stale"); err != nil {
			t.Fatalf("deleting vpc-stale after the only write referencing it failed with a conflict: %v", err)
		}
	})
}
