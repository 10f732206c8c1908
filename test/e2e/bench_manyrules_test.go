package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/refindex"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
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

// deletesWithManyRules measures protected DELETEs in consumer with the
// 1000+ rules over VMs that readyWithManyRules created and the webhook
// restarted with: the cost of a decision where every rule applies, and the
// webhook's memory in the scenario the memory target names (1 000 rules,
// 10 000 dependents). oldStamp is the VMs' stamp before those rules.
func deletesWithManyRules(ctx context.Context, t *testing.T, top *Topology, rt *runtimetest.Runtime, consumer env.Workspace, d dynamic.Interface, oldStamp string) manyRulesResult {
	t.Helper()
	vmAPI := d.Resource(virtualMachines.GVR()).Namespace("apps")
	vpcAPI := d.Resource(vpcs.GVR()).Namespace("apps")
	fwAPI := d.Resource(firewallRules.GVR()).Namespace("apps")
	metric := func(name string) float64 {
		v, _ := strconv.ParseFloat(metricValue(ctx, t, rt.WebhookMetricsURL, name), 64)
		return v
	}
	decided := func() (float64, float64) {
		return metric(`depctrl_webhook_decision_duration_seconds_sum{outcome="allowed"}`), metric(`depctrl_webhook_decision_duration_seconds_count{outcome="allowed"}`)
	}
	warm := func() {
		_, err := vpcAPI.Get(ctx, "vpc-target", metav1.GetOptions{})
		must(t, err)
	}
	timed := func(f func() error) (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	}
	all, err := vmAPI.List(ctx, metav1.ListOptions{})
	must(t, err)
	res := manyRulesResult{dependents: len(all.Items)}

	// Writing the probe until it carries a new stamp shows that writes are
	// indexed under the new rules; every other VM still has the old one.
	stamp := waitStamp(ctx, t, vmAPI, "zz-blocker", oldStamp)
	top.object(ctx, t, consumer, vpcs, "many-first", map[string]interface{}{}, nil)
	time.Sleep(settle)
	warm()
	read0 := metric("depctrl_webhook_dependents_examined_total")
	start := time.Now()
	must(t, vpcAPI.Delete(ctx, "many-first", metav1.DeleteOptions{}))
	res.first = time.Since(start)
	res.firstRead = metric("depctrl_webhook_dependents_examined_total") - read0
	eventually(ctx, t, 30*time.Minute, "the webhook to re-index every VM under the many rules", func() error {
		l, err := vmAPI.List(ctx, metav1.ListOptions{LabelSelector: refindex.StampLabel + "!=" + stamp, Limit: 1})
		if err == nil && len(l.Items) > 0 {
			err = fmt.Errorf("%s is not indexed under the current rules", l.Items[0].GetName())
		}
		return err
	})
	res.reindexTook = time.Since(start)
	t.Logf("with many rules: the first delete read %.0f VMs in %s; the webhook re-indexed them in %s", res.firstRead, res.first.Round(time.Millisecond), res.reindexTook.Round(time.Second))

	var inWebhook time.Duration
	for trial := -3; trial < benchTrials; trial++ { // three to warm up
		name := fmt.Sprintf("many-%d", trial+3)
		top.object(ctx, t, consumer, firewallRules, name, map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, firewallRules, name+"-floor", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, vpcs, name, map[string]interface{}{}, nil)
		time.Sleep(settle)
		warm()
		must(t, fwAPI.Delete(ctx, name, metav1.DeleteOptions{}))
		sum0, count0 := decided()
		read0 := metric("depctrl_webhook_dependents_examined_total")
		allowed, err := timed(func() error { return vpcAPI.Delete(ctx, name, metav1.DeleteOptions{}) })
		must(t, err)
		sum1, count1 := decided()
		read1 := metric("depctrl_webhook_dependents_examined_total")
		floor, err := timed(func() error { return fwAPI.Delete(ctx, name+"-floor", metav1.DeleteOptions{}) })
		must(t, err)
		time.Sleep(settle)
		warm()
		denied, err := timed(func() error { return vpcAPI.Delete(ctx, "vpc-target", metav1.DeleteOptions{}) })
		if err == nil || !strings.Contains(err.Error(), "still referenced by VirtualMachine/zz-blocker") {
			t.Fatalf("deleting vpc-target with many rules: want a denial naming zz-blocker, got %v", err)
		}
		if trial < 0 {
			continue
		}
		res.floor, res.allowed, res.denied = append(res.floor, floor), append(res.allowed, allowed), append(res.denied, denied)
		if count1 > count0 {
			inWebhook += time.Duration((sum1 - sum0) / (count1 - count0) * float64(time.Second))
		}
		res.examined += (read1 - read0) / float64(benchTrials)
	}
	res.inWebhook = inWebhook / time.Duration(benchTrials)
	t.Logf("with many rules, indexed: floor %s, allowed %s (in the webhook %s, %.0f read), denied %s (p50)",
		res.floor.pct(.5), res.allowed.pct(.5), res.inWebhook, res.examined, res.denied.pct(.5))
	return res
}
