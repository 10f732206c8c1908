package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestOrder: every object comes after all that reference it, in the
// earliest wave it can; objects that reference each other are a cycle with
// the references that close it, and what they reference waits behind them.
func TestOrder(t *testing.T) {
	zone := object(zoneType, "", "eu")
	vpc := object(vpcType, "a", "vpc-1")
	free := object(vpcType, "a", "free")
	vm1 := object(vmType, "a", "vm-1")
	vm2 := object(vmType, "a", "vm-2")
	loopA := object(vpcType, "a", "loop-a")
	loopB := object(vmType, "a", "loop-b")
	self := object(vmType, "a", "self")
	tests := []struct {
		name   string
		graph  Graph
		waves  [][]Object
		cycles [][]Object
		stuck  []Object
	}{
		{name: "nothing referenced", graph: Graph{Objects: []Object{vpc, free}}, waves: [][]Object{{free, vpc}}},
		{
			name:  "a chain and a fan",
			graph: Graph{Objects: []Object{zone, vpc, free, vm1, vm2}, References: []Reference{{From: vm1, To: vpc}, {From: vm2, To: vpc}, {From: vpc, To: zone}, {From: vm1, To: zone}}},
			waves: [][]Object{{free, vm1, vm2}, {vpc}, {zone}},
		},
		{
			name:   "a cycle holds up what it references",
			graph:  Graph{Objects: []Object{zone, loopA, loopB, vm1}, References: []Reference{{From: loopA, To: loopB}, {From: loopB, To: loopA}, {From: loopA, To: zone}}},
			waves:  [][]Object{{vm1}},
			cycles: [][]Object{{loopA, loopB}},
			stuck:  []Object{zone},
		},
		{
			name:   "an object that references itself",
			graph:  Graph{Objects: []Object{self}, References: []Reference{{From: self, To: self}}},
			cycles: [][]Object{{self}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.graph
			g.normalize()
			o := g.order()
			if !sameWaves(o.Waves, tt.waves) {
				t.Errorf("waves %v, want %v", o.Waves, tt.waves)
			}
			var cycles [][]Object
			for _, c := range o.Cycles {
				cycles = append(cycles, c.Objects)
				if len(c.References) < len(c.Objects) {
					t.Errorf("cycle %v is closed by only %v", c.Objects, c.References)
				}
			}
			if !sameWaves(cycles, tt.cycles) {
				t.Errorf("cycles %v, want %v", cycles, tt.cycles)
			}
			if !sameWaves([][]Object{o.Stuck}, [][]Object{tt.stuck}) {
				t.Errorf("stuck %v, want %v", o.Stuck, tt.stuck)
			}
			var table, js bytes.Buffer
			if err := o.write(&table, ""); err != nil {
				t.Fatal(err)
			}
			if err := o.write(&js, formatJSON); err != nil {
				t.Fatal(err)
			}
			var back Order
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Waves) != len(o.Waves) || len(back.Cycles) != len(o.Cycles) {
				t.Errorf("the JSON reads back as %+v (%v):\n%s", back, err, js.String())
			}
		})
	}
}

func sameWaves(a, b [][]Object) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}
