package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestReadCommitWindow attacks the window between a dependent's admission
// and its commit: a slow validating webhook of the provider's own holds a
// VM's write for five seconds after the depctrl index webhook let it
// through, and the VPC it newly references is deleted in that time. The
// write is not stored yet, so no read of the dependents can see it; the
// intent the index webhook recorded on the VPC can, and the delete is
// refused naming the VM. That holds for a create, for an update that moves
// the VM's reference from one VPC to another, and for one that adds a
// reference: the VM stored meanwhile is the old copy, which does not
// reference the VPC, and does not release the intent, since the write is
// based on exactly that copy's revision. Once the VM is deleted, its intent
// is withdrawn and the VPC goes at once.
func TestReadCommitWindow(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, _ := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	consumer := top.Consumers[0]

	slowAdmission(ctx, t, top, consumer, slowHold, func(obj, _ metav1.ObjectMeta) bool {
		return strings.HasPrefix(obj.Name, "vm-slow")
	}, vmObject("vm-slow-probe", "nothing"))
	vms := top.objects(t, consumer, fixtures.VirtualMachines)

	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-w", map[string]interface{}{}, nil)
	created := make(chan error, 1)
	go func() {
		_, err := vms.Create(ctx, vmObject("vm-slow-1", "vpc-w"), metav1.CreateOptions{})
		created <- err
	}()
	// The create is now past the index webhook, held by the slow one.
	time.Sleep(time.Second)
	deleteErr := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-w")
	createErr := <-created
	_, getErr := vms.Get(ctx, "vm-slow-1", metav1.GetOptions{})
	vmExists := getErr == nil
	vpcGone := !top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-w")
	t.Logf("delete: %v; create: %v; VM exists: %v; VPC gone: %v", deleteErr, createErr, vmExists, vpcGone)
	if vmExists && vpcGone {
		t.Fatal("vm-slow-1 references vpc-w, which was deleted while its create was in flight: a dangling reference")
	}
	if !vmExists && !apierrors.IsNotFound(getErr) {
		t.Fatal(getErr)
	}
	if createErr != nil || deleteErr == nil || !strings.Contains(deleteErr.Error(), "VirtualMachine/vm-slow-1 (being written)") {
		t.Fatalf("want the create stored and the delete refused naming the VM being written; got create: %v, delete: %v", createErr, deleteErr)
	}

	// Stored now, the VM blocks as any dependent does.
	top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-w", "still referenced by VirtualMachine/vm-slow-1")
	// Deleted, it withdraws its intent: the VPC goes at once, without
	// waiting for the intent to expire.
	check.Must(t, vms.Delete(ctx, "vm-slow-1", metav1.DeleteOptions{}))
	if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-w"); err != nil {
		t.Fatalf("deleting vpc-w right after its only dependent: %v", err)
	}

	t.Run("an update that moves the reference", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-old", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-new", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-slow-move", ref("vpc-old"), nil)
		deleteErr, writeErr := whileHeld(func() error {
			_, err := vms.Patch(ctx, "vm-slow-move", types.MergePatchType, []byte(`{"spec":{"vpcRef":{"name":"vpc-new"}}}`), metav1.PatchOptions{})
			return err
		}, func() error {
			// The stored copy still references vpc-old, which stays as
			// well: the move may yet fail.
			top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-old", "still referenced by VirtualMachine/vm-slow-move")
			return top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-new")
		})
		t.Logf("delete of vpc-new: %v; move: %v", deleteErr, writeErr)
		top.referenceHolds(ctx, t, consumer, "vm-slow-move", "vpc-new", writeErr)
		if writeErr != nil || deleteErr == nil || !strings.Contains(deleteErr.Error(), "VirtualMachine/vm-slow-move (being written)") {
			t.Fatalf("want the move stored and the delete of vpc-new refused naming the VM being written; got move: %v, delete: %v", writeErr, deleteErr)
		}
		// Stored, the VM holds vpc-new as any dependent does, and no
		// longer vpc-old: the intent its create recorded there is over.
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-new", "still referenced by VirtualMachine/vm-slow-move")
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-old")
	})

	t.Run("an update that adds a reference", func(t *testing.T) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-add", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-slow-add", map[string]interface{}{}, nil)
		deleteErr, writeErr := whileHeld(func() error {
			// A whole-object update, conditional on the revision read.
			vm, err := vms.Get(ctx, "vm-slow-add", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(vm.Object, "vpc-add", "spec", "vpcRef", "name"); err != nil {
				return err
			}
			_, err = vms.Update(ctx, vm, metav1.UpdateOptions{})
			return err
		}, func() error {
			return top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-add")
		})
		t.Logf("delete of vpc-add: %v; update: %v", deleteErr, writeErr)
		top.referenceHolds(ctx, t, consumer, "vm-slow-add", "vpc-add", writeErr)
		if writeErr != nil || deleteErr == nil || !strings.Contains(deleteErr.Error(), "VirtualMachine/vm-slow-add (being written)") {
			t.Fatalf("want the update stored and the delete of vpc-add refused naming the VM being written; got update: %v, delete: %v", writeErr, deleteErr)
		}
		top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-add", "still referenced by VirtualMachine/vm-slow-add")
	})

	// Intents written by hand. One the webhook cannot have written
	// (unreadable, or dated further ahead than an intent lives) is
	// ignored; a well-formed fresh one that names a VM not stored holds
	// the VPC as an admitted write would, until it expires, and an update
	// may not drop it (a replace, say), since the write it stands for may
	// still be on its way.
	vmResource := fixtures.VirtualMachines.GVR().GroupResource().String()
	intentFor := func(name string, at time.Time) string {
		return fmt.Sprintf(`{"resource":%q,"version":"v1","namespace":"apps","name":%q,"at":%q}`, vmResource, name, at.UTC().Format(time.RFC3339))
	}
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-forged", map[string]interface{}{}, map[string]string{
		v1alpha1.IntentAnnotationPrefix + "garbage": "{not json",
		v1alpha1.IntentAnnotationPrefix + "ahead":   intentFor("vm-x", time.Now().Add(time.Hour)),
	})
	top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-forged")
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-held", map[string]interface{}{}, map[string]string{
		v1alpha1.IntentAnnotationPrefix + "held": intentFor("vm-never", time.Now()),
	})
	top.expectDenied(ctx, t, consumer, fixtures.VPCs, "vpc-held", "VirtualMachine/vm-never (being written)")
	vpcAPI := top.objects(t, consumer, fixtures.VPCs)
	_, err := vpcAPI.Patch(ctx, "vpc-held", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.IntentAnnotationPrefix+`held":null}}}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the intent of virtualmachines/vm-never") {
		t.Fatalf("dropping a fresh intent: want a conflict naming it, got %v", err)
	}
	// An update that keeps it goes through, and the skip-protection
	// annotation, so set, lets the VPC go.
	_, err = vpcAPI.Patch(ctx, "vpc-held", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.SkipProtectionAnnotation+`":"true"}}}`), metav1.PatchOptions{})
	check.Must(t, err)
	top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-held")
}

// slowHold is how long the provider's slow webhook holds a write of a VM
// whose name starts with vm-slow.
const slowHold = 5 * time.Second

// whileHeld runs write, which the slow webhook holds, and a second into the
// hold runs during, which deletes what the write references; it returns
// what the deletion and the write answered.
func whileHeld(write, during func() error) (deleteErr, writeErr error) {
	done := make(chan error, 1)
	go func() { done <- write() }()
	// The write is now past the index webhook, held by the slow one.
	time.Sleep(time.Second)
	deleteErr = during()
	return deleteErr, <-done
}

// referenceHolds fails the test when the VM called vm, written to reference
// vpc (writeErr is what the write answered), is stored referencing it while
// vpc is gone: a dangling reference.
func (top *Topology) referenceHolds(ctx context.Context, t *testing.T, ws env.Workspace, vm, vpc string, writeErr error) {
	t.Helper()
	stored, err := top.objects(t, ws, fixtures.VirtualMachines).Get(ctx, vm, metav1.GetOptions{})
	check.Must(t, err)
	name, _, _ := unstructured.NestedString(stored.Object, "spec", "vpcRef", "name")
	t.Logf("%s references %q (its write answered %v)", vm, name, writeErr)
	if name == vpc && !top.exists(ctx, t, ws, fixtures.VPCs, vpc) {
		t.Fatalf("%s references %s, which was deleted while the write was in flight: a dangling reference", vm, vpc)
	}
}
