package kubectlplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		args           []string
		resource, name string
		wantErr        bool
	}{
		{args: []string{"vpc/vpc-1"}, resource: "vpc", name: "vpc-1"},
		{args: []string{"vpcs.network.example", "vpc-1"}, resource: "vpcs.network.example", name: "vpc-1"},
		{args: []string{"vpc"}, wantErr: true},
		{args: []string{"vpc/"}, wantErr: true},
		{args: []string{"/vpc-1"}, wantErr: true},
		{args: []string{"vpc/a/b"}, wantErr: true},
		{args: []string{"vpc/vpc-1", "more"}, wantErr: true},
	}
	for _, tt := range tests {
		resource, name, err := parseTarget(tt.args)
		if (err != nil) != tt.wantErr || resource != tt.resource || name != tt.name {
			t.Errorf("parseTarget(%q) = %q, %q, %v", tt.args, resource, name, err)
		}
	}
}

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
	tests := []struct {
		name      string
		err       error
		wantErr   bool
		deletable bool
		blockers  []Blocker
		table     []string
	}{
		{name: "deletable", deletable: true, table: []string{"nothing blocks the deletion of vpcs/vpc-1 in namespace apps now"}},
		{name: "refused for dependents", err: denial, blockers: []Blocker{{DependentRef: vm}, {DependentRef: slow, Pending: true}},
			table: []string{"still referenced by", "VirtualMachine.compute.test.io  apps       vm-1     2x8ab      stored", "vm-slow  2x8ab      being written"}},
		{name: "refused by RBAC", err: apierrors.NewForbidden(vpcs.GroupResource(), "vpc-1", errors.New("no")), wantErr: true},
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
			v, err := ask(context.Background(), dyn.Resource(vpcs).Namespace("apps"), "vpc-1")
			if len(dryRun) != 1 || dryRun[0] != metav1.DryRunAll {
				t.Fatalf("the deletion was not a dry run: %v", dryRun)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("ask: %+v, %v; want an error %v", v, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if v.Deletable != tt.deletable || len(v.Blockers) != len(tt.blockers) {
				t.Fatalf("ask = %+v", v)
			}
			for i := range v.Blockers {
				if v.Blockers[i] != tt.blockers[i] {
					t.Errorf("blocker %d = %+v, want %+v", i, v.Blockers[i], tt.blockers[i])
				}
			}
			v.Object, v.Namespace = "vpcs/vpc-1", "apps"
			var table, js bytes.Buffer
			if err := v.write(&table, ""); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.table {
				if !strings.Contains(table.String(), want) {
					t.Errorf("the table lacks %q:\n%s", want, table.String())
				}
			}
			if err := v.write(&js, "json"); err != nil {
				t.Fatal(err)
			}
			var back Verdict
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Deletable != v.Deletable || len(back.Blockers) != len(v.Blockers) {
				t.Errorf("the JSON reads back as %+v (%v):\n%s", back, err, js.String())
			}
		})
	}
}
