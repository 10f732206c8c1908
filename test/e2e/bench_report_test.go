package e2e

import (
	"embed"
	"fmt"
	"image/color"
	"math"
	"runtime"
	"strings"
	"text/template"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Targets of the admission benchmark.
const (
	targetDeniedVsFloor10000 = 3.0
	targetListVsAllowed10000 = 3.0
	targetConvergenceP99     = 2 * time.Second
	targetReady1000          = 5 * time.Second
	targetTerraformApply     = time.Minute
	targetTerraformPlan      = 10 * time.Second
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// verdict says whether a measured value meets its target, and by how much
// it misses. A miss too small for two decimals is shown with a third, so
// that it never reads as the target itself missed by 0%.
func verdict(got, target float64, lowerIsBetter bool) string {
	if (lowerIsBetter && got <= target) || (!lowerIsBetter && got >= target) {
		return fmt.Sprintf("%.2f (target %.2f: met)", got, target)
	}
	shown, by := fmt.Sprintf("%.2f", got), math.Abs(got/target-1)*100
	if shown == fmt.Sprintf("%.2f", target) {
		shown = fmt.Sprintf("%.3f", got)
	}
	missed := fmt.Sprintf("%.0f%%", by)
	if by < 1 {
		missed = fmt.Sprintf("%.1f%%", by)
	}
	return fmt.Sprintf("%s (target %.2f: **missed** by %s)", shown, target, missed)
}

// met compares a duration with its target.
func met(got, target time.Duration) string {
	if got <= target {
		return fmt.Sprintf("met: %s ≤ %s", got.Round(time.Millisecond), target)
	}
	return fmt.Sprintf("**missed** by %s: %s > %s", (got - target).Round(time.Millisecond), got.Round(time.Millisecond), target)
}

// benchResults is everything one run of the benchmark measured.
type benchResults struct {
	rows    []admissionRow
	settled settleResults
	// concurrency is many writers at once (measureConcurrency).
	concurrency concurrencyResults
	// sweep is settling what exists (measureSweep).
	sweep sweepResult
	// churn is rule churn (measureChurn).
	churn churnResult
	// deferred is a tenant's teardown with deferred deletion
	// (measureDeferred).
	deferred deferredResult
	fresh    freshnessResult
	paging   pagingResult
	idx      indexingResult
	// conv is measured with the handful of rules of the admission
	// scenarios, convMany with the 1000+ of readyWithManyRules as well.
	conv, convMany convergenceResult
	many           manyRulesResult
	ready          time.Duration
	// allReady is how long 1000 rules created at once took to be all
	// Ready and Indexed.
	allReady   time.Duration
	registered string
	// mem is each process's peak RSS at the end of a stage; memByN the
	// webhook's after the admission scenarios up to each of benchSizes.
	mem    map[string]string
	memByN []string
	tf     terraformScale
}

// benchRun is where and when the benchmark ran, as the page says.
type benchRun struct {
	cpus         int
	goos, goarch string
	date         time.Time
}

// thisRun is this machine, today.
func thisRun() benchRun {
	return benchRun{cpus: runtime.NumCPU(), goos: runtime.GOOS, goarch: runtime.GOARCH, date: time.Now()}
}

// benchmarkPage renders the page for a run on this machine, today.
func benchmarkPage(res benchResults) string { return renderBenchmarkPage(res, thisRun()) }

// benchmarkTemplates are the page's prose and layout, and its settled
// section's (the "settled" template); Go only computes the figures they
// show (benchmarkView, settleResults.view).
//
//go:embed benchmarks.md.gotmpl settled.md.gotmpl concurrency.md.gotmpl sweep.md.gotmpl churn.md.gotmpl deferred.md.gotmpl
var benchmarkTemplates embed.FS

// benchmarkPageTemplate is the page; it holds "settled", "sweep", "churn", "deferred" and "concurrency" too.
var benchmarkPageTemplate = template.Must(template.ParseFS(benchmarkTemplates, "benchmarks.md.gotmpl", "settled.md.gotmpl", "concurrency.md.gotmpl", "sweep.md.gotmpl", "churn.md.gotmpl", "deferred.md.gotmpl"))

// renderBenchmarkPage renders the page; run is a parameter so that a test
// can fix it. The template is checked by TestBenchmarkPage, so an error
// executing it is a bug.
func renderBenchmarkPage(res benchResults, run benchRun) string {
	var b strings.Builder
	if err := benchmarkPageTemplate.Execute(&b, benchmarkView(res, run)); err != nil {
		panic(fmt.Sprintf("rendering the benchmarks page: %v", err))
	}
	return b.String()
}

// pageView is what the page's template shows, every figure formatted.
// Durations are strings: "ms" ones in milliseconds without the unit, the
// others as time.Duration prints them (or secs).
type pageView struct {
	CPUs        int
	OS, Arch    string
	Date        string
	Pause       string
	Trials      int
	Registered  string
	Propagation string
	Admission   []admissionView
	Targets     []targetView
	Decided     decidedView
	Many        manyView
	// Settled is the settled-objects section's (make bench-settled
	// logs it alone).
	Settled settledView
	// Concurrency is the many-writers section's (make
	// bench-concurrency logs it alone).
	Concurrency concurrencyView
	// Sweep is the settling-what-exists section's (make bench-sweep
	// logs it alone).
	Sweep sweepView
	// Churn is the rule churn section's (make bench-churn logs it alone).
	Churn ruleChurnView
	// Deferred is the deferred deletion section's (make bench-deferred
	// logs it alone).
	Deferred     deferredView
	Convergence  []convergenceView
	ReadyMs      string
	ReadyVerdict string
	AllReady     string
	QPS          string
	Memory       memoryView
	Terraform    terraformView
	Growth       growthView
	// Model is the scale model, derived from the figures above.
	Model modelView
}

// admissionView is one row of the admission table: latencies as
// "p50 / p95 / p99", ratios of p50s.
type admissionView struct {
	N, Rules                          int
	Floor, Allowed, InWebhookMs, Read string
	BackToBack, Denied, Listed        string
	AllowedVsFloor, BackToBackVsFloor string
	DeniedVsFloor, AllowedVsListed    string
}

// targetView judges the one-rule row at 10 000 dependents.
type targetView struct {
	DeniedVsFloor, ListedVsAllowed    string
	AllowedVsFloor, BackToBackVsFloor string
}

// decidedView holds the figures of how an allowed delete is decided.
type decidedView struct {
	Constant, BackToBack, FirstInWebhook         string
	FreshTrials                                  int
	AfterWriteMs, AfterWriteSettledMs, QuietMs   string
	CachedMs, ShardSettledMs, ShardCachedMs, Hop string
	PerDependent                                 string
	FirstInWebhookMs, InWebhook10000Ms           string
	InWebhook10000FiveMs                         string
	PagingDependents                             int
	DefaultPagesMs, OneResponseMs, PagedMs       string
	DefaultPageSize, PagedSize, PagingTrials     int
	Reindexed, SelfReindexed, ReindexWorkers     int
	ReindexTook, SelfReindexTook                 string
	IndexMean                                    string
	Created                                      int
	CreateTook                                   string
	HalfFloor1000, AllowedVsFloorStraight1000    string
}

// manyView is the deletes with the rules of the readiness measurement.
type manyView struct {
	Dependents, Trials              int
	FirstRead, FirstMs, ReindexTook string
	Floor, Allowed, InWebhookMs     string
	Read, Denied                    string
	AllowedVsFloor, DeniedVsFloor   string
}

// convergenceView is one change of the convergence table.
type convergenceView struct {
	Change               string
	P50Ms, P99Ms         string
	ManyP50Ms, ManyP99Ms string
	Verdict              string
}

// memoryView is each process's peak RSS.
type memoryView struct {
	Controller, Webhook, WebhookRestarted, WebhookMany string
	Dependents                                         int
	ByN                                                []memAtN
}

// memAtN is the webhook's peak after the admission scenarios up to N.
type memAtN struct {
	N   int
	Mem string
}

// terraformView is the Terraform benchmark.
type terraformView struct {
	Rules, Workspaces, Shards    int
	BaseResources, RuleResources int
	ApplyBase, ApplyRules, Apply string
	ApplyVerdict                 string
	Plan, PlanVerdict, Destroy   string
}

// growthView holds the figures of how each cost grows.
type growthView struct {
	AllowedFromMs, AllowedToMs, AllowedPerDependent string
	DeniedFromMs, DeniedToMs                        string
	InWebhookMs, InWebhookFiveMs, InWebhookManyMs   string
	ListedPerDependent                              string
	UnindexedMs                                     string
	UnindexedDependents                             int
	ManyFirstMs                                     string
	ConvWorstMs, ConvManyWorstMs                    string
	ReadyMs                                         string
	WebhookByN                                      string
}

// p50to99 is a latency column of the admission tables.
func p50to99(l latencies) string {
	return ms(l.pct(.5)) + " / " + ms(l.pct(.95)) + " / " + ms(l.pct(.99))
}

// f2 is a ratio as the page prints it.
func f2(x float64) string { return fmt.Sprintf("%.2f", x) }

// benchmarkView computes every figure of the page.
func benchmarkView(res benchResults, run benchRun) pageView {
	fresh, paging, idx, many, tf := res.fresh, res.paging, res.idx, res.many, res.tf
	v := pageView{
		CPUs: run.cpus, OS: run.goos, Arch: run.goarch, Date: run.date.UTC().Format("2006-01-02"),
		Pause: pause.String(), Trials: benchTrials, Registered: res.registered,
		Propagation: controller.DefaultPropagation.String(),
		Settled:     res.settled.view(),
		Concurrency: res.concurrency.view(),
		Sweep:       res.sweep.view(),
		Churn:       res.churn.view(),
		Deferred:    res.deferred.view(),
	}
	for _, r := range res.rows {
		v.Admission = append(v.Admission, admissionView{
			N: r.n, Rules: r.rules,
			Floor: p50to99(r.floor), Allowed: p50to99(r.allowed), InWebhookMs: ms(r.inWebhook), Read: fmt.Sprintf("%.0f", r.examined),
			BackToBack: p50to99(r.allowedBackToBack), Denied: p50to99(r.denied), Listed: p50to99(r.listed),
			AllowedVsFloor: f2(ratio(r.allowed.pct(.5), r.floor.pct(.5))), BackToBackVsFloor: f2(ratio(r.allowedBackToBack.pct(.5), r.floor.pct(.5))),
			DeniedVsFloor: f2(ratio(r.denied.pct(.5), r.floor.pct(.5))), AllowedVsListed: f2(ratio(r.allowed.pct(.5), r.listed.pct(.5))),
		})
		if r.rules == 1 && r.n == 10000 {
			v.Targets = append(v.Targets, targetView{
				DeniedVsFloor:     verdict(ratio(r.denied.pct(.5), r.floor.pct(.5)), targetDeniedVsFloor10000, true),
				ListedVsAllowed:   verdict(ratio(r.listed.pct(.5), r.allowed.pct(.5)), targetListVsAllowed10000, false),
				AllowedVsFloor:    f2(ratio(r.allowed.pct(.5), r.floor.pct(.5))),
				BackToBackVsFloor: f2(ratio(r.allowedBackToBack.pct(.5), r.floor.pct(.5))),
			})
		}
	}
	var first, at1000, at10000, at10000five admissionRow
	for _, r := range res.rows {
		switch {
		case r.n == 0 && r.rules == 1:
			first = r
		case r.n == 1000 && r.rules == 1:
			at1000 = r
		case r.n == 10000 && r.rules == 1:
			at10000 = r
		case r.n == 10000 && r.rules == 5:
			at10000five = r
		}
	}
	// hop is what the front-proxy adds to a consistent read of the
	// dependents; the webhook's two reads run concurrently, so a decision
	// pays it about once.
	hop := max(fresh.afterWriteSettled.pct(.5)-fresh.shardSettled.pct(.5), 0)
	perDependent := time.Duration(0)
	if at10000.n > 0 {
		perDependent = (at10000.inWebhook - first.inWebhook) / time.Duration(2*at10000.n)
	}
	v.Decided = decidedView{
		Constant:            (first.allowed.pct(.5) - first.floor.pct(.5)).Round(100 * time.Microsecond).String(),
		BackToBack:          (first.allowedBackToBack.pct(.5) - first.floor.pct(.5)).Round(100 * time.Microsecond).String(),
		FirstInWebhook:      first.inWebhook.Round(100 * time.Microsecond).String(),
		FreshTrials:         len(fresh.afterWrite),
		AfterWriteMs:        ms(fresh.afterWrite.pct(.5)),
		AfterWriteSettledMs: ms(fresh.afterWriteSettled.pct(.5)),
		QuietMs:             ms(fresh.quiet.pct(.5)),
		CachedMs:            ms(fresh.cached.pct(.5)),
		ShardSettledMs:      ms(fresh.shardSettled.pct(.5)),
		ShardCachedMs:       ms(fresh.shardCached.pct(.5)),
		Hop:                 hop.Round(100 * time.Microsecond).String(),
		PerDependent:        perDependent.Round(time.Nanosecond).String(),
		FirstInWebhookMs:    ms(first.inWebhook), InWebhook10000Ms: ms(at10000.inWebhook), InWebhook10000FiveMs: ms(at10000five.inWebhook),
		PagingDependents: paging.dependents,
		DefaultPagesMs:   ms(paging.defaultPages.pct(.5)), OneResponseMs: ms(paging.oneResponse.pct(.5)), PagedMs: ms(paging.paged.pct(.5)),
		DefaultPageSize: decision.DefaultPageSize, PagedSize: pagedSize, PagingTrials: len(paging.paged),
		Reindexed: idx.reindexed, ReindexTook: idx.reindexTook.Round(time.Second).String(),
		SelfReindexed: idx.selfReindexed, ReindexWorkers: index.DefaultReindexWorkers, SelfReindexTook: idx.selfReindexTook.Round(time.Second).String(),
		IndexMean: idx.mean().Round(10 * time.Microsecond).String(),
		Created:   idx.created, CreateTook: idx.createTook.Round(100 * time.Millisecond).String(),
		HalfFloor1000:              (at1000.floor.pct(.5) / 2).Round(100 * time.Microsecond).String(),
		AllowedVsFloorStraight1000: f2(ratio(at1000.allowed.pct(.5)-hop, at1000.floor.pct(.5))),
	}
	v.Many = manyView{
		Dependents: many.dependents, Trials: len(many.allowed),
		FirstRead: fmt.Sprintf("%.0f", many.firstRead), FirstMs: ms(many.first), ReindexTook: many.reindexTook.Round(time.Second).String(),
		Floor: p50to99(many.floor), Allowed: p50to99(many.allowed), InWebhookMs: ms(many.inWebhook),
		Read: fmt.Sprintf("%.0f", many.examined), Denied: p50to99(many.denied),
		AllowedVsFloor: f2(ratio(many.allowed.pct(.5), many.floor.pct(.5))), DeniedVsFloor: f2(ratio(many.denied.pct(.5), many.floor.pct(.5))),
	}
	for _, c := range []struct {
		name       string
		l, atScale latencies
	}{{"rule created", res.conv.create, res.convMany.create}, {"field path edited", res.conv.edit, res.convMany.edit}, {"rule deleted", res.conv.remove, res.convMany.remove}} {
		v.Convergence = append(v.Convergence, convergenceView{
			Change: c.name, P50Ms: ms(c.l.pct(.5)), P99Ms: ms(c.l.pct(.99)), ManyP50Ms: ms(c.atScale.pct(.5)), ManyP99Ms: ms(c.atScale.pct(.99)),
			Verdict: met(max(c.l.pct(.99), c.atScale.pct(.99)), targetConvergenceP99),
		})
	}
	v.ReadyMs, v.ReadyVerdict = ms(res.ready), met(res.ready, targetReady1000)
	v.AllReady, v.QPS = secs(res.allReady), fmt.Sprintf("%g", process.DefaultRateLimit.QPS)
	v.Memory = memoryView{
		Controller: res.mem["controller"], Webhook: res.mem["webhook"], WebhookRestarted: res.mem["webhook-restarted"], WebhookMany: res.mem["webhook-many"],
		Dependents: many.dependents,
	}
	for i, n := range benchSizes {
		if i < len(res.memByN) {
			v.Memory.ByN = append(v.Memory.ByN, memAtN{N: n, Mem: res.memByN[i]})
		}
	}
	v.Terraform = terraformView{
		Rules: tfBenchRules, Workspaces: tfBenchWorkspaces, Shards: tf.shards, BaseResources: tf.baseResources, RuleResources: tf.ruleResources,
		ApplyBase: secs(tf.applyBase), ApplyRules: secs(tf.applyRules), Apply: secs(tf.applyBase + tf.applyRules),
		ApplyVerdict: met(tf.applyBase+tf.applyRules, targetTerraformApply),
		Plan:         secs(tf.plan), PlanVerdict: met(tf.plan, targetTerraformPlan), Destroy: secs(tf.destroy),
	}
	v.Growth = growth(res, first, at10000, at10000five)
	v.Model = scaleModel(res, run)
	return v
}

// growth computes how each cost grows with the number of dependents and of
// rules, from the sizes measured.
func growth(res benchResults, first, at10000, at10000five admissionRow) growthView {
	perDependent := func(from, to time.Duration) string {
		if at10000.n == 0 {
			return "unknown"
		}
		return ((to - from) / time.Duration(at10000.n)).Round(time.Nanosecond).String()
	}
	mem := "unknown"
	if len(res.memByN) == len(benchSizes) {
		mem = res.memByN[0] + " after N = 0 to " + res.memByN[len(res.memByN)-1] + " after N = " + fmt.Sprint(benchSizes[len(benchSizes)-1])
	}
	return growthView{
		AllowedFromMs: ms(first.allowed.pct(.5)), AllowedToMs: ms(at10000.allowed.pct(.5)),
		AllowedPerDependent: perDependent(first.allowed.pct(.5), at10000.allowed.pct(.5)),
		DeniedFromMs:        ms(first.denied.pct(.5)), DeniedToMs: ms(at10000.denied.pct(.5)),
		InWebhookMs: ms(at10000.inWebhook), InWebhookFiveMs: ms(at10000five.inWebhook), InWebhookManyMs: ms(res.many.inWebhook),
		ListedPerDependent: perDependent(first.listed.pct(.5), at10000.listed.pct(.5)),
		UnindexedMs:        ms(res.paging.defaultPages.pct(.5)), UnindexedDependents: res.paging.dependents,
		ManyFirstMs: ms(res.many.first),
		ConvWorstMs: ms(res.conv.worstP99()), ConvManyWorstMs: ms(res.convMany.worstP99()),
		ReadyMs:    ms(res.ready),
		WebhookByN: mem,
	}
}

// plotAdmission draws p50 latency against the number of dependents.
func plotAdmission(rows []admissionRow, file string) error {
	p := plot.New()
	p.Title.Text = "DELETE latency (p50) by number of dependents"
	p.X.Label.Text = "dependents in the namespace (log scale; 0 drawn at 10)"
	p.Y.Label.Text = "milliseconds (log scale)"
	p.Y.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, v := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000} {
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprint(v)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	series := []struct {
		name  string
		pick  func(admissionRow) latencies
		color color.RGBA
	}{
		{"(a) unprotected", func(r admissionRow) latencies { return r.floor }, color.RGBA{R: 120, G: 120, B: 120, A: 255}},
		{"(b) allowed", func(r admissionRow) latencies { return r.allowed }, color.RGBA{G: 140, B: 60, A: 255}},
		{"(b') allowed, back to back", func(r admissionRow) latencies { return r.allowedBackToBack }, color.RGBA{R: 220, G: 150, A: 255}},
		{"(c) denied", func(r admissionRow) latencies { return r.denied }, color.RGBA{R: 200, G: 40, A: 255}},
		{"(d) full LIST", func(r admissionRow) latencies { return r.listed }, color.RGBA{B: 200, A: 255}},
	}
	for _, rules := range benchRules {
		for _, s := range series {
			var pts plotter.XYs
			for _, r := range rows {
				if r.rules != rules {
					continue
				}
				x := float64(r.n)
				if x == 0 {
					x = 10
				}
				pts = append(pts, plotter.XY{X: x, Y: float64(s.pick(r).pct(.5)) / float64(time.Millisecond)})
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			line.Color = s.color
			line.Width = vg.Points(1.5)
			if rules != 1 {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("%s, %d rule(s)", s.name, rules), line)
		}
	}
	// Room above the highest line for the legend.
	p.Y.Max *= 12
	return p.Save(9*vg.Inch, 6*vg.Inch, file)
}
