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
	metrics.Registry.MustRegister(rulesRegistered)
}
