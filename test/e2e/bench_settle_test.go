package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// Targets of settling (the issue "Protection at the floor's cost").
const (
	targetSettledVsFloor  = 1.1
	targetTeardownVsFloor = 1.5
	targetWriteVsNoRule   = 1.3
)

// settledSizes are the numbers of dependents the settled deletes are
// measured among; teardownSize objects are torn down.
var (
	settledSizes = []int{0, 1000, 10000}
	teardownSize = 1000
	writeTrials  = 100
)

// settledRow is one N of the settled deletes, side by side: (a) the floor,
// isolated, and (a') right after another unprotected delete; (e) a settled
// VPC's allowed delete, isolated, and (e') right after another; (b) and
// (b') the same for VPCs created just before, younger than --settle-after,
// which the webhook decides.
type settledRow struct {
	n                                        int
	floor, floorAgain, settled, settledAgain latencies
	young, youngAgain                        latencies
	// oldest is the age of the oldest settled VPC when it was deleted.
	oldest time.Duration
}

// teardownResult is the time to delete teardownSize objects one by one,
// and by deleting the namespace that holds them.
type teardownResult struct {
	floor, settled, young     time.Duration
	floorNamespace, namespace time.Duration
}

// writeResult is the latency of creating a dependent with no rule
// installed, and under the rule when it references an object nothing
// referenced yet (first) or one already referenced (later). recorded is,
// with no rule, a PATCH of the referenced object followed by the create:
// the least any design pays that records a reference on its target before
// the write is admitted.
type writeResult struct {
	noRule, recorded, first, later latencies
}

type settleResults struct {
	rows     []settledRow
	teardown teardownResult
	writes   writeResult
}

// TestBenchmarkSettled measures settling alone, against the real two-shard
// kcp with the runtime as processes and the webhook's default
// --settle-after: the deletes of settled VPCs next to the floor and to
// young VPCs at each of settledSizes dependents, tearing down teardownSize
// objects, and what the write path costs a dependent. It writes its table
// to the test log. Run it with make bench-settled.
func TestBenchmarkSettled(t *testing.T) {
	if os.Getenv("DEPCTRL_BENCH_SETTLED") == "" {
		t.Skip("a benchmark, not a test: run it with make bench-settled")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	e := env.ForTest(t, env.TwoShards)
	top := setupTopology(ctx, t, e)
	rt := runtimetest.Start(ctx, t, e, top.DepCtrl.Path)
	rt.EnableSettling(ctx, t)
	consumer := top.Consumers[0]
	unthrottled := top.admin(t, consumer.Path)
	unthrottled.QPS, unthrottled.Burst, unthrottled.RateLimiter = -1, 0, nil
	d, err := dynamic.NewForConfig(unthrottled)
	check.Must(t, err)
	bd := newDeletes(top, consumer, d, rt.WebhookMetricsURL)
	// The VPC that warm reads.
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-target", map[string]interface{}{}, nil)
	res := measureSettling(ctx, t, bd, d, func() {
		top.createRule(ctx, t, top.Compute, ruleObject("bench-0", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, benchPaths[0]))
		top.waitReady(ctx, t, top.Compute, "bench-0")
		top.waitCondition(ctx, t, top.Compute, "bench-0", v1alpha1.ConditionIndexed, "True", "Indexed")
	})
	t.Log("\n" + res.section())
}

// measureSettling runs the settling scenarios; installRule installs the one
// rule that protects VPCs from VMs.
func measureSettling(ctx context.Context, t *testing.T, bd deletes, d dynamic.Interface, installRule func()) settleResults {
	t.Helper()
	var res settleResults
	res.writes = bd.measureWrites(ctx, t, installRule)

	have := 0
	for _, n := range settledSizes {
		createVMs(ctx, t, bd.vms, have, n)
		have = n
		res.rows = append(res.rows, bd.settledTrials(ctx, t, n))
	}
	res.teardown = bd.teardown(ctx, t, d)
	return res
}

// measureWrites measures the write path of dependents with no rule, then
// installs the rule with installRule and measures it under the rule.
func (d deletes) measureWrites(ctx context.Context, t *testing.T, installRule func()) writeResult {
	t.Helper()
	var w writeResult
	w.noRule = d.createDependents(ctx, t, "norule", false, false)
	w.recorded = d.createDependents(ctx, t, "recorded", false, true)
	installRule()
	w.first = d.createDependents(ctx, t, "first", false, false)
	w.later = d.createDependents(ctx, t, "later", true, false)
	return w
}

// createDependents creates writeTrials VMs back to back, each referencing
// an existing VPC: its own (first reference) or, when shared, one that an
// earlier VM already references. With patchFirst, each create comes right
// after a PATCH of the VPC it references, and is timed with it.
func (d deletes) createDependents(ctx context.Context, t *testing.T, prefix string, shared, patchFirst bool) latencies {
	t.Helper()
	target := func(i int) string { return fmt.Sprintf("w-%s-%03d", prefix, i) }
	if shared {
		target = func(int) string { return "w-" + prefix + "-shared" }
	}
	targets := writeTrials
	if shared {
		targets = 1
	}
	check.Must(t, inParallel(0, targets, func(i int) error { return createNamed(ctx, d.vpcs, fixtures.VPCs, target(i), nil) }))
	check.Must(t, createNamed(ctx, d.vms, fixtures.VirtualMachines, "vm-"+prefix+"-warm", ref(target(0))))
	time.Sleep(pause)
	var out latencies
	for i := range writeTrials {
		took, err := timed(func() error {
			if patchFirst {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench.depctrl.test/reference":%q}}}`, fmt.Sprint(i))
				if _, err := d.vpcs.Patch(ctx, target(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					return err
				}
			}
			return createNamed(ctx, d.vms, fixtures.VirtualMachines, fmt.Sprintf("vm-%s-%03d", prefix, i), ref(target(i)))
		})
		check.Must(t, err)
		out = append(out, took)
	}
	// The admission scenarios count the VMs in the namespace.
	check.Must(t, inParallel(-1, writeTrials, func(i int) error {
		name := fmt.Sprintf("vm-%s-%03d", prefix, i)
		if i < 0 {
			name = "vm-" + prefix + "-warm"
		}
		return d.vms.Delete(ctx, name, metav1.DeleteOptions{})
	}))
	return out
}

// createNamed creates an object of type a called name with spec.
func createNamed(ctx context.Context, api dynamic.ResourceInterface, a fixtures.APIType, name string, spec map[string]interface{}) error {
	if spec == nil {
		spec = map[string]interface{}{}
	}
	_, err := api.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": a.Group + "/v1", "kind": a.Kind, "metadata": map[string]interface{}{"name": name}, "spec": spec,
	}}, metav1.CreateOptions{})
	return err
}

// waitSettled waits until every VPC named in names is settled under the
// published stamp.
func (d deletes) waitSettled(ctx context.Context, t *testing.T, api dynamic.ResourceInterface, names []string) {
	t.Helper()
	start := time.Now()
	check.Eventually(ctx, t, 2*settle.DefaultSettleAfter+time.Minute, fmt.Sprintf("%d VPCs settled", len(names)), func() error {
		if len(names) <= 2 {
			return d.settledNow(ctx, api, names)
		}
		stamp := d.top.publishedStamp(ctx, t, fixtures.VPCs)
		if stamp == "" {
			return fmt.Errorf("no stamp published")
		}
		l, err := api.List(ctx, metav1.ListOptions{LabelSelector: settle.SettledLabel + "=" + stamp})
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, o := range l.Items {
			have[o.GetName()] = true
		}
		for _, n := range names {
			if !have[n] {
				return fmt.Errorf("%s is not settled (%d of %d are)", n, len(l.Items), len(names))
			}
		}
		return nil
	})
	if len(names) > 2 {
		t.Logf("%d VPCs settled %s after they were created", len(names), time.Since(start).Round(time.Second))
	}
}

// settledNow reports, with a GET of each, whether the VPCs are settled
// under the published stamp.
func (d deletes) settledNow(ctx context.Context, api dynamic.ResourceInterface, names []string) error {
	for _, n := range names {
		u, err := api.Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if u.GetLabels()[settle.SettledLabel] == "" {
			return fmt.Errorf("%s is not settled", n)
		}
	}
	return nil
}

// settledTrials measures benchTrials trials of settled, young and
// unprotected deletes among n dependents. Each trial creates its VPCs, waits
// until two of them are settled, and deletes them, so that no settled VPC is
// older than a real teardown would find it.
func (d deletes) settledTrials(ctx context.Context, t *testing.T, n int) settledRow {
	t.Helper()
	row := settledRow{n: n}
	for i := range benchTrials + 3 {
		name := fmt.Sprintf("%d-%d", n, i)
		created := time.Now()
		for _, vpc := range []string{"s-" + name, "s-" + name + "-again"} {
			check.Must(t, createNamed(ctx, d.vpcs, fixtures.VPCs, vpc, nil))
		}
		for _, fw := range []string{"f-" + name, "f-" + name + "-again"} {
			check.Must(t, createNamed(ctx, d.fws, fixtures.FirewallRules, fw, nil))
		}
		d.waitSettled(ctx, t, d.vpcs, []string{"s-" + name, "s-" + name + "-again"})
		for _, vpc := range []string{"y-" + name, "y-" + name + "-again"} {
			check.Must(t, createNamed(ctx, d.vpcs, fixtures.VPCs, vpc, nil))
		}
		measure := func(api dynamic.ResourceInterface, first, again string) (time.Duration, time.Duration) {
			time.Sleep(pause)
			d.warm(ctx, t)
			a, err := timed(func() error { return api.Delete(ctx, first, metav1.DeleteOptions{}) })
			check.Must(t, err)
			b, err := timed(func() error { return api.Delete(ctx, again, metav1.DeleteOptions{}) })
			check.Must(t, err)
			return a, b
		}
		floor, floorAgain := measure(d.fws, "f-"+name, "f-"+name+"-again")
		settled, settledAgain := measure(d.vpcs, "s-"+name, "s-"+name+"-again")
		age := time.Since(created)
		young, youngAgain := measure(d.vpcs, "y-"+name, "y-"+name+"-again")
		if i < 3 {
			continue
		}
		row.oldest = max(row.oldest, age)
		row.floor, row.floorAgain = append(row.floor, floor), append(row.floorAgain, floorAgain)
		row.settled, row.settledAgain = append(row.settled, settled), append(row.settledAgain, settledAgain)
		row.young, row.youngAgain = append(row.young, young), append(row.youngAgain, youngAgain)
	}
	t.Logf("N=%d: floor %s / %s, settled %s / %s (at most %s old), young %s / %s (p50, isolated / back to back)", n,
		row.floor.pct(.5), row.floorAgain.pct(.5), row.settled.pct(.5), row.settledAgain.pct(.5), row.oldest.Round(100*time.Millisecond),
		row.young.pct(.5), row.youngAgain.pct(.5))
	return row
}

// teardown deletes teardownSize FirewallRules, settled VPCs and young VPCs
// one by one, and then a namespace of settled VPCs and one of FirewallRules.
func (d deletes) teardown(ctx context.Context, t *testing.T, dyn dynamic.Interface) teardownResult {
	t.Helper()
	var r teardownResult
	names := func(prefix string) []string {
		out := make([]string, teardownSize)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%04d", prefix, i)
		}
		return out
	}
	create := func(api dynamic.ResourceInterface, a fixtures.APIType, names []string) {
		check.Must(t, inParallel(0, len(names), func(i int) error { return createNamed(ctx, api, a, names[i], nil) }))
	}
	oneByOne := func(api dynamic.ResourceInterface, names []string) time.Duration {
		time.Sleep(pause)
		start := time.Now()
		for _, n := range names {
			check.Must(t, api.Delete(ctx, n, metav1.DeleteOptions{}))
		}
		return time.Since(start)
	}
	// The floor and the settled VPCs are measured while the settler is
	// idle (every VPC there is settled); the young VPCs right after they
	// were created, while it works on them, as in a real teardown.
	settledNames := names("td-settled")
	create(d.vpcs, fixtures.VPCs, settledNames)
	d.waitSettled(ctx, t, d.vpcs, settledNames)
	create(d.fws, fixtures.FirewallRules, names("td-floor"))
	r.floor = oneByOne(d.fws, names("td-floor"))
	r.settled = oneByOne(d.vpcs, settledNames)
	create(d.vpcs, fixtures.VPCs, names("td-young"))
	r.young = oneByOne(d.vpcs, names("td-young"))

	namespaces := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	ns := func(name string) {
		_, err := namespaces.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": name}}}, metav1.CreateOptions{})
		check.Must(t, err)
	}
	gone := func(name string) time.Duration {
		start := time.Now()
		check.Must(t, namespaces.Delete(ctx, name, metav1.DeleteOptions{}))
		check.Eventually(ctx, t, 10*time.Minute, "namespace "+name+" deleted", func() error {
			if _, err := namespaces.Get(ctx, name, metav1.GetOptions{}); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		return time.Since(start)
	}
	ns("td-vpcs")
	ns("td-fws")
	vpcsThere := dyn.Resource(fixtures.VPCs.GVR()).Namespace("td-vpcs")
	create(vpcsThere, fixtures.VPCs, settledNames)
	d.waitSettled(ctx, t, vpcsThere, settledNames)
	create(dyn.Resource(fixtures.FirewallRules.GVR()).Namespace("td-fws"), fixtures.FirewallRules, names("td-floor"))
	time.Sleep(pause)
	r.floorNamespace = gone("td-fws")
	r.namespace = gone("td-vpcs")
	t.Logf("teardown of %d: one by one, unprotected %s, settled %s, young %s; namespace, unprotected %s, settled %s", teardownSize,
		r.floor, r.settled, r.young, r.floorNamespace, r.namespace)
	return r
}

// oldestSettled is the age of the oldest settled VPC deleted in rows.
func oldestSettled(rows []settledRow) time.Duration {
	var d time.Duration
	for _, r := range rows {
		d = max(d, r.oldest)
	}
	return d
}

// section renders the results as the benchmark page's section.
func (res settleResults) section() string {
	var b strings.Builder
	p := func(l latencies) string { return ms(l.pct(.5)) + " / " + ms(l.pct(.99)) }
	fmt.Fprintf(&b, "## Settled objects\n\nDeletes among N dependents, p50 / p99 in milliseconds over %d trials: (a) an unprotected FirewallRule, "+
		"(e) a VPC the webhook settled, created in the same trial (at most %s before its deletion), (b) a VPC created just before, which the webhook decides; "+
		"each isolated (%s after the last read) and back to back (right after the same delete of another object).\n\n", benchTrials, oldestSettled(res.rows).Round(time.Second), pause)
	b.WriteString("| N | (a) floor | (a) back to back | (e) settled | (e) back to back | (b) young | (b) back to back | (e)/(a) | (e)/(a) back to back | (b)/(a) | (b)/(a) back to back |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range res.rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f |\n", r.n, p(r.floor), p(r.floorAgain), p(r.settled), p(r.settledAgain),
			p(r.young), p(r.youngAgain),
			verdict(ratio(r.settled.pct(.5), r.floor.pct(.5)), targetSettledVsFloor, true),
			verdict(ratio(r.settledAgain.pct(.5), r.floorAgain.pct(.5)), targetSettledVsFloor, true),
			ratio(r.young.pct(.5), r.floor.pct(.5)), ratio(r.youngAgain.pct(.5), r.floorAgain.pct(.5)))
	}
	td := res.teardown
	fmt.Fprintf(&b, "\nTearing down %d objects: one by one, unprotected %s, settled VPCs %s (%s), VPCs younger than `--settle-after` %s (%.2f); "+
		"by deleting their namespace, unprotected %s, settled VPCs %s (%s).\n", teardownSize, secs(td.floor), secs(td.settled),
		verdict(ratio(td.settled, td.floor), targetTeardownVsFloor, true), secs(td.young), ratio(td.young, td.floor),
		secs(td.floorNamespace), secs(td.namespace), verdict(ratio(td.namespace, td.floorNamespace), targetTeardownVsFloor, true))
	w := res.writes
	fmt.Fprintf(&b, "\nCreating a VM that references an existing VPC, %d back to back, p50 / p99: with no rule %s; under the rule, "+
		"the VPC's first reference %s (%s), a VPC already referenced %s (%s). "+
		"With no rule, a PATCH of the VPC followed by the create, the least a write pays when its reference is recorded on the VPC before it is admitted: %s (%.2f).\n",
		writeTrials, p(w.noRule), p(w.first),
		verdict(ratio(w.first.pct(.5), w.noRule.pct(.5)), targetWriteVsNoRule, true), p(w.later),
		verdict(ratio(w.later.pct(.5), w.noRule.pct(.5)), targetWriteVsNoRule, true),
		p(w.recorded), ratio(w.recorded.pct(.5), w.noRule.pct(.5)))
	b.WriteString(writePathVerdict(w))
	return b.String()
}

// writePathVerdict says whether the write path's target can be met: a write
// that references an object must be recorded on that object before it is
// admitted (the architecture guide says why), so no design pays less than
// the recorded row.
func writePathVerdict(w writeResult) string {
	bound := ratio(w.recorded.pct(.5), w.noRule.pct(.5))
	if bound <= targetWriteVsNoRule {
		return fmt.Sprintf("\nThe bound (%.2f) is within the target (%.2f): what the webhook adds beyond its patch is the lever, "+
			"its call on the create and the index labels it computes.\n", bound, targetWriteVsNoRule)
	}
	return fmt.Sprintf("\n**The write-path target (%.2f) is blocked on this machine.** A reference must be recorded on the object it "+
		"names before the write is admitted: that record changes the object's revision, and the API server stores a deletion "+
		"only against the revision it was decided on, so no deletion decided without the record can be stored after it "+
		"(the [architecture guide](architecture.md#intents-references-on-their-way) has the argument). Without it a deletion "+
		"decided while the write is on its way misses the write, the race protection exists for. That record is one more "+
		"write, and one write costs about the floor: measured above with no rule at all, a PATCH of the VPC followed by "+
		"the create is %.2f× the create alone, before any webhook is called. The rows under the rule pay that and the "+
		"webhook's call on the create (the index labels and the intent patch are one call).\n", targetWriteVsNoRule, bound)
}
