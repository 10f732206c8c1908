package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// ruleShape is one kind of reference a rule can describe: a dependent type
// and a target type, each namespaced or cluster-scoped, at a field path.
type ruleShape struct {
	name              string
	rule              string
	dependent, target fixtures.APIType
	path              string
	// spec is the dependent's spec that references the target called name.
	spec func(name string) map[string]interface{}
}

var ruleShapes = []ruleShape{
	{name: "namespaced dependent, namespaced target", rule: "vm-needs-vpc", dependent: fixtures.VirtualMachines, target: fixtures.VPCs,
		path: ".spec.vpcRef.name", spec: func(n string) map[string]interface{} { return ref(n) }},
	{name: "namespaced dependent, namespaced target, in a list", rule: "vm-networks", dependent: fixtures.VirtualMachines, target: fixtures.VPCs,
		path: ".spec.networks[*].vpc", spec: func(n string) map[string]interface{} {
			return map[string]interface{}{"networks": []interface{}{map[string]interface{}{"name": "eth0"}, map[string]interface{}{"vpc": n}}}
		}},
	{name: "cluster-scoped dependent, namespaced target", rule: "region-needs-vpc", dependent: fixtures.Regions, target: fixtures.VPCs,
		path: ".spec.vpc", spec: func(n string) map[string]interface{} { return map[string]interface{}{"vpc": n} }},
	{name: "cluster-scoped dependent, cluster-scoped target", rule: "region-parent", dependent: fixtures.Regions, target: fixtures.Regions,
		path: ".spec.parent", spec: func(n string) map[string]interface{} { return map[string]interface{}{"parent": n} }},
	{name: "namespaced dependent, cluster-scoped target", rule: "vm-region", dependent: fixtures.VirtualMachines, target: fixtures.Regions,
		path: ".spec.region", spec: func(n string) map[string]interface{} { return map[string]interface{}{"region": n} }},
}

// TestRuleShapes: on the real two-shard kcp, every shape of reference a rule
// can describe holds the promise, in a consumer on each shard, with settling
// off and then on: the target's deletion is refused while the dependent
// references it (with settling on, also once the target was settled before
// the reference was made), and goes through once the dependent is gone.
func TestRuleShapes(t *testing.T) {
	ctx, e := integration(t, 20*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	for _, s := range ruleShapes {
		ws := top.Compute
		if s.dependent.Group == fixtures.Regions.Group {
			ws = top.Network
		}
		top.createRule(ctx, t, ws, ruleObject(s.rule, s.dependent, s.target, top.Network.Path, s.path))
		defer top.deleteRule(ctx, t, ws, s.rule)
		top.waitReady(ctx, t, ws, s.rule)
	}
	for _, settling := range []bool{false, true} {
		mode := "settling off"
		if settling {
			mode = "settling on"
			rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
		}
		for _, c := range top.Consumers {
			for i, s := range ruleShapes {
				t.Run(fmt.Sprintf("%s/shard %s/%s", mode, c.Shard, s.name), func(t *testing.T) {
					target := fmt.Sprintf("t%d-%s", i, map[bool]string{false: "off", true: "on"}[settling])
					dependent := "d-" + target
					top.object(ctx, t, c, s.target, target, map[string]interface{}{}, nil)
					if settling {
						waitObjectSettled(ctx, t, top, c, s.target, target)
					}
					top.object(ctx, t, c, s.dependent, dependent, s.spec(target), nil)
					top.expectDenied(ctx, t, c, s.target, target, fmt.Sprintf("still referenced by %s/%s", s.dependent.Kind, dependent))
					check.Must(t, top.remove(ctx, t, c, s.dependent, dependent))
					top.expectDeleted(ctx, t, c, s.target, target)
				})
			}
		}
	}
}

// waitObjectSettled waits until the object of type a called name in ws
// carries the settled label under the stamp published for a. A reference
// made earlier from a cluster-scoped dependent to its type holds back
// settling in that workspace for an intent's lifetime (90 s).
func waitObjectSettled(ctx context.Context, t *testing.T, top *Topology, ws env.Workspace, a fixtures.APIType, name string) {
	t.Helper()
	check.Eventually(ctx, t, 3*time.Minute, a.Kind+"/"+name+" settled", func() error {
		stamp := top.publishedStamp(ctx, t, a)
		u, err := top.objects(t, ws, a).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l := u.GetLabels()[settle.SettledLabel]; stamp == "" || l != stamp {
			return fmt.Errorf("label %q, published %q", l, stamp)
		}
		return nil
	})
}
