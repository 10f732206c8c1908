package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
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

// TestWhyOutput: a verdict prints as a table that names each blocker and
// its state, and as JSON that reads back.
func TestWhyOutput(t *testing.T) {
	vm := v1alpha1.DependentRef{Workspace: "2x8ab", Group: "compute.test.io", Version: "v1", Resource: "virtualmachines", Kind: "VirtualMachine", Namespace: "apps", Name: "vm-1"}
	slow := vm
	slow.Name = "vm-slow"
	tests := []struct {
		name    string
		verdict blockers.Verdict
		table   []string
	}{
		{name: "deletable", verdict: blockers.Verdict{Deletable: true}, table: []string{"nothing blocks the deletion of vpcs/vpc-1 in namespace apps now"}},
		{name: "refused for dependents", verdict: blockers.Verdict{Message: "cannot delete vpcs/vpc-1: still referenced by VirtualMachine/vm-1, VirtualMachine/vm-slow (being written)",
			Blockers: []blockers.Blocker{{DependentRef: vm}, {DependentRef: slow, Pending: true}}},
			table: []string{"still referenced by", "VirtualMachine.compute.test.io  apps       vm-1     2x8ab      stored", "vm-slow  2x8ab      being written"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Verdict{Object: "vpcs/vpc-1", Namespace: "apps", Verdict: tt.verdict}
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
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Object != v.Object || back.Deletable != v.Deletable || len(back.Blockers) != len(v.Blockers) {
				t.Errorf("the JSON reads back as %+v (%v):\n%s", back, err, js.String())
			}
		})
	}
}
