package blockers

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestAsk: a dry-run deletion that succeeds is deletable; one the webhook
// refuses names its blockers from the denial's causes; any other refusal
// (no causes of protection's, or another error) cannot be answered.
func TestAsk(t *testing.T) {
	vpcs := schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	vm := v1alpha1.DependentRef{Workspace: "2x8ab", Group: "compute.test.io", Version: "v1", Resource: "virtualmachines", Kind: "VirtualMachine", Namespace: "apps", Name: "vm-1"}
	slow := vm
	slow.Name = "vm-slow"
	denial := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: "cannot delete vpcs/vpc-1: still referenced by VirtualMachine/vm-1, VirtualMachine/vm-slow (being written)",
		Details: &metav1.StatusDetails{Name: "vpc-1", Causes: []metav1.StatusCause{v1alpha1.DependentCause(vm, false), v1alpha1.DependentCause(slow, true)}}}}
	truncated := &apierrors.StatusError{ErrStatus: *denial.ErrStatus.DeepCopy()}
	truncated.ErrStatus.Details.Causes = append(truncated.ErrStatus.Details.Causes, v1alpha1.MoreCause(-1))
	otherCauses := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec"}}}}}
	tests := []struct {
		name      string
		err       error
		wantErr   bool
		deletable bool
		blockers  []Blocker
		more      int
	}{
		{name: "deletable", deletable: true},
		{name: "refused for dependents", err: denial, blockers: []Blocker{{DependentRef: vm}, {DependentRef: slow, Pending: true}}},
		{name: "refused for more dependents than listed", err: truncated, blockers: []Blocker{{DependentRef: vm}, {DependentRef: slow, Pending: true}}, more: -1},
		{name: "refused by RBAC", err: apierrors.NewForbidden(vpcs.GroupResource(), "vpc-1", errors.New("no")), wantErr: true},
		{name: "refused by something else", err: otherCauses, wantErr: true},
		{name: "protection cannot decide", err: apierrors.NewServiceUnavailable("checking for dependents failed"), wantErr: true},
		{name: "no such object", err: apierrors.NewNotFound(vpcs.GroupResource(), "vpc-1"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{vpcs: "VPCList"})
			var dryRun []string
			dyn.PrependReactor("delete", "vpcs", func(a clienttesting.Action) (bool, runtime.Object, error) {
				dryRun = a.(clienttesting.DeleteActionImpl).DeleteOptions.DryRun
				return true, nil, tt.err
			})
			v, err := Ask(context.Background(), dyn.Resource(vpcs).Namespace("apps"), "vpc-1")
			if len(dryRun) != 1 || dryRun[0] != metav1.DryRunAll {
				t.Fatalf("the deletion was not a dry run: %v", dryRun)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Ask: %+v, %v; want an error %v", v, err, tt.wantErr)
			}
			if v.Deletable != tt.deletable || len(v.Blockers) != len(tt.blockers) || v.More != tt.more {
				t.Fatalf("Ask = %+v", v)
			}
			for i := range v.Blockers {
				if v.Blockers[i] != tt.blockers[i] {
					t.Errorf("blocker %d = %+v, want %+v", i, v.Blockers[i], tt.blockers[i])
				}
			}
		})
	}
}
