package decision

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Outcomes of an admission decision, as reported in metrics, besides
// those every handler reports (admission.Outcome...).
const (
	outcomeAllowed = "allowed"
	outcomeDenied  = "denied"
	outcomeSkipped = "skip_protection"
)

var (
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_decisions_total",
		Help: "Admission decisions by outcome.",
	}, []string{"outcome"})
	latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "depctrl_webhook_decision_duration_seconds",
		Help:    "Time to decide an admission request, by outcome.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"outcome"})
	objectsExamined = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "depctrl_webhook_dependents_examined_total",
		Help: "Dependent objects read while deciding deletions.",
	})
	unindexedExamined = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "depctrl_webhook_unindexed_dependents_examined_total",
		Help: "Dependents read in full while deciding deletions because they carry no current index stamp (written before their rule or its index existed). Any write re-indexes them.",
	})
	skipProtectionUses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_skip_protection_total",
		Help: "Deletions allowed because the object carried the skip-protection annotation, by resource.",
	}, []string{"resource"})
	deferredDeletions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_deferred_deletions_total",
		Help: "Deferred deletions by what became of them: recorded (a refused deletion deferred), carried_out (the object deleted once nothing referenced it), dropped (a record removed: its user may no longer delete the object, or it named another object), by resource.",
	}, []string{"outcome", "resource"})
)

// What became of a deferred deletion, as deferredDeletions counts it.
const (
	deferralRecorded   = "recorded"
	deferralCarriedOut = "carried_out"
	deferralDropped    = "dropped"
)

func init() {
	metrics.Registry.MustRegister(decisions, latency, objectsExamined, skipProtectionUses, unindexedExamined, deferredDeletions)
}
