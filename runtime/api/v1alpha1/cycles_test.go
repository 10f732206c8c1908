package v1alpha1

import (
	"reflect"
	"testing"
)

func TestFindCycles(t *testing.T) {
	tests := []struct {
		name  string
		edges []CycleEdge
		want  map[string]string
	}{
		{name: "no rules", want: map[string]string{}},
		{
			name:  "a chain is not a cycle",
			edges: []CycleEdge{{"a/vm", "vms", "vpcs"}, {"a/db", "dbs", "firewalls"}, {"b/fw", "firewalls", "vpcs"}},
			want:  map[string]string{},
		},
		{
			name:  "a self reference is not a cycle",
			edges: []CycleEdge{{"a/parent", "vpcs", "vpcs"}},
			want:  map[string]string{},
		},
		{
			name:  "two rules protecting each other",
			edges: []CycleEdge{{"c1/vm-needs-vpc", "vms", "vpcs"}, {"c2/vpc-needs-vm", "vpcs", "vms"}},
			want: map[string]string{
				"c1/vm-needs-vpc": "vms -> vpcs (rule c1/vm-needs-vpc) -> vms (rule c2/vpc-needs-vm)",
				"c2/vpc-needs-vm": "vpcs -> vms (rule c2/vpc-needs-vm) -> vpcs (rule c1/vm-needs-vpc)",
			},
		},
		{
			name: "a longer cycle, with a bystander",
			edges: []CycleEdge{
				{"r1", "a", "b"}, {"r2", "b", "c"}, {"r3", "c", "a"},
				{"bystander", "d", "a"},
			},
			want: map[string]string{
				"r1": "a -> b (rule r1) -> c (rule r2) -> a (rule r3)",
				"r2": "b -> c (rule r2) -> a (rule r3) -> b (rule r1)",
				"r3": "c -> a (rule r3) -> b (rule r1) -> c (rule r2)",
			},
		},
		{
			name:  "two rules making one step",
			edges: []CycleEdge{{"c1/vm-needs-vpc", "vms", "vpcs"}, {"c3/vm-needs-vpc-too", "vms", "vpcs"}, {"c2/vpc-needs-vm", "vpcs", "vms"}},
			want: map[string]string{
				"c1/vm-needs-vpc":     "vms -> vpcs (rules c1/vm-needs-vpc, c3/vm-needs-vpc-too) -> vms (rule c2/vpc-needs-vm)",
				"c3/vm-needs-vpc-too": "vms -> vpcs (rules c1/vm-needs-vpc, c3/vm-needs-vpc-too) -> vms (rule c2/vpc-needs-vm)",
				"c2/vpc-needs-vm":     "vpcs -> vms (rule c2/vpc-needs-vm) -> vpcs (rules c1/vm-needs-vpc, c3/vm-needs-vpc-too)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindCycles(tt.edges); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Find = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCycleOf(t *testing.T) {
	edges := []CycleEdge{
		{"c1/vm-needs-vpc", "vms", "vpcs"}, {"c3/vm-needs-vpc-too", "vms", "vpcs"}, {"c2/vpc-needs-vm", "vpcs", "vms"},
		{"c4/db-needs-vpc", "dbs", "vpcs"},
	}
	got, ok := CycleOf(edges, "c2/vpc-needs-vm")
	want := Cycle{
		Path:  "vpcs -> vms (rule c2/vpc-needs-vm) -> vpcs (rules c1/vm-needs-vpc, c3/vm-needs-vpc-too)",
		Rules: []string{"c1/vm-needs-vpc", "c2/vpc-needs-vm", "c3/vm-needs-vpc-too"},
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("CycleOf(c2/vpc-needs-vm) = %+v, %v; want %+v, true", got, ok, want)
	}
	if got, ok := CycleOf(edges, "c4/db-needs-vpc"); ok {
		t.Fatalf("CycleOf(c4/db-needs-vpc) = %+v, true; a rule leading into a cycle is not on it", got)
	}
}
