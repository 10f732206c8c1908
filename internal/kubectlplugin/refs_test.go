package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestRefsOutput: the tree draws each referenced object with what
// references it beneath, nested, and marks a cycle instead of following
// it; DOT has an edge from each dependent to what it references; JSON
// reads back.
func TestRefsOutput(t *testing.T) {
	zone := object(zoneType, "", "eu")
	vpc := object(vpcType, "a", "vpc-1")
	vm1 := object(vmType, "a", "vm-1")
	vm2 := object(vmType, "a", "vm-2")
	loopA := object(vpcType, "a", "loop-a")
	loopB := object(vmType, "a", "loop-b")
	backup := object(vmType, "a", "backup")
	tests := []struct {
		name   string
		graph  Graph
		format string
		want   string
	}{
		{name: "nothing referenced", graph: Graph{Objects: []Object{vpc}}, want: "no references\n"},
		{
			name:  "a tree",
			graph: Graph{References: []Reference{{From: vm1, To: vpc}, {From: vm2, To: vpc, Pending: true}, {From: vpc, To: zone}}},
			want: "Zone.network.test.io/eu\n" +
				"└── VPC.network.test.io/vpc-1 (a)\n" +
				"    ├── VirtualMachine.compute.test.io/vm-1 (a)\n" +
				"    └── VirtualMachine.compute.test.io/vm-2 (a) [being written]\n",
		},
		{
			name:  "a cycle",
			graph: Graph{References: []Reference{{From: loopB, To: loopA}, {From: loopA, To: loopB}}},
			want: "VPC.network.test.io/loop-a (a)\n" +
				"└── VirtualMachine.compute.test.io/loop-b (a)\n" +
				"    └── VPC.network.test.io/loop-a (a) [cycle]\n",
		},
		{
			// vm-1 references both VPCs, and backup references vm-1:
			// backup is drawn once, under vm-1's first place.
			name:  "a shared dependent",
			graph: Graph{References: []Reference{{From: vm1, To: vpc}, {From: vm1, To: loopA}, {From: backup, To: vm1}}},
			want: "VPC.network.test.io/loop-a (a)\n" +
				"└── VirtualMachine.compute.test.io/vm-1 (a)\n" +
				"    └── VirtualMachine.compute.test.io/backup (a)\n" +
				"VPC.network.test.io/vpc-1 (a)\n" +
				"└── VirtualMachine.compute.test.io/vm-1 (a) [see above]\n",
		},
		{
			name:   "DOT",
			graph:  Graph{References: []Reference{{From: vm1, To: vpc}, {From: vm2, To: vpc, Pending: true}}},
			format: formatDOT,
			want: "digraph references {\n  rankdir=LR;\n" +
				"  \"VPC.network.test.io/vpc-1 (a)\";\n  \"VirtualMachine.compute.test.io/vm-1 (a)\";\n  \"VirtualMachine.compute.test.io/vm-2 (a)\";\n" +
				"  \"VirtualMachine.compute.test.io/vm-1 (a)\" -> \"VPC.network.test.io/vpc-1 (a)\";\n" +
				"  \"VirtualMachine.compute.test.io/vm-2 (a)\" -> \"VPC.network.test.io/vpc-1 (a)\" [style=dashed];\n}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.graph
			g.normalize()
			var out bytes.Buffer
			if err := g.writeRefs(&out, tt.format); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
			var js bytes.Buffer
			if err := g.writeRefs(&js, formatJSON); err != nil {
				t.Fatal(err)
			}
			var back Graph
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.References) != len(g.References) || len(back.Objects) != len(g.Objects) {
				t.Errorf("the JSON reads back as %+v (%v):\n%s", back, err, js.String())
			}
			if strings.Contains(js.String(), "unanswered") {
				t.Errorf("the JSON names unanswered objects where there are none:\n%s", js.String())
			}
		})
	}
}
