package index

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	indexRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_index_requests_total",
		Help: "Creates and updates of dependents seen by the reference index, by outcome: labelled (index labels set or changed), stripped (index labels removed: the type cannot be indexed), unchanged, refused (a new reference to an object being deleted), not_initialized, error, bad_request.",
	}, []string{"outcome"})
	indexLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "depctrl_webhook_index_duration_seconds",
		Help:    "Time to compute the index labels of one create or update.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1},
	})
	reindexed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "depctrl_webhook_reindex_total",
		Help: "Dependents found without a current index stamp and written again to index them, by outcome: written, gone (deleted meanwhile), forbidden (no patch permission in that workspace), failed, dropped (queue full).",
	}, []string{"outcome"})
)

func init() {
	metrics.Registry.MustRegister(indexRequests, indexLatency, reindexed)
}
