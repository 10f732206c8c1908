package e2e

import (
	"context"
	"fmt"
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
	benchOnly(t, "DEPCTRL_BENCH_SETTLED", "run it with make bench-settled")
	ctx := testContext(t, 60*time.Minute)
	top, rt := install(ctx, t, env.ForTest(t, env.TwoShards))
	rt.EnableSettling(ctx, t)
	bd, d := unthrottledDeletes(t, top, rt)
	// The VPC that warm reads.
	top.object(ctx, t, bd.consumer, fixtures.VPCs, "vpc-target", map[string]interface{}{}, nil)
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

// settledView is what the settled-objects section (settled.md.gotmpl)
// shows: latencies as "p50 / p99" in milliseconds, ratios of p50s.
type settledView struct {
	Trials        int
	Oldest, Pause string
	Rows          []settledRowView
	Teardown      teardownView
	Writes        writesView
}

// settledRowView is one N of the settled deletes.
type settledRowView struct {
	N                                   int
	Floor, FloorAgain, Settled          string
	SettledAgain, Young, YoungAgain     string
	SettledVsFloor, SettledAgainVsFloor string
	YoungVsFloor, YoungAgainVsFloor     string
}

// teardownView is the teardown of Objects objects, in seconds.
type teardownView struct {
	Objects                                     int
	Floor, Settled, SettledVsFloor              string
	Young, YoungVsFloor                         string
	FloorNamespace, Namespace, NamespaceVsFloor string
}

// writesView is the write path. Bound is what recording a reference on
// its target costs with no rule, the least any design pays: WithinBound
// says whether the target can be met at all.
type writesView struct {
	Trials                         int
	NoRule, First, FirstVsNoRule   string
	Later, LaterVsNoRule, Recorded string
	Bound, Target                  string
	WithinBound                    bool
}

// view computes every figure of the section.
func (res settleResults) view() settledView {
	p := func(l latencies) string { return ms(l.pct(.5)) + " / " + ms(l.pct(.99)) }
	vsP50 := func(a, b latencies) float64 { return ratio(a.pct(.5), b.pct(.5)) }
	v := settledView{Trials: benchTrials, Oldest: oldestSettled(res.rows).Round(time.Second).String(), Pause: pause.String()}
	for _, r := range res.rows {
		v.Rows = append(v.Rows, settledRowView{
			N: r.n, Floor: p(r.floor), FloorAgain: p(r.floorAgain), Settled: p(r.settled),
			SettledAgain: p(r.settledAgain), Young: p(r.young), YoungAgain: p(r.youngAgain),
			SettledVsFloor:      verdict(vsP50(r.settled, r.floor), targetSettledVsFloor, true),
			SettledAgainVsFloor: verdict(vsP50(r.settledAgain, r.floorAgain), targetSettledVsFloor, true),
			YoungVsFloor:        f2(vsP50(r.young, r.floor)), YoungAgainVsFloor: f2(vsP50(r.youngAgain, r.floorAgain)),
		})
	}
	td := res.teardown
	v.Teardown = teardownView{
		Objects: teardownSize, Floor: secs(td.floor), Settled: secs(td.settled),
		SettledVsFloor: verdict(ratio(td.settled, td.floor), targetTeardownVsFloor, true),
		Young:          secs(td.young), YoungVsFloor: f2(ratio(td.young, td.floor)),
		FloorNamespace: secs(td.floorNamespace), Namespace: secs(td.namespace),
		NamespaceVsFloor: verdict(ratio(td.namespace, td.floorNamespace), targetTeardownVsFloor, true),
	}
	w := res.writes
	bound := vsP50(w.recorded, w.noRule)
	v.Writes = writesView{
		Trials: writeTrials, NoRule: p(w.noRule),
		First: p(w.first), FirstVsNoRule: verdict(vsP50(w.first, w.noRule), targetWriteVsNoRule, true),
		Later: p(w.later), LaterVsNoRule: verdict(vsP50(w.later, w.noRule), targetWriteVsNoRule, true),
		Recorded: p(w.recorded), Bound: f2(bound), Target: f2(targetWriteVsNoRule), WithinBound: bound <= targetWriteVsNoRule,
	}
	return v
}

// section renders the results as the benchmark page's section.
func (res settleResults) section() string {
	var b strings.Builder
	if err := benchmarkPageTemplate.ExecuteTemplate(&b, "settled", res.view()); err != nil {
		panic(fmt.Sprintf("rendering the settled-objects section: %v", err))
	}
	return b.String()
}
