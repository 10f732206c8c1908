package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// manyRulesResult is what protected DELETEs cost with the 1000+ rules of
// readyWithManyRules in place, among all of the benchmark's VMs.
type manyRulesResult struct {
	dependents int
	// first is the first allowed delete after the rules were created: no
	// VM carries their stamp yet, so it reads every VM in full, with every
	// rule's path, and hands them to the webhook's re-indexer.
	first     time.Duration
	firstRead float64
	// reindexTook is the time from that delete until every VM carried the
	// new stamp, re-indexed by the webhook itself.
	reindexTook time.Duration
	// Then, indexed, as in the admission table.
	floor, allowed, denied latencies
	inWebhook              time.Duration
	examined               float64
}

// deletesWithManyRules measures protected DELETEs (bd) with the
// 1000+ rules over VMs that readyWithManyRules created and the webhook
// restarted with: the cost of a decision where every rule applies, and the
// webhook's memory in the scenario the memory target names (1 000 rules,
// 10 000 dependents). oldStamp is the VMs' stamp before those rules.
func deletesWithManyRules(ctx context.Context, t *testing.T, bd deletes, oldStamp string) manyRulesResult {
	t.Helper()
	top, consumer, vmAPI, vpcAPI := bd.top, bd.consumer, bd.vms, bd.vpcs
	all, err := vmAPI.List(ctx, metav1.ListOptions{})
	check.Must(t, err)
	res := manyRulesResult{dependents: len(all.Items)}

	// Writing the probe until it carries a new stamp shows that writes are
	// indexed under the new rules; every other VM still has the old one.
	stamp := waitStamp(ctx, t, vmAPI, "zz-blocker", oldStamp)
	top.object(ctx, t, consumer, fixtures.VPCs, "many-first", map[string]interface{}{}, nil)
	time.Sleep(pause)
	bd.warm(ctx, t)
	read0 := bd.examined(ctx, t)
	start := time.Now()
	check.Must(t, vpcAPI.Delete(ctx, "many-first", metav1.DeleteOptions{}))
	res.first = time.Since(start)
	res.firstRead = bd.examined(ctx, t) - read0
	waitAllStamped(ctx, t, vmAPI, stamp)
	res.reindexTook = time.Since(start)
	t.Logf("with many rules: the first delete read %.0f VMs in %s; the webhook re-indexed them in %s", res.firstRead, res.first.Round(time.Millisecond), res.reindexTook.Round(time.Second))

	trials := bd.trials(ctx, t, "many", nil, false)
	res.inWebhook, res.examined = meanInWebhook(trials), meanRead(trials)
	for _, x := range trials {
		res.floor, res.allowed, res.denied = append(res.floor, x.floor), append(res.allowed, x.allowed), append(res.denied, x.denied)
	}
	t.Logf("with many rules, indexed: floor %s, allowed %s (in the webhook %s, %.0f read), denied %s (p50)",
		res.floor.pct(.5), res.allowed.pct(.5), res.inWebhook, res.examined, res.denied.pct(.5))
	return res
}
