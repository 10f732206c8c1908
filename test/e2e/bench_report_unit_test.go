package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// updateGolden rewrites the golden files instead of comparing with them;
// so does DEPCTRL_UPDATE_GOLDEN=1.
var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

const benchmarkPageGolden = "testdata/benchmarks.golden.md"

// spread is n latencies from base, step apart, in reverse order so that
// pct has to sort them.
func spread(base, step time.Duration, n int) latencies {
	l := make(latencies, n)
	for i := range l {
		l[i] = base + time.Duration(n-1-i)*step
	}
	return l
}

// syntheticConcurrency is the concurrency benchmark's cells, shaped as
// measureConcurrency fills them: the popular object slower as writers
// grow, a refusal in one cell.
func syntheticConcurrency() concurrencyResults {
	var res concurrencyResults
	for i, w := range concurrencyWriters {
		for j, s := range concurrencyScenarios {
			c := concurrencyCell{scenario: s, writers: w, creates: concurrencyCreates,
				took:      time.Duration(2000+300*i+700*i*j) * time.Millisecond,
				latencies: spread(time.Duration(8+3*w+5*i*j)*time.Millisecond, time.Duration(1+j)*time.Millisecond, concurrencyCreates)}
			if s == scenarioOne && w == 32 {
				c.refused, c.firstRefusal = 1, "cannot record on vpcs/hot: context deadline exceeded"
			}
			res.cells = append(res.cells, c)
		}
	}
	return res
}

// syntheticBenchResults fills every field of benchResults with plausible,
// distinct values, shaped as TestBenchmark fills them.
func syntheticBenchResults() benchResults {
	us := time.Microsecond
	var rows []admissionRow
	var settled []settledRow
	var memByN []string
	for i, n := range benchSizes {
		for _, r := range benchRules {
			d := time.Duration(n) * us
			k := time.Duration(i*10+r) * 10 * us
			rows = append(rows, admissionRow{
				n: n, rules: r,
				floor:             spread(4100*us+d/20+k, 37*us, benchTrials),
				allowed:           spread(6300*us+d/3+k, 53*us, benchTrials),
				allowedBackToBack: spread(52*time.Millisecond+d/3+k, 211*us, benchTrials),
				denied:            spread(7900*us+d+k, 61*us, benchTrials),
				listed:            spread(5*time.Millisecond+8*d+k, 97*us, benchTrials),
				inWebhook:         2700*us + d/7 + k,
				examined:          float64(r-1) * 0.4,
			})
		}
		d := time.Duration(n) * us
		settled = append(settled, settledRow{
			n:            n,
			floor:        spread(4200*us+d/50, 31*us, benchTrials),
			floorAgain:   spread(3900*us+d/50, 29*us, benchTrials),
			settled:      spread(4300*us+d/40, 33*us, benchTrials),
			settledAgain: spread(4100*us+d/40, 27*us, benchTrials),
			young:        spread(6800*us+d/3, 47*us, benchTrials),
			youngAgain:   spread(51*time.Millisecond+d/3, 190*us, benchTrials),
			oldest:       2300*time.Millisecond + time.Duration(i)*170*time.Millisecond,
		})
		memByN = append(memByN, []string{"31 MiB", "33 MiB", "38 MiB", "47 MiB"}[i])
	}
	return benchResults{
		rows: rows,
		settled: settleResults{
			rows: settled,
			teardown: teardownResult{
				floor: 4310 * time.Millisecond, settled: 4780 * time.Millisecond, young: 9120 * time.Millisecond,
				floorNamespace: 6400 * time.Millisecond, namespace: 6150 * time.Millisecond,
			},
			writes: writeResult{
				noRule:   spread(4400*us, 41*us, writeTrials),
				recorded: spread(9700*us, 83*us, writeTrials),
				first:    spread(11200*us, 97*us, writeTrials),
				later:    spread(5600*us, 44*us, writeTrials),
			},
		},
		concurrency: syntheticConcurrency(),
		sweep: sweepResult{objects: 100000, annotation: 2048, quiet: 10, created: 7*time.Minute + 12*time.Second,
			quietSettled: 97 * time.Second, allSettled: 9*time.Minute + 40*time.Second, walked: 14, peak: "131 MiB"},
		churn: churnResult{floor: map[string]latencies{"quiet": spread(7400*us, 90*us, churnBatch), "removed": spread(7000*us, 90*us, churnBatch),
			"added": spread(7100*us, 80*us, churnBatch), "ready": spread(7200*us, 70*us, churnBatch)}, quiet: spread(6700*us, 40*us, churnBatch),
			removed: spread(7400*us, 170*us, churnBatch), added: spread(7500*us, 60*us, churnBatch), ready: spread(7000*us, 50*us, churnBatch),
			removedWithin: 400 * time.Millisecond, addedWithin: 600 * time.Millisecond, readyWithin: 47 * time.Second, readyAfter: 47 * time.Second},
		deferred: deferredResult{deferredTeardown: deferredTeardown{after: spread(600*time.Millisecond, 20*time.Millisecond, 40),
			afterNamespace: spread(900*time.Millisecond, 30*time.Millisecond, 35), deferred: 40, took: 41 * time.Second}},
		fresh: freshnessResult{
			afterWrite:        spread(101*time.Millisecond, 430*us, benchTrials),
			afterWriteSettled: spread(3600*us, 71*us, benchTrials),
			quiet:             spread(2100*us, 23*us, benchTrials),
			cached:            spread(1700*us, 19*us, benchTrials),
			shardSettled:      spread(2500*us, 59*us, benchTrials),
			shardCached:       spread(900*us, 13*us, benchTrials),
		},
		paging: pagingResult{
			dependents:   10001,
			defaultPages: spread(412*time.Millisecond, 3100*us, 10),
			oneResponse:  spread(365*time.Millisecond, 2900*us, 10),
			paged:        spread(398*time.Millisecond, 3300*us, 10),
		},
		idx: indexingResult{
			created: 10000, createTook: 41730 * time.Millisecond,
			sum: 13.7, count: 11250,
			reindexed: 1000, reindexTook: 4600 * time.Millisecond,
			selfReindexed: 10000, selfReindexTook: 37400 * time.Millisecond,
		},
		conv: convergenceResult{
			create: spread(820*time.Millisecond, 17*time.Millisecond, 10),
			edit:   spread(310*time.Millisecond, 9*time.Millisecond, 10),
			remove: spread(290*time.Millisecond, 11*time.Millisecond, 10),
		},
		convMany: convergenceResult{
			create: spread(1900*time.Millisecond, 43*time.Millisecond, 10),
			edit:   spread(330*time.Millisecond, 12*time.Millisecond, 10),
			remove: spread(305*time.Millisecond, 14*time.Millisecond, 10),
		},
		many: manyRulesResult{
			dependents: 10001, first: 2870 * time.Millisecond, firstRead: 10001, reindexTook: 38200 * time.Millisecond,
			floor:     spread(4500*us, 39*us, benchTrials),
			allowed:   spread(11900*us, 87*us, benchTrials),
			denied:    spread(9300*us, 73*us, benchTrials),
			inWebhook: 6100 * us, examined: 0.2,
		},
		ready:      3270 * time.Millisecond,
		allReady:   113400 * time.Millisecond,
		registered: "1001",
		mem:        map[string]string{"controller": "96 MiB", "webhook": "52 MiB", "webhook-restarted": "58 MiB", "webhook-many": "121 MiB"},
		memByN:     memByN,
		tf: terraformScale{
			applyBase: 24300 * time.Millisecond, applyRules: 48700 * time.Millisecond,
			plan: 7900 * time.Millisecond, destroy: 31200 * time.Millisecond,
			baseResources: 47, ruleResources: 100, shards: 2,
		},
	}
}

// TestBenchmarkPage renders the benchmarks page from synthetic results and
// compares it with its golden file, so that changes to how the page is
// written show in review. It needs no environment. Update the golden with
// go test -run TestBenchmarkPage ./test/e2e/ -update.
func TestBenchmarkPage(t *testing.T) {
	run := benchRun{cpus: 16, goos: "linux", goarch: "amd64", date: time.Date(2026, 3, 14, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*60*60))}
	got := renderBenchmarkPage(syntheticBenchResults(), run)
	if *updateGolden || os.Getenv("DEPCTRL_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(benchmarkPageGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(benchmarkPageGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", benchmarkPageGolden)
		return
	}
	want, err := os.ReadFile(benchmarkPageGolden)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if got != string(want) {
		t.Errorf("the page differs from %s (rewrite it with -update if the change is intended):\n%s", benchmarkPageGolden, firstDifference(string(want), got))
	}
}

// TestSettledSection renders the settled-objects section alone, as make
// bench-settled logs it: it is the page's section to the letter, and its
// write-path paragraph says whether the target can be met at all, by the
// bound that recording a reference costs with no rule.
func TestSettledSection(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		name     string
		recorded latencies // against the synthetic noRule, 6.4 ms at p50
		want     []string
		notWant  string
	}{
		{
			name:     "bound beyond the target",
			recorded: spread(9700*us, 83*us, writeTrials),
			want:     []string{"**The write-path target (1.30) is blocked on this machine.**", "is 2.15× the create alone", "admitted: 13.8 / 17.8 (2.15).\n"},
			notWant:  "is within the target",
		},
		{
			name:     "bound within the target",
			recorded: spread(5300*us, 41*us, writeTrials),
			want:     []string{"\n\nThe bound (1.14) is within the target (1.30): what the webhook adds beyond its patch is the lever", "admitted: 7.3 / 9.3 (1.14).\n"},
			notWant:  "blocked",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := syntheticBenchResults().settled
			res.writes.recorded = tc.recorded
			got := res.section()
			if !strings.HasPrefix(got, "## Settled objects\n\nDeletes among N dependents, p50 / p99 in milliseconds over 25 trials:") || !strings.HasSuffix(got, ".\n") {
				t.Errorf("the section does not start with its heading and end with one newline:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the section lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, tc.notWant) {
				t.Errorf("the section says %q:\n%s", tc.notWant, got)
			}
			for _, row := range []string{"| 0 | 4.6 / 4.9 |", "| 10000 | 4.8 / 5.1 |", "| 2.24 | 12.73 |\n\nTearing down 1000 objects"} {
				if !strings.Contains(got, row) {
					t.Errorf("the section lacks %q:\n%s", row, got)
				}
			}
		})
	}
	t.Run("as on the page", func(t *testing.T) {
		page := renderBenchmarkPage(syntheticBenchResults(), benchRun{})
		section := syntheticBenchResults().settled.section()
		if !strings.Contains(page, "\n"+section+"\n## Settling what exists\n") {
			t.Errorf("the page does not hold the section as rendered alone, followed by a blank line and the next section:\n%s", section)
		}
	})
}

// TestSweepSection renders the settling-what-exists section alone, as make
// bench-sweep logs it: each target with its verdict, met or missed by how
// much, and the section as it is on the page.
func TestSweepSection(t *testing.T) {
	base := syntheticBenchResults().sweep
	for _, tc := range []struct {
		name string
		res  func(sweepResult) sweepResult
		want []string
	}{
		{name: "both met", res: func(r sweepResult) sweepResult { return r },
			want: []string{"| the 10 quiet VPCs | 1m37s | 2m0s: met |", "| all 100000 VPCs of the one namespace | 9m40s (5.8ms an object) | |", "131 MiB (target 150 MiB: met)"}},
		{name: "both missed", res: func(r sweepResult) sweepResult {
			r.quietSettled, r.peak = 2*time.Minute+20*time.Second, "170 MiB"
			return r
		}, want: []string{"| 2m0s: **missed** by 20s |", "170 MiB (target 150 MiB: **missed** by 20 MiB)"}},
		{name: "memory unknown", res: func(r sweepResult) sweepResult {
			r.peak = "unknown"
			return r
		}, want: []string{"unknown (target 150 MiB: not measured)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.res(base).section()
			if !strings.HasPrefix(got, "## Settling what exists\n\n") || !strings.HasSuffix(got, ".\n") {
				t.Errorf("the section does not start with its heading and end with one newline:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the section lacks %q:\n%s", w, got)
				}
			}
		})
	}
	t.Run("as on the page", func(t *testing.T) {
		page := renderBenchmarkPage(syntheticBenchResults(), benchRun{})
		if section := base.section(); !strings.Contains(page, "\n"+section+"\n## Many writers at once\n") {
			t.Errorf("the page does not hold the section as rendered alone, followed by a blank line and the next section:\n%s", section)
		}
	})
}

// TestConcurrencySection renders the many-writers section alone, as make
// bench-concurrency logs it: each scenario next to the same writers with no
// reference, every target with its verdict, a refusal quoted, and the
// section as it is on the page.
func TestConcurrencySection(t *testing.T) {
	res := syntheticConcurrency()
	got := res.section()
	for _, w := range []string{
		"## Many writers at once\n",
		"| all one VPC | 32 | ",
		"| 1 000 VPCs | 1 | ",
		"1 (target 0: **missed**)",
		"- refused: all one VPC, 32 writers: cannot record on vpcs/hot: context deadline exceeded",
		"(target 0.80: ",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the section lacks %q:\n%s", w, got)
		}
	}
	if n := strings.Count(got, "| no reference |"); n != len(concurrencyWriters) {
		t.Errorf("%d rows with no reference, want one per number of writers:\n%s", n, got)
	}
	page := renderBenchmarkPage(syntheticBenchResults(), benchRun{})
	if !strings.Contains(page, "\n"+got+"\n## Rule churn\n") {
		t.Errorf("the page does not hold the section as rendered alone, followed by a blank line and the next section:\n%s", got)
	}
}

// firstDifference shows the first line where got differs from want.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d:\nwant: %s\ngot:  %s", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("want %d lines, got %d", len(w), len(g))
}

// TestDeferredSection renders the deferred deletion section alone, as make
// bench-deferred logs it: the page's section to the letter, with the
// target judged.
func TestDeferredSection(t *testing.T) {
	res := syntheticBenchResults()
	got := res.deferred.section()
	for _, w := range []string{
		"A tenant of 100 VPCs and 1000 VMs",
		"| 40, deleted object by object | 0.98 | 1.36 | 1.38 |",
		"| 35, in the namespace deleted whole |",
		"Target p99 ≤ 2 s after the last dependent, object by object: met: 1.36s ≤ 2s.",
		"The teardown took 41s",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the section lacks %q:\n%s", w, got)
		}
	}
	slow := res.deferred
	slow.after = spread(3*time.Second, 100*time.Millisecond, 40)
	slow.afterNamespace = nil
	if s := slow.section(); !strings.Contains(s, "**missed** by") || !strings.Contains(s, "| 0, in the namespace deleted whole | – | – | |") {
		t.Errorf("a p99 above 2 s is not reported missed, or no VPC deferred in the namespace shows figures:\n%s", s)
	}
	page := renderBenchmarkPage(res, benchRun{})
	if !strings.Contains(page, "\n"+got+"\n## Convergence\n") {
		t.Errorf("the page does not hold the section as rendered alone, followed by a blank line and the next section:\n%s", got)
	}
}

// TestVerdict: a target is met or missed, and a miss says by how much,
// also when it is too small for two decimals.
func TestVerdict(t *testing.T) {
	for _, tt := range []struct {
		got, target   float64
		lowerIsBetter bool
		want          string
	}{
		{1.08, 1.10, true, "1.08 (target 1.10: met)"},
		{1.10, 1.10, true, "1.10 (target 1.10: met)"},
		{1.105, 1.10, true, "1.105 (target 1.10: **missed** by 0.5%)"},
		{1.32, 1.10, true, "1.32 (target 1.10: **missed** by 20%)"},
		{0.44, 0.80, false, "0.44 (target 0.80: **missed** by 45%)"},
		{0.81, 0.80, false, "0.81 (target 0.80: met)"},
	} {
		if got := verdict(tt.got, tt.target, tt.lowerIsBetter); got != tt.want {
			t.Errorf("verdict(%v, %v, %v) = %q, want %q", tt.got, tt.target, tt.lowerIsBetter, got, tt.want)
		}
	}
}
