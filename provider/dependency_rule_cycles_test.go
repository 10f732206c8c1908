package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
)

// TestCheckCyclesAmongPlannedRules: without kcp to read, the rules this
// plan leaves are checked against each other: a rule that closes a cycle
// fails on the dependency that closes it, naming every rule on the cycle;
// one whose partner this plan deletes, or whose types are not known yet,
// does not.
func TestCheckCyclesAmongPlannedRules(t *testing.T) {
	rule := func(p, name, from string, to ...string) plannedRule {
		return plannedRule{path: p, name: name, steps: &ruleSteps{from: from, to: to}}
	}
	vmNeedsVPC := rule("root:compute", "vm-needs-vpc", "vms.compute", "vpcs.network")
	dbNeedsVPC := rule("root:compute", "db-needs-vpc", "dbs.compute", "vpcs.network")
	vpcNeedsVM := rule("root:network", "vpc-needs-vm", "vpcs.network", "firewalls.network", "vms.compute")
	for _, tt := range []struct {
		name    string
		planned []plannedRule
		deleted []plannedRule
		self    plannedRule
		want    []string // the detail's parts, on dependency[1]
	}{
		{name: "no cycle", planned: []plannedRule{vmNeedsVPC, dbNeedsVPC}, self: dbNeedsVPC},
		{
			name: "the second dependency closes a cycle", planned: []plannedRule{vmNeedsVPC, dbNeedsVPC, vpcNeedsVM}, self: vpcNeedsVM,
			want: []string{"dependency[1]: with it, rule root:network/vpc-needs-vm closes a dependency cycle with rule root:compute/vm-needs-vpc: " +
				"vpcs.network -> vms.compute (rule root:network/vpc-needs-vm) -> vpcs.network (rule root:compute/vm-needs-vpc)", "CycleDetected"},
		},
		{
			name: "a partner this plan deletes", planned: []plannedRule{vmNeedsVPC, vpcNeedsVM}, deleted: []plannedRule{vmNeedsVPC}, self: vpcNeedsVM,
		},
		{
			name: "a partner whose types are not known until apply", self: vpcNeedsVM,
			planned: []plannedRule{{path: vmNeedsVPC.path, name: vmNeedsVPC.name}, vpcNeedsVM},
		},
		{
			name: "a rule in a workspace not known until apply", planned: []plannedRule{vmNeedsVPC, rule("", "vpc-needs-vm", "vpcs.network", "firewalls.network", "vms.compute")},
			self: rule("", "vpc-needs-vm", "vpcs.network", "firewalls.network", "vms.compute"),
			want: []string{"rule vpc-needs-vm (in a workspace not known until apply) closes a dependency cycle with rule root:compute/vm-needs-vpc"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &dependencyRuleResource{resourceType{conn: &Connection{err: errors.New("no kcp in a unit test")}}}
			for _, p := range tt.planned {
				r.conn.rulePlans.plan(nil, &p)
			}
			for _, p := range tt.deleted {
				r.conn.rulePlans.plan(&p, nil)
			}
			var diags diagnostics
			r.checkCycles(context.Background(), tt.self, &diags)
			if len(tt.want) == 0 {
				if diags.HasError() {
					t.Fatalf("want no error, got %v", diags)
				}
				return
			}
			if diags.ErrorsCount() != 1 {
				t.Fatalf("want one error, got %v", diags)
			}
			d := diags.Errors()[0]
			if wd, ok := d.(interface{ Path() path.Path }); !ok || !wd.Path().Equal(path.Root("dependency").AtListIndex(1)) {
				t.Errorf("the error is not on dependency[1]: %v", d)
			}
			for _, w := range tt.want {
				if !strings.Contains(d.Detail(), w) {
					t.Errorf("the error does not say %q:\n%s", w, d.Detail())
				}
			}
		})
	}
}

// TestRulePlansReplacement: a rule planned under another name or in
// another workspace leaves its old key deleted.
func TestRulePlansReplacement(t *testing.T) {
	var rp rulePlans
	old := plannedRule{path: "root:a", name: "x", steps: &ruleSteps{from: "a", to: []string{"b"}}}
	renamed := plannedRule{path: "root:a", name: "y", steps: old.steps}
	rp.plan(nil, &old)
	rp.plan(&old, &renamed)
	got, _ := rp.snapshot()
	if len(got) != 2 || got[0].key() != "root:a/x" || got[0].steps != nil || got[1].key() != "root:a/y" || got[1].steps == nil {
		t.Fatalf("snapshot = %+v, want root:a/x deleted and root:a/y planned", got)
	}
}
