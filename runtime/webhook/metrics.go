package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

// Outcomes of an admission decision, as reported in metrics.
const (
	outcomeAllowed        = "allowed"
	outcomeDenied         = "denied"
	outcomeSkipped        = "skip_protection"
	outcomeNotInitialized = "not_initialized"
	outcomeError          = "error"
	outcomeBadRequest     = admission.OutcomeBadRequest
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
	rulesRegistered = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "depctrl_webhook_rules_registered",
		Help: "DependencyRules in the webhook's registry.",
	})
	indexRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_index_requests_total",
		Help: "Creates and updates of dependents seen by the reference index, by outcome: labelled (index labels set or changed), stripped (index labels removed: the type cannot be indexed), unchanged, refused (a new reference to an object being deleted), not_initialized, error, bad_request.",
	}, []string{"outcome"})
	indexLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "depctrl_webhook_index_duration_seconds",
		Help:    "Time to compute the index labels of one create or update.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1},
	})
	unindexedExamined = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "depctrl_webhook_unindexed_dependents_examined_total",
		Help: "Dependents read in full while deciding deletions because they carry no current index stamp (written before their rule or its index existed). Any write re-indexes them.",
	})
	reindexed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_reindex_total",
		Help: "Dependents found without a current index stamp and written again to index them, by outcome: written, gone (deleted meanwhile), forbidden (no patch permission in that workspace), failed, dropped (queue full).",
	}, []string{"outcome"})
	skipProtectionUses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_skip_protection_total",
		Help: "Deletions allowed because the object carried the skip-protection annotation, by resource.",
	}, []string{"resource"})
)

func init() {
	metrics.Registry.MustRegister(decisions, latency, objectsExamined, rulesRegistered, skipProtectionUses, indexRequests, indexLatency, unindexedExamined, reindexed)
}
