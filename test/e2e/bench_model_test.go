package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// The installation the page's scale model sizes (the issue's: 10 shards,
// 100 000 workspaces, 10⁶ dependents, 1 000 rules changing at one a
// minute), and the assumptions the page states beside it. The page's prose
// says "once an hour" and "one a minute": change it with modelWriteEvery
// and modelChangeEvery.
const (
	modelShards     = 10
	modelWorkspaces = 100_000
	modelDependents = 1_000_000
	// modelSkewed is the dependents of the one crowded namespace.
	modelSkewed = 10_000
	modelRules  = 1000
	// modelPerProtected is how many dependents there are per protected
	// object.
	modelPerProtected = 10
	modelChangeEvery  = time.Minute
	// modelWriteEvery is how often each dependent is written.
	modelWriteEvery = time.Hour
	// modelReplicas is the webhook's replicas, depctrl_runtime's default.
	modelReplicas = 2
	// modelPlaceBytes is what one place the settler knows is assumed to
	// take of a replica's memory: a map entry and its strings. The run has
	// one consumer namespace, so it does not measure it.
	modelPlaceBytes = 300
	// modelTargetMiB is the peak RSS target of the memory table.
	modelTargetMiB = 150
	// modelStampHold is how long the controller holds a new stamp before
	// it publishes it (runtime/controller's stampHold), modelMarkRenewal
	// how often a replica renews a mark of references to missing objects
	// at most (runtime/settle's renewEvery): both unexported.
	modelStampHold   = 10 * time.Second
	modelMarkRenewal = 20 * time.Second
)

// modelPairs are the numbers K of pairs of a dependent and a protected type
// the model spreads the rules over: K = 1 is the run's shape.
var modelPairs = []int{1, 10, 100}

// modelView is the scale model: the installation, the assumptions, and
// every figure derived from the run's.
type modelView struct {
	Shards, Workspaces, WorkspacesPerShard, Dependents string
	PerWorkspace, Skewed, PerProtected, Protected      string
	ProtectedPerWorkspace, Rules                       string
	WriteRate, WriteRatePerShard                       string
	Replicas, PlaceBytes, CPUs                         int
	Registered                                         string

	// Per write.
	NoRuleMs, FirstMs, FirstVsNoRule, LaterMs, LaterVsNoRule string
	ReindexedOne, ReindexedMany                              string
	ReindexOneTook, ReindexManyTook                          string
	RateOne, RateMany, PathsFactor                           string
	Created, CreateTook, CreateRate, IndexMean               string
	CapacityMany, ReplicasFor, ReplicasNeeded                string

	// Per delete: the rows of the model's N (or the nearest above).
	AvgN, SettledAvgN, SkewN                             string
	SettledAvg, SettledSkew, AllowedAvg, AllowedSkew     string
	BackToBackAvg, BackToBackSkew, DeniedAvg, DeniedSkew string
	UnindexedPer, UnindexedPerMany                       string
	UnindexedAvg, UnindexedAvgMany                       string
	UnindexedSkew, UnindexedSkewMany                     string
	SettledAvgVsFloor, AllowedAvgVsFloor                 string
	BackToBackAvgVsFloor                                 string
	ManyAllowedMs, ManyDeniedMs, ManyDependents          string
	TeardownObjects                                      int
	TeardownFloor, TeardownSettled, TeardownYoung        string
	TeardownSettledVsFloor, TeardownYoungVsFloor         string
	ConvCreateP50Ms, ConvCreateP99Ms, ControllerShare    string
	ReadyMs, AllReady, ReadyRate                         string
	Hold, SettleAfter, Unsettled, SettleRate             string
	Churn                                                []churnView
	SkewReindexOne, SkewReindexMany                      string

	// Memory.
	Restarted, Baseline, PerRule, PageMem, PageSize, BigN string
	Many, Places, PlacesMem, Total, Target, Headroom      string
	HeadroomPlaces, PlacesPerShard, Controller            string
	MarkRenewal, MarkRate                                 string
}

// churnView is one K of the rule-churn table.
type churnView struct {
	K                                 int
	Every, Objects, Resettle, Settled string
	Dependents, Reindex               string
}

// grouped prints n with its thousands apart, as the page's prose does.
func grouped(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// about prints a duration the model derives, to the precision it can
// tell: milliseconds or seconds as the page's tables print them, minutes
// and seconds beyond a minute.
func about(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return secs(d)
	default:
		return ms(d) + " ms"
	}
}

// perSecond is n things in d, as a rate.
func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return math.NaN()
	}
	return n / d.Seconds()
}

// mib reads a peak RSS as peakRSS prints it.
func mib(s string) (float64, bool) {
	var v float64
	if _, err := fmt.Sscanf(s, "%g MiB", &v); err != nil {
		return 0, false
	}
	return v, true
}

// rowAtLeast is the admission row of rules with the fewest dependents
// that are at least n: the cost grows with N, so it bounds the cost at n.
func rowAtLeast(rows []admissionRow, rules, n int) admissionRow {
	var best admissionRow
	found := false
	for _, r := range rows {
		if r.rules == rules && r.n >= n && (!found || r.n < best.n) {
			best, found = r, true
		}
	}
	return best
}

// settledAtLeast is the settled row with the fewest dependents that are at
// least n.
func settledAtLeast(rows []settledRow, n int) settledRow {
	var best settledRow
	found := false
	for _, r := range rows {
		if r.n >= n && (!found || r.n < best.n) {
			best, found = r, true
		}
	}
	return best
}

// scaleModel derives the scale model from the run's results.
func scaleModel(res benchResults, run benchRun) modelView {
	perWorkspace := modelDependents / modelWorkspaces
	protected := modelDependents / modelPerProtected
	writeRate := float64(modelDependents) / modelWriteEvery.Seconds()
	v := modelView{
		Shards: grouped(modelShards), Workspaces: grouped(modelWorkspaces), WorkspacesPerShard: grouped(modelWorkspaces / modelShards),
		Dependents: grouped(modelDependents), PerWorkspace: grouped(perWorkspace), Skewed: grouped(modelSkewed),
		PerProtected: grouped(modelPerProtected), Protected: grouped(protected),
		ProtectedPerWorkspace: fmt.Sprintf("%g", float64(protected)/modelWorkspaces), Rules: grouped(modelRules),
		WriteRate: fmt.Sprintf("%.0f", writeRate), WriteRatePerShard: fmt.Sprintf("%.0f", writeRate/modelShards),
		Replicas: modelReplicas, PlaceBytes: modelPlaceBytes, CPUs: run.cpus, Registered: res.registered,
	}

	// Per write.
	w := res.settled.writes
	v.NoRuleMs, v.FirstMs, v.LaterMs = ms(w.noRule.pct(.5)), ms(w.first.pct(.5)), ms(w.later.pct(.5))
	v.FirstVsNoRule, v.LaterVsNoRule = f2(ratio(w.first.pct(.5), w.noRule.pct(.5))), f2(ratio(w.later.pct(.5), w.noRule.pct(.5)))
	idx, many := res.idx, res.many
	rateOne := perSecond(float64(idx.selfReindexed), idx.selfReindexTook)
	rateMany := perSecond(many.firstRead, many.reindexTook)
	paths := rateOne / rateMany
	createRate := perSecond(float64(idx.created), idx.createTook)
	capacity := createRate / paths
	replicasFor := writeRate / capacity
	v.ReindexedOne, v.ReindexedMany = grouped(idx.selfReindexed), grouped(int(many.firstRead))
	v.ReindexOneTook, v.ReindexManyTook = idx.selfReindexTook.Round(time.Second).String(), many.reindexTook.Round(time.Second).String()
	v.RateOne, v.RateMany, v.PathsFactor = fmt.Sprintf("%.0f", rateOne), fmt.Sprintf("%.0f", rateMany), f2(paths)
	v.Created, v.CreateTook, v.CreateRate = grouped(idx.created), idx.createTook.Round(100*time.Millisecond).String(), fmt.Sprintf("%.0f", createRate)
	v.IndexMean = idx.mean().Round(10 * time.Microsecond).String()
	v.CapacityMany, v.ReplicasFor = fmt.Sprintf("%.0f", capacity), fmt.Sprintf("%.1f", replicasFor)
	v.ReplicasNeeded = "unknown"
	if !math.IsNaN(replicasFor) && !math.IsInf(replicasFor, 0) {
		v.ReplicasNeeded = strconv.Itoa(int(math.Ceil(replicasFor)))
	}

	// Per delete.
	avg, skew := rowAtLeast(res.rows, 1, perWorkspace), rowAtLeast(res.rows, 1, modelSkewed)
	sAvg, sSkew := settledAtLeast(res.settled.rows, perWorkspace), settledAtLeast(res.settled.rows, modelSkewed)
	v.AvgN, v.SkewN, v.SettledAvgN = grouped(avg.n), grouped(skew.n), grouped(sAvg.n)
	v.SettledAvg, v.SettledSkew = ms(sAvg.settled.pct(.5)), ms(sSkew.settled.pct(.5))
	v.AllowedAvg, v.AllowedSkew = ms(avg.allowed.pct(.5)), ms(skew.allowed.pct(.5))
	v.BackToBackAvg, v.BackToBackSkew = ms(avg.allowedBackToBack.pct(.5)), ms(skew.allowedBackToBack.pct(.5))
	v.DeniedAvg, v.DeniedSkew = ms(avg.denied.pct(.5)), ms(skew.denied.pct(.5))
	unindexedPer := time.Duration(0)
	if res.paging.dependents > 0 {
		unindexedPer = res.paging.defaultPages.pct(.5) / time.Duration(res.paging.dependents)
	}
	unindexedPerMany := time.Duration(0)
	if many.firstRead > 0 {
		unindexedPerMany = time.Duration(float64(many.first) / many.firstRead)
	}
	v.UnindexedPer, v.UnindexedPerMany = unindexedPer.Round(100*time.Nanosecond).String(), unindexedPerMany.Round(100*time.Nanosecond).String()
	v.UnindexedAvg, v.UnindexedAvgMany = about(unindexedPer*time.Duration(perWorkspace)), about(unindexedPerMany*time.Duration(perWorkspace))
	v.UnindexedSkew, v.UnindexedSkewMany = about(unindexedPer*modelSkewed), about(unindexedPerMany*modelSkewed)
	v.SettledAvgVsFloor = f2(ratio(sAvg.settled.pct(.5), sAvg.floor.pct(.5)))
	v.AllowedAvgVsFloor = f2(ratio(avg.allowed.pct(.5), avg.floor.pct(.5)))
	v.BackToBackAvgVsFloor = f2(ratio(avg.allowedBackToBack.pct(.5), avg.floor.pct(.5)))
	v.ManyAllowedMs, v.ManyDeniedMs, v.ManyDependents = ms(many.allowed.pct(.5)), ms(many.denied.pct(.5)), grouped(many.dependents)
	td := res.settled.teardown
	v.TeardownObjects = teardownSize
	v.TeardownFloor, v.TeardownSettled, v.TeardownYoung = secs(td.floor), secs(td.settled), secs(td.young)
	v.TeardownSettledVsFloor, v.TeardownYoungVsFloor = f2(ratio(td.settled, td.floor)), f2(ratio(td.young, td.floor))

	// Per rule change.
	v.ConvCreateP50Ms, v.ConvCreateP99Ms = ms(res.convMany.create.pct(.5)), ms(res.convMany.create.pct(.99))
	// Two runs a minute: the change's and the periodic one.
	v.ControllerShare = fmt.Sprintf("%.1f%%", 100*2*ratio(res.convMany.create.pct(.5), modelChangeEvery))
	v.ReadyMs, v.AllReady = ms(res.ready), secs(res.allReady)
	v.ReadyRate = fmt.Sprintf("%.1f", perSecond(modelRules, res.allReady))
	unsettled := modelStampHold + settle.DefaultSettleAfter
	settleRate := modelReplicas * rateOne
	v.Hold, v.SettleAfter, v.Unsettled = modelStampHold.String(), settle.DefaultSettleAfter.String(), unsettled.String()
	v.SettleRate = fmt.Sprintf("%.0f", settleRate)
	for _, k := range modelPairs {
		every := time.Duration(k) * modelChangeEvery
		objects, dependents := protected/k, modelDependents/k
		resettle := time.Duration(float64(objects) / settleRate * float64(time.Second))
		reindex := time.Duration(float64(dependents) / settleRate * float64(time.Second))
		settled := "never"
		if quiet := every - unsettled - resettle; quiet > 0 {
			settled = fmt.Sprintf("%.0f%% of the time", 100*ratio(quiet, every))
		}
		v.Churn = append(v.Churn, churnView{
			K: k, Every: fmt.Sprintf("%.0f min", every.Minutes()), Objects: grouped(objects), Resettle: about(resettle), Settled: settled,
			Dependents: grouped(dependents), Reindex: about(reindex),
		})
	}
	v.SkewReindexOne = about(time.Duration(float64(modelSkewed) / rateOne * float64(time.Second)))
	v.SkewReindexMany = about(time.Duration(float64(modelSkewed) / rateMany * float64(time.Second)))

	// Memory.
	mem := res.mem
	v.Restarted, v.Many, v.Controller = mem["webhook-restarted"], mem["webhook-many"], mem["controller"]
	v.PageSize = grouped(decision.DefaultPageSize)
	v.Target = fmt.Sprintf("%d MiB", modelTargetMiB)
	places := protected
	if protected > modelWorkspaces {
		// One place per workspace and type: at most the workspaces for
		// one protected type.
		places = modelWorkspaces
	}
	placesMiB := float64(places) * modelPlaceBytes / (1 << 20)
	v.Places, v.PlacesMem = grouped(places), fmt.Sprintf("%.0f MiB", placesMiB)
	v.PlacesPerShard = grouped(places / modelShards)
	v.Baseline, v.PerRule, v.PageMem, v.BigN, v.Total, v.Headroom, v.HeadroomPlaces = "unknown", "unknown", "unknown", "unknown", "unknown", "unknown", "unknown"
	registered, _ := strconv.Atoi(res.registered)
	if len(res.memByN) == len(benchSizes) {
		v.Baseline, v.BigN = res.memByN[0], grouped(benchSizes[len(benchSizes)-1])
		base, ok0 := mib(res.memByN[0])
		big, ok1 := mib(res.memByN[len(res.memByN)-1])
		if ok0 && ok1 {
			v.PageMem = fmt.Sprintf("%.0f MiB", big-base)
		}
		if restarted, ok := mib(mem["webhook-restarted"]); ok && ok0 && registered > 0 {
			v.PerRule = fmt.Sprintf("%.0f KiB", (restarted-base)*1024/float64(registered))
		}
	}
	if m, ok := mib(mem["webhook-many"]); ok {
		v.Total = fmt.Sprintf("%.0f MiB", m+placesMiB)
		v.Headroom = fmt.Sprintf("%.0f MiB", modelTargetMiB-m)
		// Rounded to a thousand: the bytes of a place are assumed.
		v.HeadroomPlaces = grouped(1000 * int(math.Round(max(modelTargetMiB-m, 0)*(1<<20)/modelPlaceBytes/1000)))
	}
	v.MarkRenewal = modelMarkRenewal.String()
	v.MarkRate = grouped(int(float64(modelWorkspaces) / modelMarkRenewal.Seconds()))
	return v
}
