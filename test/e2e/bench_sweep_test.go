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

	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// Shape of the sweep benchmark: sweepObjects VPCs with an annotation of
// sweepAnnotation bytes each in one namespace, and sweepQuiet VPCs in a
// namespace of another workspace where nothing else happens; all created
// before their rule, so that no request shows the webhook where they are.
var (
	sweepObjects    = 100000
	sweepAnnotation = 2048
	sweepQuiet      = 10
)

// Targets of the sweep benchmark.
const (
	// targetQuietSettled: every unreferenced object settled this long
	// after its stamp is published.
	targetQuietSettled = 2 * time.Minute
	// targetSweepMiB: the webhook's peak while it sweeps sweepObjects.
	targetSweepMiB = 150
)

// sweepResult is what the sweep benchmark measured.
type sweepResult struct {
	objects, annotation, quiet int
	// created is how long creating the objects took.
	created time.Duration
	// quietSettled and allSettled are how long after the stamp was
	// published the quiet objects, and all the objects, were settled.
	quietSettled, allSettled time.Duration
	// walked is the workspaces the webhook's walks reached.
	walked float64
	// peak is the webhook's peak RSS, from its start to the last label.
	peak string
}

// TestBenchmarkSweep measures the settler's sweep over what exists, on a
// two-shard kcp of its own: objects no request showed the webhook, found
// by its walk of the workspaces, and the webhook's peak memory while it
// settles sweepObjects objects with large annotations in one namespace. Run
// it with make bench-sweep (DEPCTRL_BENCH_SWEEP=N sets the number of
// objects).
func TestBenchmarkSweep(t *testing.T) {
	if n, err := strconv.Atoi(benchOnly(t, "DEPCTRL_BENCH_SWEEP", "run it with make bench-sweep")); err == nil && n > 0 {
		sweepObjects = n
	}
	ctx := testContext(t, 90*time.Minute)
	res := measureSweep(ctx, t, env.ForTest(t, env.TwoShards))
	t.Log("\n" + res.section())
}

// measureSweep installs a topology and runtime of their own on e, so that
// the webhook's peak is the sweep's, creates the objects before their rule,
// then installs it and waits until every object is settled.
func measureSweep(ctx context.Context, t *testing.T, e *env.Env) sweepResult {
	t.Helper()
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-walk-rate", strconv.Itoa(decision.DefaultWalkRate))
	defer func() {
		rt.StopController(t)
		rt.StopWebhook(t)
	}()
	res := sweepResult{objects: sweepObjects, annotation: sweepAnnotation, quiet: sweepQuiet}
	big, quiet := top.Consumers[0], top.Consumers[len(top.Consumers)-1]
	for _, c := range []env.Workspace{big, quiet} {
		apply(ctx, t, top.admin(t, c.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sweep\n")
	}
	bigVPCs := unthrottled(t, top, big).Resource(fixtures.VPCs.GVR()).Namespace("sweep")
	quietVPCs := unthrottled(t, top, quiet).Resource(fixtures.VPCs.GVR()).Namespace("sweep")
	payload := strings.Repeat("x", sweepAnnotation)
	start := time.Now()
	check.Must(t, inParallel(0, sweepObjects, func(i int) error {
		u := vpcObject(fmt.Sprintf("vpc-%06d", i))
		u.SetAnnotations(map[string]string{"bench.depctrl.io/payload": payload})
		_, err := bigVPCs.Create(ctx, u, metav1.CreateOptions{})
		return err
	}))
	res.created = time.Since(start)
	t.Logf("created %d VPCs with %d-byte annotations in %s", sweepObjects, sweepAnnotation, res.created.Round(time.Second))
	check.Must(t, inParallel(0, sweepQuiet, func(i int) error {
		_, err := quietVPCs.Create(ctx, vpcObject(fmt.Sprintf("quiet-%02d", i)), metav1.CreateOptions{})
		return err
	}))

	top.protectVPCs(ctx, t)
	published := top.waitPublished(ctx, t)
	stamp := top.publishedStamp(ctx, t, fixtures.VPCs)
	res.quietSettled = waitCountSettled(ctx, t, quietVPCs, stamp, sweepQuiet, published)
	t.Logf("%d quiet VPCs settled %s after the stamp was published", sweepQuiet, res.quietSettled.Round(time.Second))
	res.allSettled = waitCountSettled(ctx, t, bigVPCs, stamp, sweepObjects, published)
	t.Logf("%d VPCs settled %s after the stamp was published", sweepObjects, res.allSettled.Round(time.Second))
	_, hookPid := rt.Pids()
	res.peak = peakRSS(hookPid)
	res.walked, _ = strconv.ParseFloat(metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_settle_workspaces_walked_total"), 64)
	return res
}

// waitCountSettled waits until want objects of api carry the settled label
// with stamp, counting them a metadata page at a time, and returns how long
// after since that was.
func waitCountSettled(ctx context.Context, t *testing.T, api dynamic.ResourceInterface, stamp string, want int, since time.Time) time.Duration {
	t.Helper()
	check.Eventually(ctx, t, 60*time.Minute, fmt.Sprintf("%d VPCs settled", want), func() error {
		have, cont := 0, ""
		for {
			l, err := api.List(ctx, metav1.ListOptions{LabelSelector: settle.SettledLabel + "=" + stamp, Limit: 5000, Continue: cont})
			if err != nil {
				return err
			}
			have += len(l.Items)
			if cont = l.GetContinue(); cont == "" {
				break
			}
		}
		if have < want {
			return fmt.Errorf("%d of %d settled", have, want)
		}
		return nil
	})
	return time.Since(since)
}

// sweepView is what the sweep section (sweep.md.gotmpl) shows.
type sweepView struct {
	Objects, Annotation, Quiet        int
	Created, QuietSettled, AllSettled string
	QuietTarget, QuietVerdict         string
	Peak, PeakTarget, PeakVerdict     string
	Walked                            string
	PerObject                         string
}

func (res sweepResult) view() sweepView {
	v := sweepView{Objects: res.objects, Annotation: res.annotation, Quiet: res.quiet,
		Created: res.created.Round(time.Second).String(), QuietSettled: res.quietSettled.Round(time.Second).String(),
		AllSettled: res.allSettled.Round(time.Second).String(), QuietTarget: targetQuietSettled.String(),
		Peak: res.peak, PeakTarget: fmt.Sprintf("%d MiB", targetSweepMiB), Walked: fmt.Sprintf("%.0f", res.walked)}
	v.QuietVerdict = "met"
	if res.quietSettled > targetQuietSettled {
		v.QuietVerdict = fmt.Sprintf("**missed** by %s", (res.quietSettled - targetQuietSettled).Round(time.Second))
	}
	switch peak, ok := mib(res.peak); {
	case !ok:
		v.PeakVerdict = "not measured"
	case peak > targetSweepMiB:
		v.PeakVerdict = fmt.Sprintf("**missed** by %.0f MiB", peak-targetSweepMiB)
	default:
		v.PeakVerdict = "met"
	}
	if res.objects > 0 {
		v.PerObject = (res.allSettled / time.Duration(res.objects)).Round(time.Microsecond).String()
	}
	return v
}

// section renders the results as the benchmark page's section.
func (res sweepResult) section() string {
	var b strings.Builder
	if err := benchmarkPageTemplate.ExecuteTemplate(&b, "sweep", res.view()); err != nil {
		panic(fmt.Sprintf("rendering the sweep section: %v", err))
	}
	return b.String()
}
