package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Phases of a run, as reported in metrics and in the "synced" log line.
const (
	phaseRead    = "read"    // listing rules, bindings and configurations
	phasePlan    = "plan"    // computing the desired state, exports read included
	phaseInstall = "install" // writing webhook and index configurations
	phaseStatus  = "status"  // writing the rules' statuses and Events
)

var syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "depctrl_controller_sync_duration_seconds",
	Help:    "Time of each phase of a run (read, plan, install, status): every run reads every rule and recomputes everything, so this grows with the rules.",
	Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
}, []string{"phase"})

// rulesUnread counts the rules the last run could not read what they need
// for (RulePlan.Unread), by what could not be read.
var rulesUnread = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "depctrl_controller_rules_unread",
	Help: "Rules for which the last run could not read what they need, by what: workspace (a dependency's workspace path, for a reason other than the workspace being gone; what is installed for the rule is kept) or export (an APIExport the rule names). Above 0 the controller is not ready.",
}, []string{"read"})

func init() {
	metrics.Registry.MustRegister(syncDuration, rulesUnread)
	for _, what := range []string{UnreadWorkspace, UnreadExport} {
		rulesUnread.WithLabelValues(what).Set(0)
	}
}

// phaseTimer times the phases of one run.
type phaseTimer struct {
	last  time.Time
	spent []any // key/value pairs for the log line
}

func newPhaseTimer() *phaseTimer { return &phaseTimer{last: time.Now()} }

// done ends phase: it is observed, and the next phase starts now.
func (p *phaseTimer) done(phase string) {
	now := time.Now()
	d := now.Sub(p.last)
	p.last = now
	syncDuration.WithLabelValues(phase).Observe(d.Seconds())
	p.spent = append(p.spent, phase, d)
}
