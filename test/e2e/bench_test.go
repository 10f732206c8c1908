package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// benchVariable turns the benchmark on; it writes its page and plot into
// the directory it names (make bench points it at the repository).
const benchVariable = "DEPCTRL_BENCH_OUT"

// benchOnly skips t unless variable is set, and returns its value: a
// benchmark is not a test, and runs only when make asks for it (how).
func benchOnly(t *testing.T, variable, how string) string {
	t.Helper()
	v := os.Getenv(variable)
	if v == "" {
		t.Skip("a benchmark, not a test: " + how)
	}
	return v
}

// Sizes and repetitions of the admission benchmark.
var (
	benchSizes  = []int{0, 100, 1000, 10000}
	benchRules  = []int{1, 5}
	benchTrials = 25
)

// The field paths of the five rules that all protect VPCs from VMs.
var benchPaths = []string{".spec.vpcRef.name", ".spec.networks[*].vpc", ".spec.backupVPC", ".spec.peers[*].vpc", ".spec.mirror.vpc"}

type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// pause is how long the benchmark waits before an operation it measures
// in isolation: longer than the API server's progress request period
// (100 ms). A consistent read of a type whose cache is behind etcd waits
// for the next progress notification, and the API server asks for one at
// once only when it has not asked for that type in the last 100 ms; right
// after another consistent read of the same type, it waits for the rest of
// the period.
const pause = 150 * time.Millisecond

// indexingResult is what the reference index costs the writes of
// dependents.
type indexingResult struct {
	// created VMs took createTook, eight at a time; the webhook spent sum
	// seconds over count index requests meanwhile.
	created    int
	createTook time.Duration
	sum, count float64
	// reindexed VMs were rewritten in reindexTook after the rules changed.
	reindexed   int
	reindexTook time.Duration
	// selfReindexed VMs were re-indexed by the webhook itself in
	// selfReindexTook, from the protected DELETE that found them.
	selfReindexed   int
	selfReindexTook time.Duration
}

func (r indexingResult) mean() time.Duration {
	if r.count == 0 {
		return 0
	}
	return time.Duration(r.sum / r.count * float64(time.Second))
}

type admissionRow struct {
	n, rules                       int
	floor, allowed, denied, listed latencies
	// allowedBackToBack is (b) again right after (b): its consistent read
	// comes within the progress request period of the previous one.
	allowedBackToBack latencies
	// inWebhook is the mean time the webhook itself spent on an allowed
	// delete, from its depctrl_webhook_decision_duration_seconds.
	inWebhook time.Duration
	// examined is the mean number of dependents the webhook read for an
	// allowed delete, from depctrl_webhook_dependents_examined_total: 0
	// when the reference index answers alone.
	examined float64
}

// TestBenchmark measures, against the real two-shard kcp with the runtime
// running as processes, what protection costs: the latency of DELETEs
// (unprotected, protected and allowed, denied) next to a plain LIST of the
// dependents, for growing numbers of dependents and of matching rules;
// how long a rule change takes to be enforced; how long the webhook takes
// to become ready with 1000 rules; and the runtime's peak memory. Every
// figure comes from this run, side by side, so machine noise cancels.
// It runs only with DEPCTRL_BENCH_OUT set: make bench.
func TestBenchmark(t *testing.T) {
	out := benchOnly(t, benchVariable, "run it with make bench")
	ctx := testContext(t, 90*time.Minute)
	e := env.ForTest(t, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t)
	bd, d := unthrottledDeletes(t, top, rt)
	consumer := bd.consumer
	vmAPI, vpcAPI := bd.vms, bd.vpcs

	rule := func(i int) {
		top.createRule(ctx, t, top.Compute, ruleObject(fmt.Sprintf("bench-%d", i), fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, benchPaths[i]))
		top.waitReady(ctx, t, top.Compute, fmt.Sprintf("bench-%d", i))
		top.waitCondition(ctx, t, top.Compute, fmt.Sprintf("bench-%d", i), v1alpha1.ConditionIndexed, "True", "Indexed")
	}
	var settled settleResults
	settled.writes = bd.measureWrites(ctx, t, func() { rule(0) })
	// The denied delete's blocker is listed last: the worst case. It is
	// also the probe that shows when writes are indexed under the current
	// rules.
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-target", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "zz-blocker", ref("vpc-target"), nil)
	stamp := waitStamp(ctx, t, vmAPI, "zz-blocker", "")
	// reindex rewrites every VM after the rules over VMs changed, as any
	// write by their owners would: until then deletions read them in
	// full.
	// indexing is what the reference index costs every create and update
	// of a dependent, from the webhook's own histogram.
	var idx indexingResult
	indexSeconds := func() (float64, float64) {
		sum, _ := strconv.ParseFloat(metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_index_duration_seconds_sum"), 64)
		count, _ := strconv.ParseFloat(metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_index_duration_seconds_count"), 64)
		return sum, count
	}
	reindex := func(n int) {
		stamp = waitStamp(ctx, t, vmAPI, "zz-blocker", stamp)
		start := time.Now()
		check.Must(t, inParallel(0, n, func(i int) error { return rewrite(ctx, vmAPI, fmt.Sprintf("vm-%05d", i), nil) }))
		took := time.Since(start)
		t.Logf("re-indexed %d VMs in %s", n, took.Round(time.Millisecond))
		if n > idx.reindexed {
			idx.reindexed, idx.reindexTook = n, took
		}
	}
	// selfReindex lets the webhook re-index the VMs after the rules
	// changed, as depctrl_shard's reindex does: one protected DELETE reads
	// them in full and hands them to the webhook's re-indexer.
	selfReindex := func(n int) {
		stamp = waitStamp(ctx, t, vmAPI, "zz-blocker", stamp)
		grantReindex(ctx, t, top, consumer)
		top.object(ctx, t, consumer, fixtures.VPCs, "reindex-trigger", map[string]interface{}{}, nil)
		start := time.Now()
		check.Must(t, vpcAPI.Delete(ctx, "reindex-trigger", metav1.DeleteOptions{}))
		waitAllStamped(ctx, t, vmAPI, stamp)
		idx.selfReindexed, idx.selfReindexTook = n, time.Since(start)
		t.Logf("the webhook re-indexed %d VMs in %s", n, idx.selfReindexTook.Round(time.Millisecond))
	}

	fresh := freshness(ctx, t, e, top, consumer)
	var rows []admissionRow
	// memByN is the webhook's peak memory after the scenarios up to each N.
	var memByN []string
	_, hookPid := rt.Pids()
	have := 0
	for _, n := range benchSizes {
		sum0, count0 := indexSeconds()
		start := time.Now()
		createVMs(ctx, t, vmAPI, have, n)
		idx.created, idx.createTook = idx.created+n-have, idx.createTook+time.Since(start)
		sum1, count1 := indexSeconds()
		idx.sum, idx.count = idx.sum+sum1-sum0, idx.count+count1-count0
		have = n
		for _, r := range benchRules {
			for i := 1; i < r; i++ {
				rule(i)
			}
			if r > 1 {
				reindex(n)
			}
			list := func() (time.Duration, error) {
				return timed(func() error {
					l, err := vmAPI.List(ctx, metav1.ListOptions{})
					if err == nil && len(l.Items) != n+1 {
						err = fmt.Errorf("listed %d VMs, want %d", len(l.Items), n+1)
					}
					return err
				})
			}
			trials := bd.trials(ctx, t, fmt.Sprintf("b-%d-%d", n, r), list, true)
			row := admissionRow{n: n, rules: r, inWebhook: meanInWebhook(trials), examined: meanRead(trials)}
			for _, x := range trials {
				row.floor, row.allowed = append(row.floor, x.floor), append(row.allowed, x.allowed)
				row.allowedBackToBack = append(row.allowedBackToBack, x.again)
				row.denied, row.listed = append(row.denied, x.denied), append(row.listed, x.listed)
			}
			t.Logf("N=%d rules=%d: floor %s, allowed %s (in the webhook %s, %.0f dependents read; back to back %s), denied %s, list %s (p50)", n, r,
				row.floor.pct(.5), row.allowed.pct(.5), row.inWebhook, row.examined, row.allowedBackToBack.pct(.5), row.denied.pct(.5), row.listed.pct(.5))
			rows = append(rows, row)
			if r == 1 {
				settled.rows = append(settled.rows, bd.settledTrials(ctx, t, n))
			}
			registered := metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_rules_registered")
			for i := 1; i < r; i++ {
				top.deleteRule(ctx, t, top.Compute, fmt.Sprintf("bench-%d", i))
			}
			// The stamp the re-index waits for is the one of the rules that
			// remain: until the webhook has let go of every deleted rule, a
			// write may be stamped for a set of rules on the way there.
			waitRegistered(ctx, t, rt.WebhookMetricsURL, registered, r-1)
			switch {
			case r > 1 && n == benchSizes[len(benchSizes)-1]:
				selfReindex(n)
			case r > 1:
				reindex(n)
			}
		}
		memByN = append(memByN, peakRSS(hookPid))
	}

	settled.teardown = bd.teardown(ctx, t, d)
	paging := pagingCost(ctx, t, e, top, consumer, have+1)
	concurrency := measureConcurrency(ctx, t, top)

	// Convergence is measured where it is slowest: from a consumer on
	// another shard than the protected workspace, which sees the webhook
	// configuration through the cache server.
	far := consumer
	for _, c := range top.Consumers {
		if c.Shard != top.Network.Shard {
			far = c
		}
	}
	conv := convergence(ctx, t, top, far)
	mem := map[string]string{"webhook": peakRSS(hookPid)}
	allReady, readyWith1000, rulesRegistered := readyWithManyRules(ctx, t, top, rt, 1000)
	_, hookPid = rt.Pids()
	mem["webhook-restarted"] = peakRSS(hookPid)
	many := deletesWithManyRules(ctx, t, bd, stamp)
	convMany := convergence(ctx, t, top, far)
	ctrlPid, hookPid := rt.Pids()
	mem["controller"], mem["webhook-many"] = peakRSS(ctrlPid), peakRSS(hookPid)

	// The Terraform scenario runs a runtime of its own for a dep-ctrl
	// workspace of its own. The runtime of the scenarios above would only
	// compete with it for the machine's two cores (its periodic runs and
	// verifications over 1001 rules and 10 001 dependents), which in a real
	// deployment run on other machines than kcp; kcp keeps their objects.
	rt.StopController(t)
	rt.StopWebhook(t)
	tfScale := terraformAtScale(ctx, t, e)
	sweep := measureSweep(ctx, t, e)
	churn := measureChurn(ctx, t, e)
	deferred := measureDeferred(ctx, t, e)
	page := benchmarkPage(benchResults{
		rows: rows, settled: settled, concurrency: concurrency, sweep: sweep, churn: churn, deferred: deferred, fresh: fresh, paging: paging, idx: idx, conv: conv, convMany: convMany, many: many,
		ready: readyWith1000, allReady: allReady, registered: rulesRegistered, mem: mem, memByN: memByN, tf: tfScale,
	})
	check.Must(t, os.MkdirAll(filepath.Join(out, "templates", "guides"), 0o755))
	check.Must(t, os.WriteFile(filepath.Join(out, "templates", "guides", "benchmarks.md.tmpl"), []byte(page), 0o644))
	check.Must(t, os.MkdirAll(filepath.Join(out, "bench"), 0o755))
	check.Must(t, plotAdmission(rows, filepath.Join(out, "bench", "admission.png")))
	t.Logf("wrote %s and %s", filepath.Join(out, "templates", "guides", "benchmarks.md.tmpl"), filepath.Join(out, "bench", "admission.png"))
}

// inParallel runs do for every i in [from, to), eight at a time, and
// returns the first error.
func inParallel(from, to int, do func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// createVMs creates VMs from..to-1 that reference no existing VPC.
func createVMs(ctx context.Context, t *testing.T, api dynamic.ResourceInterface, from, to int) {
	t.Helper()
	start := time.Now()
	check.Must(t, inParallel(from, to, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
			"metadata": map[string]interface{}{"name": fmt.Sprintf("vm-%05d", i)},
			"spec":     ref(fmt.Sprintf("elsewhere-%d", i)),
		}}
		_, err := api.Create(ctx, u, metav1.CreateOptions{})
		return err
	}))
	if to > from {
		t.Logf("created %d VMs in %s", to-from, time.Since(start).Round(time.Millisecond))
	}
}

type convergenceResult struct {
	create, edit, remove latencies
}

// worstP99 is the highest p99 of the three changes.
func (c convergenceResult) worstP99() time.Duration {
	return max(c.create.pct(.99), c.edit.pct(.99), c.remove.pct(.99))
}

// convergence measures, with dry-run deletes (which pass through admission
// but delete nothing), how long a rule change takes to be enforced.
func convergence(ctx context.Context, t *testing.T, top *Topology, consumer env.Workspace) convergenceResult {
	t.Helper()
	d := top.dynamicFor(t, consumer.Path)
	fw := d.Resource(fixtures.FirewallRules.GVR()).Namespace("apps")
	top.object(ctx, t, consumer, fixtures.FirewallRules, "fw-c", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.ManagedDBs, "db-c", map[string]interface{}{"firewalls": []interface{}{map[string]interface{}{"name": "fw-c"}}}, nil)
	dryDenied := func() bool {
		err := fw.Delete(ctx, "fw-c", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "still referenced by")
	}
	// waitFor polls until enforcement is as wanted and returns the time
	// since start.
	waitFor := func(start time.Time, want bool) time.Duration {
		for dryDenied() != want {
			if time.Since(start) > time.Minute {
				t.Fatalf("not converged after a minute (want denied=%v)", want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	// entryGone waits until the controller removed the webhook
	// configuration entry for FirewallRules, so that "rule created" always
	// measures a new entry: written by the controller, then picked up by
	// the consumer's shard through the cache server.
	entryGone := func() {
		check.Eventually(ctx, t, time.Minute, "the FirewallRules entry to be removed", func() error {
			if got := top.protectedResources(ctx, t, top.Network); slices.Contains(got, fixtures.FirewallRules.Resource) {
				return fmt.Errorf("still protects %v", got)
			}
			return nil
		})
		time.Sleep(time.Second) // and for the removal to reach the other shard
	}
	var res convergenceResult
	for i := range 10 {
		name := fmt.Sprintf("conv-%d", i)
		entryGone()
		start := time.Now()
		top.createRule(ctx, t, top.Compute, ruleObject(name, fixtures.ManagedDBs, fixtures.FirewallRules, top.Network.Path, ".spec.firewalls[*].name"))
		res.create = append(res.create, waitFor(start, true))
		// Edited to a path nothing uses: enforcement must stop.
		start = time.Now()
		editRulePath(ctx, t, top, name, ".spec.nothing")
		res.edit = append(res.edit, waitFor(start, false))
		top.deleteRule(ctx, t, top.Compute, name)
		// Enforced again by a second rule, then that rule deleted.
		again := name + "-again"
		top.createRule(ctx, t, top.Compute, ruleObject(again, fixtures.ManagedDBs, fixtures.FirewallRules, top.Network.Path, ".spec.firewalls[*].name"))
		waitFor(time.Now(), true)
		start = time.Now()
		top.deleteRule(ctx, t, top.Compute, again)
		res.remove = append(res.remove, waitFor(start, false))
	}
	t.Logf("convergence p50: create %s, edit %s, delete %s", res.create.pct(.5), res.edit.pct(.5), res.remove.pct(.5))
	return res
}

// readyWithManyRules creates n rules, measures how long the controller
// takes to report every one of them Ready and Indexed, and how long a
// restarted webhook then takes to report ready (its registry complete).
func readyWithManyRules(ctx context.Context, t *testing.T, top *Topology, rt *runtimetest.Runtime, n int) (allReady, webhookReady time.Duration, registered string) {
	t.Helper()
	rules := top.dynamicFor(t, top.Compute.Path).Resource(rulesGVR)
	created := time.Now()
	check.Must(t, inParallel(0, n, func(i int) error {
		r := ruleObject(fmt.Sprintf("many-%04d", i), fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, fmt.Sprintf(".spec.field%d", i))
		_, err := rules.Create(ctx, r, metav1.CreateOptions{})
		return err
	}))
	check.Eventually(ctx, t, 10*time.Minute, fmt.Sprintf("all %d rules to be Ready and Indexed", n), func() error {
		l, err := rules.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		waiting := 0
		for _, r := range l.Items {
			ready, _, _ := condition(&r, v1alpha1.ConditionReady)
			indexed, _, _ := condition(&r, v1alpha1.ConditionIndexed)
			if strings.HasPrefix(r.GetName(), "many-") && (ready != "True" || indexed != "True") {
				waiting++
			}
		}
		if waiting > 0 {
			return fmt.Errorf("%d rules are not Ready and Indexed yet", waiting)
		}
		return nil
	})
	allReady = time.Since(created)
	t.Logf("%d rules created at once were all Ready and Indexed after %s", n, allReady.Round(time.Millisecond))
	rt.StopWebhook(t)
	start := time.Now()
	rt.StartWebhookNoWait(t)
	for httpStatus(ctx, rt.WebhookReadyzURL) != 200 {
		if time.Since(start) > 5*time.Minute {
			t.Fatal("the webhook did not become ready with many rules")
		}
		time.Sleep(20 * time.Millisecond)
	}
	webhookReady = time.Since(start)
	registered = metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_rules_registered")
	t.Logf("webhook ready with %s rules registered after %s", registered, webhookReady)
	return allReady, webhookReady, registered
}

// peakRSS is a process's peak resident memory (VmHWM), as Linux reports it.
func peakRSS(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return strings.TrimSpace(v)
			}
			return fmt.Sprintf("%.0f MiB", float64(kb)/1024)
		}
	}
	return "unknown"
}

// freshnessResult compares LISTs of the dependents: consistent ones (what
// the webhook does) right after an unrelated write on the shard and with
// no write in between, and ones that accept any cached state.
type freshnessResult struct {
	afterWrite, afterWriteSettled, quiet, cached latencies
	// The same consistent LIST pause after a write, and a cached one,
	// sent straight to the consumer's shard instead of through the
	// front-proxy: what the front-proxy's hop adds to each read.
	shardSettled, shardCached latencies
}

// freshness measures what a consistent read costs when the API server's
// cache of the dependent type must first catch up with a write elsewhere
// on the shard, the case of every protected DELETE, which follows writes:
// right after another consistent read of the type, and pause after one.
func freshness(ctx context.Context, t *testing.T, e *env.Env, top *Topology, consumer env.Workspace) freshnessResult {
	t.Helper()
	d := top.dynamicFor(t, consumer.Path)
	vms := d.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps")
	fws := d.Resource(fixtures.FirewallRules.GVR()).Namespace("apps")
	direct, err := e.ShardAdminConfig(consumer.Shard, consumer.Cluster)
	check.Must(t, err)
	direct.QPS, direct.Burst, direct.RateLimiter = -1, 0, nil
	dd, err := dynamic.NewForConfig(direct)
	check.Must(t, err)
	shardVMs := dd.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps")
	var r freshnessResult
	listFrom := func(api dynamic.ResourceInterface, opts metav1.ListOptions) time.Duration {
		start := time.Now()
		_, err := api.List(ctx, opts)
		check.Must(t, err)
		return time.Since(start)
	}
	list := func(opts metav1.ListOptions) time.Duration { return listFrom(vms, opts) }
	for range 3 { // warm the connection to the shard
		listFrom(shardVMs, metav1.ListOptions{ResourceVersion: "0"})
	}
	for i := range benchTrials {
		name := fmt.Sprintf("fresh-%d", i)
		top.object(ctx, t, consumer, fixtures.FirewallRules, name, map[string]interface{}{}, nil)
		r.afterWrite = append(r.afterWrite, list(metav1.ListOptions{}))
		r.quiet = append(r.quiet, list(metav1.ListOptions{}))
		time.Sleep(pause)
		check.Must(t, fws.Delete(ctx, name, metav1.DeleteOptions{}))
		r.afterWriteSettled = append(r.afterWriteSettled, list(metav1.ListOptions{}))
		r.cached = append(r.cached, list(metav1.ListOptions{ResourceVersion: "0"}))
		top.object(ctx, t, consumer, fixtures.FirewallRules, name, map[string]interface{}{}, nil)
		time.Sleep(pause)
		check.Must(t, fws.Delete(ctx, name, metav1.DeleteOptions{}))
		r.shardSettled = append(r.shardSettled, listFrom(shardVMs, metav1.ListOptions{}))
		r.shardCached = append(r.shardCached, listFrom(shardVMs, metav1.ListOptions{ResourceVersion: "0"}))
	}
	t.Logf("consistent LIST after a write %s, %s after the last one %s, without a write %s; cached LIST %s; straight to the shard %s, cached %s (p50)",
		r.afterWrite.pct(.5), pause, r.afterWriteSettled.pct(.5), r.quiet.pct(.5), r.cached.pct(.5), r.shardSettled.pct(.5), r.shardCached.pct(.5))
	return r
}

// pagingResult is the webhook's own lookup among all the dependents, read
// in its default pages, in one response and in pages of pagedSize.
type pagingResult struct {
	dependents                       int
	defaultPages, oneResponse, paged latencies
}

const pagedSize = 2000

// pagingCost times the webhook's lookup (decision.FrontProxyFinder, as the
// webhook runs it) of an object nothing references, with each page size,
// each pause after the last read of the dependents and after a write, as
// the admission benchmark's (b).
func pagingCost(ctx context.Context, t *testing.T, e *env.Env, top *Topology, consumer env.Workspace, dependents int) pagingResult {
	t.Helper()
	base, err := e.AdminConfig("root")
	check.Must(t, err)
	base.Host = e.FrontProxyURL
	finder, err := decision.NewFrontProxyFinder(base)
	check.Must(t, err)
	protection := registry.Protection{Rule: "bench", Dependent: fixtures.VirtualMachines.GVR(), DependentKind: fixtures.VirtualMachines.Kind,
		Paths: []fieldpath.Path{fieldpath.MustParse(benchPaths[0])}}
	fws := top.objects(t, consumer, fixtures.FirewallRules)
	var r pagingResult
	for i := range 10 {
		for _, size := range []int64{decision.DefaultPageSize, 0, pagedSize} {
			name := fmt.Sprintf("paging-%d-%d", i, size)
			top.object(ctx, t, consumer, fixtures.FirewallRules, name, map[string]interface{}{}, nil)
			time.Sleep(pause)
			check.Must(t, fws.Delete(ctx, name, metav1.DeleteOptions{}))
			finder.PageSize = size
			start := time.Now()
			blockers, _, err := finder.FindBlockers(ctx, consumer.Cluster, "apps", fixtures.VPCs.GVR().GroupResource(), "nothing-references-this", protection, 10)
			took := time.Since(start)
			check.Must(t, err)
			if len(blockers) != 0 {
				t.Fatalf("lookup found %v, want nothing", blockers)
			}
			switch size {
			case 0:
				r.oneResponse = append(r.oneResponse, took)
			case pagedSize:
				r.paged = append(r.paged, took)
			default:
				r.defaultPages = append(r.defaultPages, took)
			}
		}
	}
	r.dependents = dependents
	t.Logf("lookup among %d dependents: pages of %d %s, one response %s, pages of %d %s (p50)", r.dependents,
		decision.DefaultPageSize, r.defaultPages.pct(.5), r.oneResponse.pct(.5), pagedSize, r.paged.pct(.5))
	return r
}

// waitRegistered waits until the webhook's registry holds removed rules
// fewer than before (the value of depctrl_webhook_rules_registered then).
func waitRegistered(ctx context.Context, t *testing.T, metricsURL, before string, removed int) {
	t.Helper()
	n, err := strconv.Atoi(before)
	check.Must(t, err)
	want := strconv.Itoa(n - removed)
	check.Eventually(ctx, t, time.Minute, "the webhook to hold "+want+" rules", func() error {
		if got := metricValue(ctx, t, metricsURL, "depctrl_webhook_rules_registered"); got != want {
			return fmt.Errorf("it holds %s", got)
		}
		return nil
	})
}
