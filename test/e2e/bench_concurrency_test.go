package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// Shape of the concurrency benchmark: each cell creates concurrencyCreates
// dependents, spread evenly over its writers.
var (
	concurrencyWriters = []int{1, 8, 32}
	concurrencyCreates = 1024
	// concurrencySpread is how many objects the references of the spread
	// scenario go to.
	concurrencySpread = 1000
)

// Targets of the concurrency benchmark, against the same writers creating
// dependents that reference nothing.
const (
	targetConcurrentThroughput = 0.8
	targetConcurrentP99        = 3.0
)

// The scenarios of the concurrency benchmark: what the created VMs
// reference.
const (
	scenarioNone   = "no reference"
	scenarioOne    = "all one VPC"
	scenarioSpread = "1 000 VPCs"
	// scenarioPatched creates VMs that reference nothing, each right after
	// the client's own PATCH of a VPC, timed with it: the least a design
	// pays that writes the object a create references once per such
	// create, as recording the reference on it does. No target applies.
	scenarioPatched = "no reference, a VPC patched first"
)

var concurrencyScenarios = []string{scenarioNone, scenarioOne, scenarioSpread, scenarioPatched}

// patchedVPCs is how many VPCs the patched scenario patches in turn, apart
// from those the others reference, so that no intent on them sends the
// patch to the webhook.
const patchedVPCs = 256

// patchedVPC names the i-th VPC the patched scenario patches.
func patchedVPC(i int) string { return fmt.Sprintf("patched-%03d", i%patchedVPCs) }

// concurrencyCell is one scenario with one number of writers.
type concurrencyCell struct {
	scenario string
	writers  int
	// creates took took in all; each create's latency is in latencies.
	creates   int
	took      time.Duration
	latencies latencies
	// refused creates, and the first refusal's message.
	refused      int
	firstRefusal string
}

func (c concurrencyCell) throughput() float64 { return float64(c.creates-c.refused) / c.took.Seconds() }

// concurrencyResults is what the concurrency benchmark measured.
type concurrencyResults struct {
	cells []concurrencyCell
}

// TestBenchmarkConcurrency measures, against the real two-shard kcp with
// the runtime as processes and settling on, many clients at once creating
// dependents: referencing nothing, all one object, or objects spread over
// many. It writes its section to the test log. Run it with make
// bench-concurrency; make bench measures the same in its one run.
func TestBenchmarkConcurrency(t *testing.T) {
	benchOnly(t, "DEPCTRL_BENCH_CONCURRENCY", "run it with make bench-concurrency")
	ctx := testContext(t, 30*time.Minute)
	top, rt := install(ctx, t, env.ForTest(t, env.TwoShards))
	rt.EnableSettling(ctx, t)
	top.createRule(ctx, t, top.Compute, ruleObject("bench-0", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, benchPaths[0]))
	top.waitReady(ctx, t, top.Compute, "bench-0")
	top.waitCondition(ctx, t, top.Compute, "bench-0", v1alpha1.ConditionIndexed, "True", "Indexed")
	res := measureConcurrency(ctx, t, top)
	t.Log("\n" + res.section())
}

// measureConcurrency runs every scenario with every number of writers, in
// a consumer workspace of its own, the writers interleaved so that each
// cell finds the servers in the same state as its neighbours.
func measureConcurrency(ctx context.Context, t *testing.T, top *Topology) concurrencyResults {
	t.Helper()
	ws := top.newConsumer(ctx, t, "e2e-concurrency")
	vpcs := unthrottled(t, top, ws).Resource(fixtures.VPCs.GVR()).Namespace("apps")
	check.Must(t, inParallel(0, concurrencySpread+1+patchedVPCs, func(i int) error {
		name := fmt.Sprintf("vpc-%04d", i)
		switch {
		case i == concurrencySpread:
			name = "hot"
		case i > concurrencySpread:
			name = patchedVPC(i - concurrencySpread - 1)
		}
		_, err := vpcs.Create(ctx, vpcObject(name), metav1.CreateOptions{})
		return err
	}))
	var res concurrencyResults
	for _, w := range concurrencyWriters {
		for _, s := range concurrencyScenarios {
			c := concurrentCreates(ctx, t, top, ws, s, w)
			t.Logf("%s, %d writers: %.1f creates/s, p50 %s, p99 %s, %d refused", s, w, c.throughput(),
				c.latencies.pct(.5).Round(time.Millisecond), c.latencies.pct(.99).Round(time.Millisecond), c.refused)
			res.cells = append(res.cells, c)
		}
	}
	return res
}

// concurrentCreates has writers clients, each with a connection of its
// own, create concurrencyCreates VMs between them as fast as they can.
func concurrentCreates(ctx context.Context, t *testing.T, top *Topology, ws env.Workspace, scenario string, writers int) concurrencyCell {
	t.Helper()
	clients := make([]dynamic.ResourceInterface, writers)
	vpcs := make([]dynamic.ResourceInterface, writers)
	for i := range clients {
		d := unthrottled(t, top, ws)
		clients[i] = d.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps")
		vpcs[i] = d.Resource(fixtures.VPCs.GVR()).Namespace("apps")
	}
	cell := concurrencyCell{scenario: scenario, writers: writers, creates: concurrencyCreates}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < concurrencyCreates; i += writers {
				spec := map[string]interface{}{"cpu": 1}
				switch scenario {
				case scenarioOne:
					spec = ref("hot")
				case scenarioSpread:
					spec = ref(fmt.Sprintf("vpc-%04d", i%concurrencySpread))
				}
				u := &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
					"metadata": map[string]interface{}{"name": fmt.Sprintf("w%02d-%s-%04d", writers, slug(scenario), i)},
					"spec":     spec,
				}}
				began := time.Now()
				var err error
				if scenario == scenarioPatched {
					patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench.depctrl.test/patched":%q}}}`, u.GetName())
					_, err = vpcs[w].Patch(ctx, patchedVPC(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				}
				if err == nil {
					_, err = clients[w].Create(ctx, u, metav1.CreateOptions{})
				}
				took := time.Since(began)
				mu.Lock()
				cell.latencies = append(cell.latencies, took)
				if err != nil {
					if cell.refused == 0 {
						cell.firstRefusal = err.Error()
					}
					cell.refused++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	cell.took = time.Since(start)
	return cell
}

// slug is the scenario as part of an object's name.
func slug(scenario string) string {
	return strings.ToLower(strings.NewReplacer(" ", "-", ",", "").Replace(strings.ReplaceAll(scenario, "1 000", "1000")))
}

// unthrottled is an admin client of ws with a connection of its own and no
// client-side rate limit: what the benchmark measures is the servers.
func unthrottled(t *testing.T, top *Topology, ws env.Workspace) dynamic.Interface {
	t.Helper()
	cfg := top.admin(t, ws.Path)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	// A dial function of its own keeps client-go from sharing one
	// connection between clients of the same configuration.
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	d, err := dynamic.NewForConfig(cfg)
	check.Must(t, err)
	return d
}

// thousands writes n with a space between thousands, as the page does.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// concurrencyView is the section's figures.
type concurrencyView struct {
	Creates  int
	Spread   string
	Patched  string
	Rows     []concurrencyRowView
	Targets  []concurrencyTargetView
	Refusals []string
}

type concurrencyRowView struct {
	Scenario                string
	Writers                 int
	Throughput, P50, P99    string
	Refused                 int
	ThroughputVsNone, P99Vs string
}

type concurrencyTargetView struct {
	Scenario                  string
	Writers                   int
	Throughput, P99, Refusals string
}

// view computes the section's figures: each scenario next to the same
// writers creating dependents that reference nothing.
func (r concurrencyResults) view() concurrencyView {
	v := concurrencyView{Creates: concurrencyCreates, Spread: thousands(concurrencySpread), Patched: scenarioPatched}
	none := map[int]concurrencyCell{}
	for _, c := range r.cells {
		if c.scenario == scenarioNone {
			none[c.writers] = c
		}
	}
	for _, c := range r.cells {
		base := none[c.writers]
		row := concurrencyRowView{Scenario: c.scenario, Writers: c.writers, Throughput: fmt.Sprintf("%.1f", c.throughput()),
			P50: ms(c.latencies.pct(.5)), P99: ms(c.latencies.pct(.99)), Refused: c.refused}
		if c.scenario != scenarioNone {
			tp, p99 := c.throughput()/base.throughput(), ratio(c.latencies.pct(.99), base.latencies.pct(.99))
			row.ThroughputVsNone, row.P99Vs = f2(tp), f2(p99)
			// The floor is measured for comparison: no target applies.
			if c.scenario != scenarioPatched {
				refusals := "0 (target 0: met)"
				if c.refused > 0 {
					refusals = fmt.Sprintf("%d (target 0: **missed**)", c.refused)
					v.Refusals = append(v.Refusals, fmt.Sprintf("%s, %d writers: %s", c.scenario, c.writers, c.firstRefusal))
				}
				v.Targets = append(v.Targets, concurrencyTargetView{Scenario: c.scenario, Writers: c.writers,
					Throughput: verdict(tp, targetConcurrentThroughput, false), P99: verdict(p99, targetConcurrentP99, true), Refusals: refusals})
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// section renders the section alone, as make bench-concurrency logs it.
func (r concurrencyResults) section() string {
	var b strings.Builder
	if err := template.Must(template.ParseFS(benchmarkTemplates, "concurrency.md.gotmpl")).ExecuteTemplate(&b, "concurrency", r.view()); err != nil {
		panic(fmt.Sprintf("rendering the concurrency section: %v", err))
	}
	return b.String()
}
