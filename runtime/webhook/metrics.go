package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var rulesRegistered = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "depctrl_webhook_rules_registered",
	Help: "DependencyRules in the webhook's registry.",
})

func init() {
	metrics.Registry.MustRegister(rulesRegistered, confirmations)
}

var confirmations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "depctrl_webhook_rule_confirmations_total",
	Help: "Reads of a shard's rules that confirmed the registry current (outcome current), found it behind after waiting for the watch to catch up (behind), or could not read the shard (unread).",
}, []string{"outcome"})
