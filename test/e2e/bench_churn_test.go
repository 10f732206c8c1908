package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// churnBatch is how many objects each rule churn scenario deletes back to
// back.
const churnBatch = 100

// churnSettleAfter is the webhook's --settle-after in TestBenchmarkChurn:
// the deletes it measures do not depend on it, and waiting the default
// 90 s for every batch to be settled would only make the run longer.
const churnSettleAfter = 5 * time.Second

// targetChurnVsFloor is issue "Protection under load"'s target for deletes
// of settled objects within 10 s of a rule change over their type.
const targetChurnVsFloor = 1.10

// churnResult is what TestBenchmarkChurn measured: deletes back to back of
// unprotected objects (floor), of settled VPCs with the rules standing
// (quiet), right after a rule over VPCs was deleted (removed), right after
// one was created (added), and right after one created was reported Ready
// (ready).
type churnResult struct {
	quiet, removed, added, ready latencies
	// floor holds each batch's unprotected deletes, by batch: "quiet",
	// "removed", "added", "ready".
	floor map[string]latencies
	// removedWithin, addedWithin and readyWithin are how long after the
	// rule change the last delete of each batch returned.
	removedWithin, addedWithin, readyWithin time.Duration
	// readyAfter is how long after its creation the rule of the added
	// batch was reported Ready.
	readyAfter time.Duration
}

// TestBenchmarkChurn measures what a rule change over a type costs the
// deletes of its settled objects: two rules protect VPCs (from VMs and from
// ManagedDBs); batches of settled VPCs are deleted back to back while the
// rules stand, right after one of the rules is deleted, right after it is
// created again, and right after it is created and reported Ready. It writes its section to the test log. Run it with
// make bench-churn.
func TestBenchmarkChurn(t *testing.T) {
	benchOnly(t, "DEPCTRL_BENCH_CHURN", "run it with make bench-churn")
	ctx := testContext(t, 40*time.Minute)
	t.Log("\n" + measureChurn(ctx, t, env.ForTest(t, env.TwoShards)).section())
}

// measureChurn measures rule churn on a topology and runtime of its own in
// e.
func measureChurn(ctx context.Context, t *testing.T, e *env.Env) churnResult {
	t.Helper()
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", churnSettleAfter.String())
	defer func() {
		rt.StopController(t)
		rt.StopWebhook(t)
	}()
	bd, _ := unthrottledDeletes(t, top, rt)
	top.protectVPCs(ctx, t)
	var created time.Time
	create := func() {
		created = time.Now()
		top.createRule(ctx, t, top.Compute, ruleObject("db-needs-vpc", fixtures.ManagedDBs, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
	}
	ready := func() time.Duration {
		check.Eventually(ctx, t, 3*time.Minute, "rule db-needs-vpc Ready", func() error {
			if status, reason, msg := condition(top.getRule(ctx, t, top.Compute, "db-needs-vpc"), v1alpha1.ConditionReady); status != "True" {
				return fmt.Errorf("Ready=%q %s: %s", status, reason, msg)
			}
			return nil
		})
		return time.Since(created)
	}
	remove := func() { top.deleteRule(ctx, t, top.Compute, "db-needs-vpc") }
	create()
	ready()
	res := churnResult{floor: map[string]latencies{}}
	res.floor["quiet"], res.quiet, _ = bd.churnBatch(ctx, t, "quiet", nil)
	res.floor["removed"], res.removed, res.removedWithin = bd.churnBatch(ctx, t, "removed", remove)
	// Measured once the controller has acted on the new rule (it reports
	// it Settling): before that nothing has changed for the VPCs yet.
	res.floor["added"], res.added, res.addedWithin = bd.churnBatch(ctx, t, "added", func() {
		create()
		top.waitCondition(ctx, t, top.Compute, "db-needs-vpc", v1alpha1.ConditionReady, "False", "Settling")
	})
	res.readyAfter = ready()
	remove()
	res.floor["ready"], res.ready, res.readyWithin = bd.churnBatch(ctx, t, "ready", func() { create(); ready() })
	return res
}

// churnBatch creates churnBatch VPCs and as many FirewallRules, waits until
// the VPCs are settled, runs change (nil: none), and deletes them one of
// each in turn, the FirewallRule first. within is how long after the change
// began the last VPC's delete returned.
func (d deletes) churnBatch(ctx context.Context, t *testing.T, prefix string, change func()) (floor, settled latencies, within time.Duration) {
	t.Helper()
	names := make([]string, churnBatch)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	check.Must(t, inParallel(0, churnBatch, func(i int) error { return createNamed(ctx, d.vpcs, fixtures.VPCs, names[i], nil) }))
	check.Must(t, inParallel(0, churnBatch, func(i int) error { return createNamed(ctx, d.fws, fixtures.FirewallRules, names[i], nil) }))
	d.waitSettled(ctx, t, d.vpcs, names)
	time.Sleep(pause)
	changed := time.Now()
	if change != nil {
		change()
	}
	// One of each in turn, the FirewallRule first: the floor and the
	// VPCs meet the server at the same moments, whatever it is busy with
	// after the change.
	for _, n := range names {
		for _, del := range []struct {
			api dynamic.ResourceInterface
			out *latencies
		}{{d.fws, &floor}, {d.vpcs, &settled}} {
			took, err := timed(func() error { return del.api.Delete(ctx, n, metav1.DeleteOptions{}) })
			check.Must(t, err)
			*del.out = append(*del.out, took)
		}
	}
	within = time.Since(changed)
	t.Logf("%s: floor %s, settled VPCs %s (p50), the last %s after the change", prefix, floor.pct(.5), settled.pct(.5), within.Round(time.Millisecond))
	return floor, settled, within
}

// ruleChurnRow is one row of the section.
type ruleChurnRow struct {
	What, P50, P99, Floor, VsFloor string
}

// ruleChurnView is what churn.md.gotmpl renders.
type ruleChurnView struct {
	Batch       int
	SettleAfter time.Duration
	Rows        []ruleChurnRow
	// ReadyAfter is how long after its creation the rule was Ready, in
	// seconds; Transition how long the webhook keeps a bridge.
	ReadyAfter, Transition string
}

func (r churnResult) view() ruleChurnView {
	// Each batch against the unprotected deletes interleaved with its own.
	row := func(what, batch string, l latencies, within time.Duration, target bool) ruleChurnRow {
		floor := r.floor[batch]
		vs := ratio(l.pct(.5), floor.pct(.5))
		v := fmt.Sprintf("%.2f", vs)
		if target {
			v = verdict(vs, targetChurnVsFloor, true)
		}
		if within > 0 {
			what += fmt.Sprintf(", the last %.1f s after the change", within.Seconds())
		}
		return ruleChurnRow{What: what, P50: ms(l.pct(.5)), P99: ms(l.pct(.99)), Floor: ms(floor.pct(.5)), VsFloor: v}
	}
	return ruleChurnView{Batch: churnBatch, SettleAfter: churnSettleAfter, Rows: []ruleChurnRow{
		row("settled VPCs, the rules standing", "quiet", r.quiet, 0, false),
		row("settled VPCs right after one of the two rules over them was deleted", "removed", r.removed, r.removedWithin, true),
		row("settled VPCs right after a rule over them was created and reported Settling", "added", r.added, r.addedWithin, true),
		row("settled VPCs right after a rule over them was created and reported Ready", "ready", r.ready, r.readyWithin, false),
	}, ReadyAfter: fmt.Sprintf("%.0f s", r.readyAfter.Seconds()), Transition: settle.TransitionFor(churnSettleAfter).String()}
}

// section renders the result as the benchmarks guide's section.
func (r churnResult) section() string {
	var b strings.Builder
	if err := benchmarkPageTemplate.ExecuteTemplate(&b, "churn", r.view()); err != nil {
		return err.Error()
	}
	return b.String()
}
